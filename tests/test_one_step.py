"""One step for every driver: losses added by registration, overflow of the
Poisson mean, and Ctrl-C during any kind of fit.

The step is written once (``Problem.linearize``, ``Linearization.direction``
over the network's products and the kernels); the full-batch loop and the
mini-batch epoch only loop over it. Its numerics are held to dense
references elsewhere (``test_numerics.py``, ``test_structured_step.py``,
``test_engine_regression.py``).
"""

import math
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numba import njit

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor
from sklearn_ggn.engine import (
    REGULARIZERS,
    AdaptiveDamping,
    AdaptiveStepSize,
    Batching,
    GGNScoreSolver,
    Linearization,
    Problem,
    TwoLayerNetwork,
)


def test_poisson_risk_overflows_where_numpy_does():
    """The Poisson mean overflows to inf exactly where ``np.exp`` does, in
    float64 and in float32, against the risk written out with NumPy."""
    from scipy.special import xlogy

    from sklearn_ggn._losses import PoissonLoss

    loss = PoissonLoss()
    for dtype, edge in ((np.float64, 709.78), (np.float32, 88.72)):
        F = np.array([[edge, 0.0], [edge + 0.1, 1.0]], dtype=dtype)
        Y = np.ones((2, 2), dtype=dtype)
        for rows in ([0], [1]):
            s = np.ones(1, dtype=dtype)
            ours = loss.risk(F[rows], Y[rows], s)
            with np.errstate(over="ignore"):
                mean = np.exp(F[rows])
            ref = float(np.sum(mean - Y[rows] * F[rows]
                               + (xlogy(Y[rows], Y[rows]) - Y[rows]))) / 2
            assert np.isinf(ours) == np.isinf(ref)
            if np.isfinite(ref):
                assert ours == pytest.approx(ref, rel=1e-6)
        assert np.isfinite(loss.risk(F[[0]], Y[[0]], np.ones(1, dtype)))


@pytest.fixture
def log_cosh_loss():
    """A loss added as one function plus its registration: the
    log-cosh loss ``ℓ = (1/K) Σ_c log cosh(F_c − y_c)``, whose residual is
    ``s tanh(F − y)/K`` and whose curvature ``s sech²(F − y)/K`` has the
    diagonal factor ``a = sqrt(s/K) sech(F − y)``."""
    from sklearn_ggn import _losses

    @njit(cache=False)
    def log_cosh(F, Y, s, e, a, u, w, parts):
        b, K = F.shape
        risk = 0.0
        for k in range(b):
            for c in range(K):
                if not parts:  # log cosh t = |t| + log(1 + e^{-2|t|}) - log 2
                    t = abs(np.float64(F[k, c]) - Y[k, c])
                    risk += s[k] * (t + math.log1p(math.exp(-2.0 * t))
                                    - math.log(2.0)) / K
                    continue
                t = F[k, c] - Y[k, c]
                e[k, c] = math.tanh(t) * (s[k] / K)
                a[k, c] = math.sqrt(s[k] / K) / math.cosh(t)
        return risk

    cls = _losses.register_loss("log_cosh", log_cosh)
    yield cls
    del _losses.LOSSES["log_cosh"]


@pytest.mark.parametrize("K,structured", [(2, False), (3, False), (1, True)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_registered_loss_derivatives_and_fit(log_cosh_loss, K, structured, dtype):
    """A registered loss's two modes agree (its residual and factor are the
    risk's derivatives, by central differences), and mini-batch fits with
    it decrease the objective in both precisions and both step structures."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((90, 5))
    Y = np.column_stack([np.sin(X[:, c]) for c in range(K)])
    w = np.ones(90)
    net = TwoLayerNetwork(5, 7, K, 1 / np.sqrt(7), "silu", True)
    problem = Problem(net, log_cosh_loss(), REGULARIZERS["pseudo_huber"](2.0), 1e-3,
                      X.astype(dtype), Y.astype(dtype), w.astype(dtype))
    theta0 = (np.random.default_rng(1).standard_normal(net.n_params) * 0.5
              ).astype(dtype)
    if dtype == np.float64:
        F = np.random.default_rng(2).standard_normal((5, K))
        s = np.full(5, 0.2)
        e, parts = problem.loss.residual_and_parts(F, Y[:5], s)
        step = 1e-6
        for k, c in [(0, 0), (3, K - 1)]:
            Fp, Fm = F.copy(), F.copy()
            Fp[k, c] += step
            Fm[k, c] -= step
            fd = (problem.loss.risk(Fp, Y[:5], s)
                  - problem.loss.risk(Fm, Y[:5], s)) / (2 * step)
            assert e[k, c] == pytest.approx(fd, rel=1e-6)
            ep = problem.loss.residual_and_parts(Fp, Y[:5], s)[0]
            em = problem.loss.residual_and_parts(Fm, Y[:5], s)[0]
            assert parts.a[k, c] ** 2 == pytest.approx(
                (ep[k, c] - em[k, c]) / (2 * step), rel=1e-5)
    options = (dict(curvature="true_vs_rest", hessian="per_unit") if structured
               else {})
    solver = GGNScoreSolver(AdaptiveDamping(unit=2.0), AdaptiveStepSize(0.95),
                            None, "dual", Batching(12, True), 3, **options)
    result = solver.solve(problem, theta0, np.random.RandomState(0))
    assert result.status == "max_iter"
    assert result.theta.dtype == dtype
    assert result.history[-1]["objective"] < result.history[0]["objective"]


# ------------------------------------------------------------ Ctrl-C
def _interrupt_after(monkeypatch, n_calls):
    """Make the step's direction raise KeyboardInterrupt at its n-th call
    (as Ctrl-C does between two kernel calls); returns the call list."""
    calls = []
    original = Linearization.direction

    def interrupted(self, form):
        calls.append(1)
        if len(calls) == n_calls:
            raise KeyboardInterrupt
        return original(self, form)

    monkeypatch.setattr(Linearization, "direction", interrupted)
    return calls


def _digits(n=300):
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    return StandardScaler().fit_transform(X[:n]), y[:n]


@pytest.mark.parametrize("kind", ["minibatch", "full_batch", "float32", "sparse",
                                  "partial_fit", "regressor", "exact"])
def test_ctrl_c_during_a_fit_leaves_the_estimator_as_it_was(monkeypatch, kind):
    """Ctrl-C in the middle of an epoch (or of a full-batch iteration) raises
    KeyboardInterrupt out of ``fit`` and the estimator is exactly as before
    the call: fitted attributes, random stream and solver state alike."""
    X, y = _digits()
    params = dict(n_hidden=12, max_iter=3, random_state=0)
    if kind == "full_batch":
        params["batch_size"] = None
    elif kind == "exact":
        params.update(curvature="exact", hessian="diagonal", batch_size=32)
    else:
        params["batch_size"] = 32
    est = (GGNScoreRegressor(**params) if kind == "regressor"
           else GGNScoreClassifier(**params))
    target = X[:, 20] if kind == "regressor" else y
    data = (X.astype(np.float32) if kind == "float32"
            else sp.csr_matrix(X) if kind == "sparse" else X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "partial_fit":
            est.partial_fit(data, target, classes=np.unique(y))
        else:
            est.fit(data, target)
    before = pickle.dumps(est)
    calls = _interrupt_after(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        if kind == "partial_fit":
            est.partial_fit(data[::-1], target[::-1])
        else:
            est.fit(data[::-1], target[::-1])
    assert len(calls) == 3  # raised in the middle of the fit
    assert pickle.dumps(est) == before
