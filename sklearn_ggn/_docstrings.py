"""The parts of the estimators' docstrings they share: the parameters and
attributes of both, the objective and the references."""

PARAMETERS = """
    n_hidden : int, default=100
        Number of hidden units n.

    activation : {"silu", "relu", "tanh", "sigmoid", "softplus", "identity"}, \
            default="silu"
        Hidden activation ρ (``"identity"`` makes the network linear in X).

    scaling : {"ntk", "mean_field"} or float, default="ntk"
        Output scaling κ(n): ``1/sqrt(n)`` (``"ntk"``, the paper's), ``1/n``
        (``"mean_field"``) or the given positive float.

    fit_intercept : bool, default=True
        Whether to learn a hidden bias ``b_h`` and an output bias ``b_o``
        (regularized like every other parameter).

    regularizer : {"pseudo_huber", "ostrovskii_bach", "l2"}, \
            default="pseudo_huber"
        The smoothed penalty ḡ_μ; ``"pseudo_huber"`` is the paper's.

    mu : float or "auto", default="auto"
        Smoothing μ > 0 of the ℓ1 smoothers (unused by ``"l2"``): the
        penalty is ℓ1-like for ``|θ_i| ≫ μ`` and quadratic below. A small μ
        makes the step size ``α = ᾱ / (1 + M_g η)`` collapse, a very large
        one makes the penalty a ridge. ``"auto"`` is ``1/κ(n)`` (√n with the
        NTK scaling), the paper's recommended ``c/κ(n)`` with c = 1. Tune it
        with ``tau`` by ``GridSearchCV`` (e.g. ``0.1·√n`` to ``10·√n``).
        See :ref:`default-mu`.

    tau : float, "auto", "evidence" or "gcv", default="auto"
        Strength τ ≥ 0 of the penalty ``τ Σ ḡ_μ(θ_i)``. ``"auto"``:
        ``max(1e-4, 1/n_samples)`` on mini-batches (1e-4 for
        ``partial_fit``); in full batch ``min(0.01, 10/n_samples)``, which
        the squared-error regressor refines in two stages (sample weights
        count as rows): the generalized cross-validation (GCV) of the
        problem linearized at the initial weights chooses a first τ
        (``tau_path_``), then the fit climbs the Laplace evidence of the
        *fitted* network from there, refitting at τ·√10 (or τ/√10)
        warm-started while the evidence rises
        (``tau_path_["evidence_path"]``; within 1e-6 to 1; fresh fits
        whose first solve did not diverge, without ``early_stopping=True``
        or scikit-learn callbacks).
        ``"gcv"``: the first stage alone (one fit, a few times faster,
        worse on small noisy tables). ``"evidence"``: the same as
        ``"auto"``. The value used is ``tau_``. Typical range 1e-6 to
        1e-1. See :ref:`default-tau`.

    step_size : float, default=0.95
        ᾱ in ``α = min(1, ᾱ / (1 + M_g η))``, in (0, 1].

    damping : "adaptive", "auto", "tau" or float, default="adaptive"
        The curvature of the regularizer in the Gauss-Newton matrix,
        ``H = λ_H ḡ''(θ)``. ``"adaptive"``: on mini-batches λ adapts on
        data the step did not see (a step that makes the next batch much
        worse is undone and λ raised; stalled epochs raise its floor and,
        when small, end the fit); in full batch λ starts at
        ``max(τ, min(0.01, 10/n))`` and adapts as Levenberg-Marquardt's,
        never below τ. ``"tau"``: the paper's ``H = τ ḡ''``. A float c:
        ``H = c ḡ''`` (1.0 is the authors' code). ``"auto"``: ``"tau"`` in
        full batch, 1.0 on mini-batches. See :ref:`default-damping`.

    line_search : "auto" or bool, default="auto"
        Armijo backtracking (halving, c = 1e-4) from the adaptive α on the
        batch objective. ``"auto"``: on in full batch and for the exact step
        (``hessian="diagonal"``), off on the structured step's mini-batches,
        whose adaptive damping judges every step on the next batch. See
        :ref:`default-line-search`.

    linear_solver : {"auto", "dual", "primal"}, default="auto"
        The form of the Gauss-Newton system: ``"dual"`` (Woodbury / kernel
        form, a Cholesky of a bK × bK matrix, cheap for small batches),
        ``"primal"`` (a Cholesky of the p × p matrix, cheap for small
        networks), ``"auto"`` (fewer estimated flops among the forms whose
        memory fits). The one used is ``linear_solver_``.

    solver : {"ggn", "gd"}, default="ggn"
        ``"ggn"`` is GGN-SCORE; ``"gd"`` is the paper's baseline, gradient
        descent ``θ ← θ − learning_rate ∇R(θ)`` on the unregularized risk
        (for comparisons; ``tau`` is then unused).

    learning_rate : float, default=1.0
        Step of ``solver="gd"`` (the paper uses 1); unused by ``"ggn"``.

    batch_size : int, "auto" or None, default="auto"
        Samples per step; None is full batch. ``"auto"``, for the structured
        step (the default ``hessian``, one kernel row per sample): full batch
        up to 512 samples (1024 for the squared-error and Huber regressors),
        else 128 per batch; for the exact step: full batch while
        ``n_samples · n_outputs ≤ 1024``, else ``256 // n_outputs``.
        ``partial_fit`` always takes the mini-batches. The size used is
        ``batch_size_``. See :ref:`default-batch-size`.

    max_iter : int, default=100
        Maximum number of iterations (full batch) or epochs (mini-batch).

    tol : float, default=1e-4
        Minimum improvement of the objective (or of the validation score with
        ``early_stopping=True``) that resets the ``n_iter_no_change`` count.

    n_iter_no_change : int or np.inf, default=10
        Stop when more than this many consecutive iterations/epochs have
        not improved by ``tol`` (MLP's rule); ``np.inf`` runs ``max_iter``
        per solve (the full-batch regressor's ``tau="auto"`` solves a few
        times for each input map: see ``tau`` and ``input_transform``).

    early_stopping : "auto" or bool, default="auto"
        ``"auto"``: the overfitting watch. A fresh mini-batch ``fit``
        without ``X_val`` holds out ``validation_fraction`` of the rows (at
        most 500, at least 50) for its first 15 epochs (a regressor's while
        it may be memorizing, up to 50). When the held-out risk keeps rising
        well above its minimum and the training risk for 3 epochs, its
        score no better, the model is refit on all rows for the epochs that
        scored best; otherwise the rows join and the fit goes on. See
        ``overfitting_watch_`` and :ref:`default-early-stopping`. ``True``: stop
        when the validation score (``X_val``, or a held-out split) stops
        improving and keep its best weights, as the MLP. ``False``: neither.

    validation_fraction : float, default=0.1
        Fraction held out for early stopping or for the overfitting watch.

    shuffle : bool, default=True
        Shuffle the samples every epoch (mini-batch only).

    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights, the shuffling and the validation split;
        with an int, fits are reproducible bit for bit on the same machine
        and number of BLAS threads.

    warm_start : bool, default=False
        Start from the current ``hidden_weights_``, ``output_weights_`` (and
        intercepts), fitted or set by hand (on the inputs as the network
        sees them, through ``input_transform``).

    verbose : bool or int, default=False
        Print one line per iteration/epoch (objective, risk, α, damping,
        validation score, time) and which rule ended the fit.

    store_initial_weights : bool, default=False
        Keep a copy of the initial weights in ``initial_weights_`` (needed by
        :func:`sklearn_ggn.diagnostics.time_invariance`).

    curvature : {"auto", "exact", "true_vs_rest"}, default="auto"
        Output curvature Q of the Gauss-Newton model. ``"exact"`` is the
        paper's (b·K rows of the kernel system for K classes);
        ``"true_vs_rest"`` keeps the softmax curvature's part along the
        margin between the true class and the rest: one row per sample, the
        gradient exact. Other losses keep their exact Q. ``"auto"`` is
        ``"true_vs_rest"``. See :ref:`default-curvature`.

    hessian : {"auto", "diagonal", "per_unit"}, default="auto"
        Structure of H. ``"diagonal"`` is ``λ_H ḡ''(θ)`` entry by entry (the
        paper's); ``"per_unit"`` gives every parameter of a hidden unit the
        unit's mean of that curvature, so that the Gram costs ``b²(d + n)``
        instead of ``b²·n·d``; the gradient stays exact. ``"auto"`` is
        ``"per_unit"``. :func:`~sklearn_ggn.paper_params` sets the paper's.
        See :ref:`default-hessian`.

    scoring : str, callable or None, default=None
        The validation score that early stopping and the watch follow:
        None is the estimator's ``score`` (accuracy, R²), ``"loss"`` minus
        the validation risk, or a scorer name or callable
        ``scorer(estimator, X, y)`` (greater is better).

    input_transform : {"auto", "robust_clip", "robust_clip+ple"} or None, \
            default="auto"
        What the network sees of ``X`` (the fitted map is ``input_map_``).
        ``"robust_clip"``: each column centered on its median, scaled to
        unit robust spread and smoothly clipped below ±3·1.349, so that
        outlying rows cannot take huge steps; the statistics
        (``input_center_``, ``input_scale_``) come from the first fit's
        rows and are kept by warm starts and ``partial_fit``. Sparse ``X``
        gets its dense copy's map, kept sparse where a column's median is
        0. ``"robust_clip+ple"``: the same, and each clipped column with at
        least three distinct values also encoded piecewise-linearly on up
        to 16 bins of its training quantiles (``min(1, max(0, (x' −
        b_{j−1}) / (b_j − b_{j−1})))`` per bin), so that a threshold or a
        bump in one column is one hidden unit's work; the network then has
        up to 17 inputs per column. On sparse ``X`` a column of median 0
        with negative values is left unencoded (its encoding would fill
        every row): a sparse one-hot block stays sparse. ``"auto"``: the
        data choose between the two. Where the fit holds rows out
        for the overfitting watch (``early_stopping="auto"``, a fresh
        mini-batch ``fit``), the watch's epochs run with the plain map;
        unless they diverged or saw overfitting, the encoded network (if
        some column gets bins, at most 1024 inputs) then starts from that fit,
        its encodings' weights zero, for 5 more epochs. Only when that
        lowers the held-out risk (by more than two standard errors of the
        row-by-row difference) do the watch's epochs run with the encoded
        map from its own initial weights, and it is chosen when it lowers
        the plain map's held-out risk in the same way. The fit is exactly
        the fit of the chosen map, which ``input_transform_`` names and
        ``overfitting_watch_["input_transform"]`` explains. A fresh
        full-batch fit that climbs the Laplace evidence (the squared-error
        regressor's ``tau="auto"`` or ``"evidence"``) fits each map in full,
        and keeps the one of higher log evidence
        (``tau_path_["input_transform"]``), again exactly that map's fit
        (for an int ``random_state``; another draws the one seed of both
        fits from it).
        Other fits (the classifier's full batches, other losses, a given τ,
        ``partial_fit``, ``X_val``, a warm start) start
        with ``"robust_clip"``; one that continues a fit (a warm start, a
        later ``partial_fit``) keeps that fit's map. None: ``X`` as given
        (the paper's setting). See :ref:`default-input-transform`.

    compute_dtype : {"auto", "float32", "float64"}, default="auto"
        The floating-point type the training steps compute in. ``"auto"``:
        float64 for a full batch of up to 1024 rows (its steps are solved
        to convergence, where float32 rounding would add up), float32
        otherwise (a mini-batch epoch costs about half as much; a step
        whose estimated float32 error is too large is refined or computed
        again in float64). ``"float32"``, ``"float64"``: every step in that
        type. The fitted weights and the predictions are in ``X``'s dtype;
        the posterior of ``return_std`` is computed in float64. See
        :ref:`default-compute-dtype`.
"""

