"""Out-of-core training: ``dask_ml.wrappers.Incremental`` on a local cluster.

Needs ``dask-ml`` and ``distributed`` (both in the ``test`` extra); skipped
otherwise. ``Incremental`` calls ``partial_fit`` once per block of a chunked
``dask.array``, in a chain of tasks on the cluster's workers (the estimator
travels between worker processes pickled, its ``_solver_state`` with it).
Each call runs the mini-batch loop over its chunk; the adaptive damping
carries over from call to call, so that chunked training is one fit with
``shuffle=False``: step for step with a fixed damping, statistically with
``damping="adaptive"``.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import log_loss
from threadpoolctl import threadpool_limits

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
wrappers = pytest.importorskip("dask_ml.wrappers")

CHUNK = 192  # a multiple of the batch size: the same batches as one fit


def data(seed=0, n_train=960, n_test=540):
    X, y = make_classification(n_samples=n_train + n_test, n_features=10,
                               n_informative=6, n_classes=3, random_state=seed)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def chunked(X, y):
    return (da.from_array(X, chunks=(CHUNK, X.shape[1])),
            da.from_array(y, chunks=CHUNK))


def test_incremental_on_a_cluster_is_one_fit_with_fixed_damping(client):
    """Five chunks on two worker processes: exactly the steps of one epoch
    of ``fit(shuffle=False)``."""
    X, y, _, _ = data()
    # (input_transform=None: partial_fit takes its input statistics from the
    # first chunk, fit from all rows; tau given: tau="auto" is 1e-4 in
    # partial_fit, 1/n in a mini-batch fit)
    params = dict(n_hidden=32, batch_size=32, shuffle=False, damping=1.0,
                  random_state=0, input_transform=None, tau=1e-4)
    with threadpool_limits(limits=1, user_api="blas"):  # as on the workers
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ref = GGNScoreClassifier(max_iter=1, tol=0, **params).fit(X, y)
    inc = wrappers.Incremental(GGNScoreClassifier(**params), shuffle_blocks=False)
    with distributed.get_task_stream(client) as stream:
        inc.fit(*chunked(X, y), classes=np.unique(y))
    workers = set(client.scheduler_info()["workers"])
    assert {task["worker"] for task in stream.data} <= workers
    est = inc.estimator_
    assert est.t_ == ref.t_ == len(X) // 32
    # one "epoch" per partial_fit (n_iter_ counts the last call's, as MLP)
    assert len(est.loss_curve_) == len(X) // CHUNK and est.n_iter_ == 1
    for name in ("hidden_weights_", "output_weights_", "hidden_intercept_",
                 "output_intercept_"):
        np.testing.assert_allclose(getattr(est, name), getattr(ref, name),
                                   rtol=1e-10, atol=1e-12, err_msg=name)
    np.testing.assert_array_equal(inc.predict(X[:50]), ref.predict(X[:50]))


def test_incremental_matches_fit_statistically_with_adaptive_damping(client):
    """Three seeded problems, five passes of five chunks against one fit of
    five epochs: the same test log loss (mean over seeds within 10 %) and a
    damping λ of the same size (within 3x: it carried over, without the
    per-epoch floor rule firing on every chunk)."""
    ours, theirs = [], []
    for seed in range(3):
        X, y, X_test, y_test = data(seed)
        params = dict(n_hidden=32, batch_size=32, shuffle=False,
                      damping="adaptive", random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ref = GGNScoreClassifier(max_iter=5, tol=0, **params).fit(X, y)
        inc = wrappers.Incremental(GGNScoreClassifier(**params),
                                   shuffle_blocks=False)
        for _ in range(5):
            inc.partial_fit(*chunked(X, y), classes=np.unique(y))
        est = inc.estimator_
        assert est.t_ == ref.t_
        lam, ref_lam = (e._solver_state.damping.lam for e in (est, ref))
        assert ref_lam / 3 <= lam <= 3 * ref_lam
        ours.append(log_loss(y_test, est.predict_proba(X_test)))
        theirs.append(log_loss(y_test, ref.predict_proba(X_test)))
    assert np.mean(ours) == pytest.approx(np.mean(theirs), rel=0.1)


def test_partial_fit_auto_batch_size_is_the_fits_mini_batch():
    """batch_size="auto" in partial_fit: the mini-batches of a fit whatever
    the chunk's size (a full-batch step per chunk would be another method)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((600, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # one pass
        reg = GGNScoreRegressor(n_hidden=8, random_state=0)
        reg.partial_fit(X, X[:, 0])
        clf = GGNScoreClassifier(n_hidden=8, random_state=0)
        clf.partial_fit(X, np.arange(600) % 4)
        exact = GGNScoreClassifier(n_hidden=8, random_state=0, curvature="exact",
                                   hessian="diagonal")
        exact.partial_fit(X, np.arange(600) % 4)
    # the default step: batches of 128 rows whatever K (600 = 4 × 128 + 88,
    # the last one kept: at least half a batch)
    assert reg.t_ == clf.t_ == 5
    # the exact step: 256 // K rows for K = 4 outputs
    rows = 256 // 4
    # every batch of `rows`, a short last one merged
    rest = 600 % rows
    n_batches = 600 // rows + (rest > 0) - (0 < rest < rows / 2)
    assert exact.t_ == n_batches
