"""Benchmark suite of sklearn_ggn.

Run from the repository root::

    python -m benchmarks --quick          # under ~5 minutes on 2 cores
    python -m benchmarks --full           # longer, more repeats and points
    python -m benchmarks --quick --only step_cost scaling
    python -m benchmarks --quick --wait-load 1.0   # wait for a quiet machine

Each benchmark writes ``results/<name>_<mode>.md`` (tables, load report,
machine stamp), ``.png`` plot(s) and ``.json`` raw numbers; the run writes
``results/summary_<mode>.md``. Times are medians over repeats and every ratio
is measured within one run. Nothing here asserts speed: the tests never do.

Benchmarks (numbered as in the performance issue):

1. ``step_cost`` — one full-batch step against the BLAS syrk floor.
2. ``time_to_accuracy`` — GGN-SCORE vs MLPRegressor (lbfgs, adam) and GD.
3. ``mnist_epoch`` — one epoch at the paper's MNIST scale vs MLPClassifier
   (needs the MNIST files; skipped otherwise).
4. ``uci`` — pendigits, letter, avila with the paper's appendix settings:
   GGN-SCORE vs GD (same mini-batches) and MLPClassifier, accuracy and time
   (needs the UCI files; skipped otherwise).
6. ``startup`` — numba compile time and first-fit overhead.
7. ``grid_search`` — GridSearchCV over mu × tau on pendigits: ``n_jobs=1``
   vs ``n_jobs=2`` (loky) vs a local ``dask.distributed`` cluster (needs
   the pendigits files; dask part skipped without ``distributed``).
8. ``scaling`` — step time against m and n, dual vs primal, the auto choice.
9. ``sparse_input`` — time and peak memory of a fit on a CSR matrix (20 000
   features, 1 % density) against its densified copy.

10. ``row_cost`` — cost per training row of a default epoch against an MLP
    epoch over a grid of input dimension, classes and width.
11. ``float32`` — the same default epochs and fits in float32 and float64
    (the panel's real data when found via ``SKLEARN_GGN_DATA``, generated
    data otherwise).

12. ``uncertainty`` — predictive std of the regressor (coverage, NLL, RMSE
    against an MLP with a plug-in std), the classifier's probit
    probabilities (log-loss, calibration error) and the evidence over τ.
    ``python -m benchmarks.uncertainty --uci --data-home DIR`` runs the UCI
    regression benchmark of predictive uncertainty (the sets' fixed 90/10
    splits; RMSE, Gaussian NLL, 95 % coverage) against the MLP plug-in, a
    GP, NGBoost and the published MC dropout and deep-ensemble numbers.

Standalone:

* ``python -m benchmarks.robust`` — the first ``return_std`` call's cost
  against the fit's, and Huber against squared error on UCI sets with 5 %
  of the training targets corrupted.
* ``python -m benchmarks.model_files`` — the bytes of a fitted estimator's
  pickle and skops file: the default, ``store_posterior=True`` and
  ``uncertainty=None``.

Peer comparison:

* ``pyscsopt_peer`` — one full-batch step against the authors' Python package
  ``pyscsopt`` (``ProxGGNSCORE``): agreement, time and peak memory (needs
  ``pip install pyscsopt``; skipped otherwise).
"""

BENCHMARKS = ("step_cost", "time_to_accuracy", "mnist_epoch", "uci", "startup",
              "grid_search", "scaling", "sparse_input", "pyscsopt_peer",
              "row_cost", "float32", "uncertainty")