STORE_POSTERIOR = """
    store_posterior : bool, default=False
        Whether a model file of the fitted estimator (pickle, joblib,
        ``skops.io``) holds its Laplace posterior (see ``uncertainty``).
        It is read when the file is written: on a fitted estimator,
        ``set_params(store_posterior=True)`` before saving works. False: the
        file holds the weights, the input and target maps and the solver's
        state (all that ``predict``, ``score``, warm starts and
        ``partial_fit`` use), neither the posterior nor the training rows
        it is computed from; the loaded estimator raises a ``ValueError``
        that names this parameter when asked for what needs the posterior
        (``uncertainty_``, ``log_marginal_likelihood_``, the regressor's
        ``predict(X, return_std=True)``, ``noise_variance_`` and
        ``noise_model_``, the classifier's ``predict_proba`` with
        ``predictive="probit"``). True: the posterior is computed (if
        not yet) and stored, a factor of order m·K (``"dual"``), p
        (``"primal"``) or (n + 1)·K (``"last_layer"``), megabytes where
        the model is kilobytes. The ``"dual"`` form holds the training
        inputs as the network sees them (``input_transform``'s map of X,
        which ``input_center_`` and ``input_scale_`` undo); the
        ``"primal"`` and ``"last_layer"`` forms hold nothing of the
        training rows (choose one with ``uncertainty``). Copies
        (``copy.copy``, ``copy.deepcopy``) are not files: they keep the
        posterior, or the rows it is computed from, as they are; a fitted
        estimator sent between processes is pickled (joblib's process
        workers, dask), and keeps its posterior there with True only. See
        :ref:`model-files`.
"""

ATTRIBUTES = """
    hidden_weights_ : ndarray of shape (n_hidden, `n_features_in_`)
        Hidden-layer weights U.

    output_weights_ : ndarray of shape (n_hidden, `n_outputs_`)
        Output weights V.

    hidden_intercept_ : ndarray of shape (n_hidden,)
        Hidden bias ``b_h`` (only with ``fit_intercept=True``).

    output_intercept_ : ndarray of shape (`n_outputs_`,)
        Output bias ``b_o`` (only with ``fit_intercept=True``).

    n_outputs_ : int
        Number of network outputs K.

    n_iter_ : int
        Iterations (full batch) or epochs (mini-batch) run by the last call
        of ``fit`` or ``partial_fit`` (as ``MLPClassifier``); the whole
        warm-started or ``partial_fit`` sequence ran ``len(loss_curve_)``.

    t_ : int
        Number of steps taken.

    loss_curve_ : list of float
        Objective ``R + g`` after each iteration (full batch), or the mean
        batch objective of each epoch (mini-batch).

    history_ : dict of lists
        One entry per iteration/epoch: ``"objective"`` (as ``loss_curve_``),
        ``"risk"`` (R alone), ``"step_size"`` (α; the epoch mean for
        mini-batches), ``"damping"`` (λ_H; ``solver="ggn"`` only),
        ``"time"`` (training seconds since the first fit of a warm-started
        sequence), and with validation data ``"validation_risk"`` and
        ``"validation_score"``.

    initial_weights_ : dict of ndarray
        With ``store_initial_weights=True``: the weights the optimization
        started from; kept across warm-started fits.

    best_loss_ : float or None
        Smallest value in ``loss_curve_``; None with ``early_stopping=True``,
        where the validation score decides.

    validation_scores_ : list of float or None
        Validation score per iteration/epoch with ``early_stopping=True``.

    validation_loss_curve_ : list of float or None
        The risk on the validation rows after each iteration/epoch, in the
        units of ``history_["risk"]``; None without validation data.

    best_validation_score_ : float or None
        Best validation score with ``early_stopping=True`` (None when the
        fit diverged before the first score).

    overfitting_watch_ : dict or None
        What ``early_stopping="auto"``'s watch found, None when there was
        none: ``"validation_rows"``, ``"epochs"`` (watched),
        ``"overfitting"`` (bool), ``"best_epoch"`` (the epochs of the refit,
        else None), the held-out ``"validation_loss_curve"`` and
        ``"validation_scores"`` per watched epoch, and ``"rule"``, the
        arguments of the :class:`~sklearn_ggn.engine.OverfittingWatch` that
        decided; under ``input_transform="auto"`` also ``"input_transform"``:
        the ``"chosen"`` map and the held-out risks compared
        (``"validation_risk"``, by map: the plain map's at the end of its
        watch; the encoded one's after its screen, or at the end of its own
        watch when it ran; none when it was not tried). ``n_iter_`` and
        ``loss_curve_`` are
        those of the fit on all rows.

    tau_ : float
        The regularization strength used.

    tau_path_ : dict or None
        When τ was chosen by a criterion: the grid ``"tau"`` and over it
        ``"gcv"``, ``"loo"``, ``"dof"`` and ``"evidence"`` (arrays),
        ``"n_rows"``, ``"criterion"`` and ``"tau_min"`` (the smallest τ the
        criterion may choose; the evidence path may go below it); e.g.
        ``plt.loglog(tau_path_["tau"], tau_path_["gcv"])``. When the
        evidence path ran (see ``tau``), also ``"evidence_path"``: the τ of
        each fit of the path in the order fitted (``"tau"``), the log
        evidence at its fitted weights in the units the network is trained
        in (``"log_evidence"``; ``-inf`` for a fit that diverged or whose
        evidence says nothing), its iterations (``"n_iter"``) and the
        index of the fit kept (``"chosen"``; ``n_iter_`` and ``loss_curve_``
        are that fit's). When ``input_transform="auto"`` chose by the
        evidence, also ``"input_transform"``: the ``"chosen"`` map and the
        ``"log_evidence"`` of each map's kept fit (the map tried last is
        absent when it adds no column or more than 1024 inputs, or when the
        plain map's fit has no finite evidence). A warm
        start that continues a fit keeps that fit's τ and ``tau_path_``.
        None otherwise.

    uncertainty_ : str or None
        The structure of the Laplace posterior (``"dual"``, ``"primal"`` or
        ``"last_layer"``), or None when there is none. Raises a
        ``ValueError`` on an estimator loaded from a file saved without
        its posterior (see ``store_posterior``).

    log_marginal_likelihood_ : float or None
        The log evidence of the Laplace approximation at the fitted weights
        (in the units of ``y`` for the regressor); compare it across values
        of ``tau`` (larger is better). None when ``uncertainty_`` is None;
        raises as ``uncertainty_`` does.

    linear_solver_ : str or None
        The form every step of the last fit used; None with ``solver="gd"``.

    batch_size_ : int
        Rows per step of the last call.

    input_map_ : transformer
        The fitted input map of ``input_transform``: what the network sees
        of ``X`` is ``input_map_.transform(X)``, of width
        ``input_map_.n_features_out_`` (the columns of
        ``hidden_weights_``). ``RobustClip`` for ``"robust_clip"``,
        ``PiecewiseLinear`` for ``"robust_clip+ple"``, ``Identity`` for
        None.

    input_transform_ : str or None
        The ``input_transform`` of ``input_map_``: the one given, or the
        one ``"auto"`` chose.

    input_center_ : ndarray of shape (`n_features_in_`,) or None
        The column medians of the input map (``input_map_.center_``; a
        sparse column's implicit zeros count); None when the network sees
        ``X`` as given.

    input_scale_ : ndarray of shape (`n_features_in_`,) or None
        The column factors of the input map (``input_map_.scale_``); None
        as ``input_center_``.

    n_features_in_ : int
        Number of features seen during ``fit``.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (only when X has string
        column names).
"""

OBJECTIVE = r"""
    The network is :math:`\Phi(x) = \kappa(n) V^\top \rho(U x + b_h) + b_o` and
    the objective is the regularized empirical risk

    .. math::

        \min_\theta \; \sum_k s_k \, \ell(\Phi(x_k), y_k)
        + \tau \sum_i \bar g_\mu(\theta_i),

    minimized by GGN-SCORE steps :math:`\theta \leftarrow \theta - \alpha d`
    with :math:`(J^\top Q J + H) d = J^\top e + \nabla g` and
    :math:`\alpha = \min(1, \bar\alpha / (1 + M_g \|\nabla g\|^*_\theta))`.
"""

REFERENCES = """
    References
    ----------
    .. [1] A. D. Adeoye, P. C. Petersen, A. Bemporad. "Regularized Gauss-Newton
       for Optimizing Overparameterized Neural Networks." arXiv:2404.14875.
"""


FIT_PARAMETERS = """\
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; integer weights are equivalent to repeating
            rows (exactly so with full-batch training; in mini-batches each
            batch's risk is an unbiased estimate of the weighted risk, its
            rows weighed relative to the mean weight of all rows).
        X_val : array-like of shape (n_val, n_features), default=None
            Validation inputs: their risk and score are recorded in
            ``history_`` after every iteration/epoch, and used instead of a
            held-out split by ``early_stopping``. Inside a ``Pipeline`` they
            are not transformed by the preceding steps.
        y_val : array-like, default=None
            Validation targets (with ``X_val``).
        sample_weight_val : array-like of shape (n_val,), default=None
            Validation sample weights.
"""


def with_docs(doc):
    """``doc`` with the shared parts filled in."""
    return (doc.replace("%(parameters)s", PARAMETERS)
               .replace("%(attributes)s", ATTRIBUTES)
               .replace("%(store_posterior)s", STORE_POSTERIOR)
               .replace("%(objective)s", OBJECTIVE)
               .replace("%(references)s", REFERENCES)
               .replace("%(fit_parameters)s\n", FIT_PARAMETERS))


def fill_doc(method):
    """Decorator: ``method``'s docstring with the shared parts filled in."""
    method.__doc__ = with_docs(method.__doc__)
    return method
