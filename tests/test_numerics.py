"""Numerical identities against the dense references of ``naive.py``."""

import math

import numpy as np
import pytest
from naive import (
    DenseNetwork,
    block_factor,
    dense_directions,
    finite_difference_jacobian,
    naive_activation,
    naive_per_unit,
    naive_pseudo_huber,
    naive_residual_and_curvature,
    naive_risk,
    naive_true_vs_rest,
)
from numba import njit
from sklearn.exceptions import ConvergenceWarning

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor, _network
from sklearn_ggn._activations import ACTIVATIONS, activate, exp_nonpositive
from sklearn_ggn._losses import LOSSES
from sklearn_ggn._network import TwoLayerNetwork
from sklearn_ggn._regularizers import REGULARIZERS
from sklearn_ggn.engine import AdaptiveStepSize, Linearization

RTOL = 1e-8


# ------------------------------------------------------------------ helpers
def make_problem(K=1, fit_intercept=True, loss="squared_error", b=7, d=3, n=5,
                 activation="silu", weighted=False, seed=0):
    """A small random network, batch and targets, in both layouts."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((b, d))
    U = rng.standard_normal((n, d))
    V = rng.standard_normal((n, K))
    b_h = rng.standard_normal(n) if fit_intercept else None
    b_o = rng.standard_normal(K) if fit_intercept else None
    kappa = 1 / np.sqrt(n)
    net = TwoLayerNetwork(d, n, K, kappa, activation, fit_intercept)
    theta = net.pack(U, V, b_h, b_o)
    dense = DenseNetwork(U, V, b_h, b_o, kappa, activation)
    if loss == "squared_error":
        Y = rng.standard_normal((b, K))
    elif loss == "poisson":  # counts, zeros included
        Y = rng.poisson(1.5, (b, K)).astype(float)
    elif loss == "multilabel_log_loss":  # an indicator matrix
        Y = rng.integers(0, 2, (b, K)).astype(float)
    elif K == 1:
        Y = rng.integers(0, 2, (b, 1)).astype(float)
    else:
        Y = np.eye(K)[rng.integers(0, K, b)]
    w = rng.uniform(0.2, 3.0, b) if weighted else np.ones(b)
    s = w / w.sum()
    return net, theta, dense, X, Y, s


def to_dense_layout(net, vec):
    """Map a package-layout parameter vector to the naive layout."""
    U_aug, V, b_o = net.unpack(vec)
    parts = [U_aug[:, : net.n_features].ravel()]
    if net.fit_intercept:
        parts.append(U_aug[:, -1])
    parts.append(V.ravel())
    if net.fit_intercept:
        parts.append(b_o)
    return np.concatenate(parts)


# ------------------------------------------------------------------ activations
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_matches_naive_and_finite_differences(name):
    a = np.linspace(-6, 6, 241).reshape(1, -1)
    a = a[np.abs(a) > 1e-3].reshape(1, -1)  # ReLU's kink
    rho, drho = activate(a, name)
    ref_rho, ref_drho = naive_activation(a, name)
    np.testing.assert_allclose(rho, ref_rho, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(drho, ref_drho, rtol=1e-12, atol=1e-14)
    eps = 1e-6
    fd = (activate(a + eps, name, False)[0] - activate(a - eps, name, False)[0]) / (
        2 * eps
    )
    np.testing.assert_allclose(drho, fd, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activation_is_overflow_free(name, dtype):
    a = np.array([[-1e4, -800.0, -50.0, 0.0, 50.0, 800.0, 1e4]], dtype=dtype)
    rho, drho = activate(a, name)
    assert rho.dtype == dtype and drho.dtype == dtype
    assert np.all(np.isfinite(rho)) and np.all(np.isfinite(drho))
    if name in ("silu", "relu", "softplus"):
        assert rho[0, -1] == pytest.approx(1e4) and abs(rho[0, 0]) < 1e-300 + 1e-30
    if name == "relu":
        assert drho[0, 3] == 0.0  # ρ'(0) = 0


@njit
def _exp_nonpositive_array(x, out):
    for i in range(x.size):
        out[i] = exp_nonpositive(x[i])


def test_float32_exponential_is_within_one_ulp_and_keeps_specials():
    # the float32 kernels' polynomial exp (SIMD): against float64's exp
    rng = np.random.default_rng(0)
    x = -np.concatenate([rng.exponential(10.0, 200_000), np.linspace(0, 87, 20_001),
                         [0.0, 1e-30, 87.3, 87.34, 88.0, 103.0, 1e30, np.inf]])
    x = np.append(x, np.nan).astype(np.float32)
    out = np.empty_like(x)
    _exp_nonpositive_array(x, out)
    exact = np.exp(x.astype(np.float64))
    normal = exact >= np.finfo(np.float32).tiny
    ulp = np.spacing(exact[normal].astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(out[normal] - exact[normal]) / ulp) <= 1.0
    assert np.all(out[~normal & ~np.isnan(x)] <= np.finfo(np.float32).tiny)
    assert np.isnan(out[-1]) and out[x == 0].tolist() == [1.0, 1.0]
    out64 = np.empty(x.shape)  # float64 is libm's exp (np.exp is not libm's
    # on every CPU: with AVX-512 NumPy has its own, within an ulp of it)
    _exp_nonpositive_array(x.astype(np.float64), out64)
    libm = np.array([math.exp(v) for v in x.astype(np.float64).tolist()])
    np.testing.assert_array_equal(out64, libm)
    # called from Python (as under NUMBA_DISABLE_JIT), the same function
    assert exp_nonpositive(x[7]) == out[7] and isinstance(out[7], np.float32)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_float32_activation_matches_float64_to_float32_rounding(name):
    a = np.linspace(-30, 30, 6001, dtype=np.float32).reshape(1, -1)
    a = a[np.abs(a) > 1e-3].reshape(1, -1)  # ReLU's kink
    rho, drho = activate(a, name)
    rho64, drho64 = activate(a.astype(np.float64), name)
    eps = np.finfo(np.float32).eps
    # relative, or absolute at the scale of ρ' (O(1)): ρ'_silu = σ(1 + a σ(−a))
    # cancels near a = −1.28 in float32 arithmetic
    for got, ref in ((rho, rho64), (drho, drho64)):
        np.testing.assert_allclose(got, ref, rtol=4 * eps, atol=4 * eps)


# ------------------------------------------------------------------ regularizers
@pytest.mark.parametrize("name", sorted(REGULARIZERS))
@pytest.mark.parametrize("mu", [1e-2, 1.0, 22.0])
def test_regularizer_derivatives_by_finite_differences(name, mu):
    reg = REGULARIZERS[name](mu)
    t = np.linspace(-3 * mu, 3 * mu, 61)
    grad, hess = reg.derivatives(t)
    np.testing.assert_array_equal(reg.gradient(t), grad)
    np.testing.assert_array_equal(reg.hessian(t), hess)
    assert reg.value_sum(t) == pytest.approx(np.sum(reg.value(t)), rel=1e-13)
    reg_grad, D, eta = reg.step_quantities(t, 1e-3, 0.7)
    np.testing.assert_allclose(reg_grad, 1e-3 * grad, rtol=1e-15)
    np.testing.assert_allclose(D, 1 / (0.7 * hess), rtol=1e-15)
    assert eta == pytest.approx(np.sqrt(np.sum(reg_grad**2 * D)), rel=1e-12)
    # float32 θ: terms in float32 precision (pseudo-Huber) or float64
    assert reg.value_sum(t.astype(np.float32)) == pytest.approx(
        np.sum(reg.value(t.astype(np.float32).astype(float))),
        rel=1e-6 if name == "pseudo_huber" else 1e-12)
    eps = 1e-6 * max(mu, 1.0)
    fd_grad = (reg.value(t + eps) - reg.value(t - eps)) / (2 * eps)
    fd_hess = (reg.derivatives(t + eps)[0] - reg.derivatives(t - eps)[0]) / (2 * eps)
    np.testing.assert_allclose(grad, fd_grad, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(hess, fd_hess, rtol=1e-5, atol=1e-6 / mu)
    assert reg.value(np.zeros(1))[0] == 0.0 and np.all(np.isfinite(hess))


def test_pseudo_huber_is_the_papers_function_and_smooths_l1():
    reg = REGULARIZERS["pseudo_huber"](0.7)
    t = np.linspace(-5, 5, 101)
    np.testing.assert_allclose(reg.value(t), naive_pseudo_huber(t, 0.7), rtol=1e-12,
                               atol=1e-15)
    for name in ("pseudo_huber", "ostrovskii_bach"):
        smooth = REGULARIZERS[name](1e-6)
        np.testing.assert_allclose(smooth.value(t), np.abs(t), atol=1e-5)


def test_self_concordance_constants():
    p, mu = 3500, 22.36
    # The paper's value for pseudo-Huber: M_g = 2 μ^{-0.7} p^{0.2}, ν = 2.6.
    ph = REGULARIZERS["pseudo_huber"](mu)
    assert ph.self_concordance_constant(p) == pytest.approx(2 * mu**-0.7 * p**0.2)
    ob = REGULARIZERS["ostrovskii_bach"](mu)  # ν = 3: M_g = 2√2 μ^{-1/2}
    assert ob.self_concordance_constant(p) == pytest.approx(2 * np.sqrt(2) / mu**0.5)
    assert REGULARIZERS["l2"](mu).self_concordance_constant(p) == 0.0


# ------------------------------------------------------------------ losses
@pytest.mark.parametrize("loss,K", [("squared_error", 1), ("squared_error", 3),
                                    ("log_loss", 1), ("log_loss", 4),
                                    ("poisson", 1), ("poisson", 3),
                                    ("multilabel_log_loss", 1),
                                    ("multilabel_log_loss", 3)])
def test_loss_residual_and_curvature_factor(loss, K):
    _, _, _, _, Y, s = make_problem(K=K, loss=loss, weighted=True)
    F = np.random.default_rng(1).standard_normal(Y.shape)
    obj = LOSSES[loss]()
    assert obj.risk(F, Y, s) == pytest.approx(naive_risk(F, Y, s, loss), rel=1e-12)
    residual, factor = obj.residual_and_factor(F, Y, s)
    e_ref, Q_ref = naive_residual_and_curvature(F, Y, s, loss)
    np.testing.assert_allclose(residual.ravel(), e_ref, rtol=1e-12, atol=1e-15)
    A = block_factor(factor)
    np.testing.assert_allclose(A @ A.T, Q_ref, rtol=1e-10, atol=1e-14)
    # and the references themselves are the derivatives of the risk
    shape = F.shape

    def risk_of(f):
        return naive_risk(f.reshape(shape), Y, s, loss)

    fd_grad = finite_difference_jacobian(risk_of, F.ravel())[0]
    np.testing.assert_allclose(fd_grad, e_ref, rtol=1e-6, atol=1e-9)

    def grad_of(f):
        return naive_residual_and_curvature(f.reshape(shape), Y, s, loss)[0]

    fd_hess = finite_difference_jacobian(grad_of, F.ravel())
    np.testing.assert_allclose(fd_hess, Q_ref, rtol=1e-5, atol=1e-8)


# ------------------------------------------------------------------ Jacobian
@pytest.mark.parametrize("activation", ["silu", "tanh", "softplus", "identity"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_dense_jacobian_reference_matches_finite_differences(activation,
                                                             fit_intercept):
    _, _, dense, X, _, _ = make_problem(K=2, fit_intercept=fit_intercept,
                                        activation=activation)
    J = dense.jacobian(X)
    fd = finite_difference_jacobian(lambda t: dense.with_theta(t).forward(X).ravel(),
                                    dense.theta())
    np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("K,loss", [(1, "squared_error"), (3, "squared_error"),
                                    (1, "log_loss"), (3, "log_loss"),
                                    (1, "poisson"), (3, "poisson"),
                                    (3, "multilabel_log_loss")])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_structured_products_and_gram_equal_dense(K, loss, fit_intercept,
                                                  monkeypatch):
    net, theta, dense, X, Y, s = make_problem(K=K, loss=loss,
                                              fit_intercept=fit_intercept)
    Xa = net.augment(X)
    cache = net.forward(theta, Xa)
    np.testing.assert_allclose(cache.outputs, dense.forward(X), rtol=1e-12)
    J = dense.jacobian(X)
    _, factor = LOSSES[loss]().residual_and_factor(cache.outputs, Y, s)
    J_tilde = block_factor(factor).T @ J
    W = net.sensitivities(theta, cache, factor)
    rng = np.random.default_rng(3)
    v = rng.standard_normal(net.n_params)
    y = rng.standard_normal((X.shape[0], K))
    np.testing.assert_allclose(net.jvp(theta, cache, W, factor, v).ravel(),
                               J_tilde @ to_dense_layout(net, v), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(to_dense_layout(net, net.vjp(theta, cache, W, factor,
                                                            y)),
                               J_tilde.T @ y.ravel(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_dense_layout(net, net.gradient(theta, cache, y)),
                               J.T @ y.ravel(), rtol=1e-10, atol=1e-12)
    D = rng.uniform(0.1, 10.0, net.n_params)
    gram_ref = J_tilde @ np.diag(to_dense_layout(net, D)) @ J_tilde.T
    # the structured factor A_k = diag(a_k) − u_k w_kᵀ: the same dense A, the
    # same sensitivities, the same Gram (formed without A, then A per pair)
    _, parts = LOSSES[loss]().residual_and_parts(cache.outputs, Y, s)
    np.testing.assert_allclose(parts.dense(), factor, rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(net.sensitivities(theta, cache, parts), W,
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(net.jvp(theta, cache, W, parts, v).ravel(),
                               J_tilde @ to_dense_layout(net, v), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(to_dense_layout(net, net.vjp(theta, cache, W, parts,
                                                            y)),
                               J_tilde.T @ y.ravel(), rtol=1e-10, atol=1e-12)
    for f in (factor, parts):
        np.testing.assert_allclose(net.gram(theta, cache, W, f, D), gram_ref,
                                   rtol=1e-10, atol=1e-12)
    # the blocked GEMM kernel (used for K > 1 and for large K = 1 batches),
    # with blocks of one row to exercise the block boundaries
    monkeypatch.setattr(_network, "_BLOCK_BYTES", 1)
    for f in (factor, parts):
        np.testing.assert_allclose(net.gram(theta, cache, W, f, D), gram_ref,
                                   rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        net.gauss_newton_matrix(theta, cache, W, factor),
        # in package layout: permute the dense reference
        _permute_to_package(net, J_tilde.T @ J_tilde), rtol=1e-10, atol=1e-12)


def _permute_to_package(net, M):
    perm = to_dense_layout(net, np.arange(net.n_params, dtype=float)).astype(int)
    out = np.empty_like(M)
    out[np.ix_(perm, perm)] = M
    return out


# ------------------------------------------------------------------ the step
CASES = [(K, loss, fi, w) for K, loss in [(1, "squared_error"), (3, "squared_error"),
                                          (1, "log_loss"), (4, "log_loss"),
                                          (1, "poisson"), (3, "poisson"),
                                          (3, "multilabel_log_loss")]
         for fi in (True, False) for w in (False, True)]


@pytest.mark.parametrize("K,loss,fit_intercept,weighted", CASES)
@pytest.mark.parametrize("damping", ["tau", 1.0])
def test_dual_equals_primal_equals_augmented(K, loss, fit_intercept, weighted,
                                             damping):
    net, theta, dense, X, Y, s = make_problem(K=K, loss=loss,
                                              fit_intercept=fit_intercept,
                                              weighted=weighted, b=6, n=6)
    tau, mu = 1e-3, 0.5
    reg = REGULARIZERS["pseudo_huber"](mu)
    grad_g, hess_g = reg.derivatives(theta)
    grad_g *= tau
    H = (tau if damping == "tau" else damping) * hess_g
    cache = net.forward(theta, net.augment(X))
    residual, factor = LOSSES[loss]().residual_and_factor(cache.outputs, Y, s)
    d_dual, r = ggn_direction(net, theta, cache, residual, factor, grad_g, 1 / H,
                              "dual")
    d_primal, _ = ggn_direction(net, theta, cache, residual, factor, grad_g, 1 / H,
                                "primal")
    e_ref, Q_ref = naive_residual_and_curvature(dense.forward(X), Y, s, loss)
    refs = dense_directions(dense.jacobian(X), Q_ref, e_ref,
                            to_dense_layout(net, grad_g), to_dense_layout(net, H))
    scale = np.linalg.norm(refs[0])
    for ref in refs[1:]:  # the three dense forms agree with each other
        assert np.linalg.norm(ref - refs[0]) <= RTOL * scale
    for ours in (d_dual, d_primal):
        assert np.linalg.norm(to_dense_layout(net, ours) - refs[0]) <= RTOL * scale


@pytest.mark.parametrize("tau", [1e-6, 1e-8])
def test_dual_equals_primal_in_the_papers_ill_conditioned_regime(tau):
    """μ = √n, small τ: D is huge and the dual formula cancels; the refined
    dual step must still match the primal one (cond(JᵀQJ + H) up to 1e9)."""
    from sklearn_ggn.datasets import make_teacher_student

    X, y, _, _ = make_teacher_student(n_train=60, n_features=5, random_state=0)
    n = 40
    net, theta, _, _, _, _ = make_problem(K=1, d=5, n=n, b=60, seed=2)
    reg = REGULARIZERS["pseudo_huber"](np.sqrt(n))
    grad_g, hess_g = reg.derivatives(theta)
    grad_g *= tau
    D = 1 / (tau * hess_g)
    cache = net.forward(theta, net.augment(X))
    residual, factor = LOSSES["squared_error"]().residual_and_factor(
        cache.outputs, y[:, None], np.full(60, 1 / 60))
    d_dual, _ = ggn_direction(net, theta, cache, residual, factor, grad_g, D, "dual")
    d_primal, _ = ggn_direction(net, theta, cache, residual, factor, grad_g, D,
                                "primal")
    # Both solve the Gauss-Newton equation to round-off (backward error) ...
    W = net.sensitivities(theta, cache, factor)
    r = net.gradient(theta, cache, residual) + grad_g

    def apply_system(d):
        Jd = net.jvp(theta, cache, W, factor, d)
        return net.vjp(theta, cache, W, factor, Jd) + d / D

    for d in (d_dual, d_primal):
        assert np.linalg.norm(apply_system(d) - r) <= 1e-12 * np.linalg.norm(r)
    # ... and agree to the forward-error bound cond · ε (cond = 2e7 at
    # τ = 1e-6, where SPEC's 1e-8 holds; 2e9 at τ = 1e-8).
    bound = RTOL if tau >= 1e-6 else 1e-6
    assert np.linalg.norm(d_dual - d_primal) <= bound * np.linalg.norm(d_primal)


def ggn_direction(net, theta, cache, residual, factor, reg_grad, D, form):
    """``(d, r)`` of the engine's linearization (the step without forward
    pass, step-size rule or line search)."""
    lin = Linearization(net, theta, cache, residual, factor, reg_grad, D)
    return lin.direction(form), lin.gradient


def test_step_size_rule():
    rng = np.random.default_rng(0)
    t = rng.standard_normal(50)
    reg = REGULARIZERS["pseudo_huber"](0.8)
    grad, D, eta_out = reg.step_quantities(t, 1e-2, 1.3)
    eta = np.sqrt(np.sum(grad**2 * D))
    assert eta_out == pytest.approx(eta)
    assert AdaptiveStepSize(0.95)(3.0, eta_out) == pytest.approx(0.95 / (1 + 3.0 * eta))
    assert AdaptiveStepSize(1.0)(0.0, eta_out) == 1.0  # capped at 1


# ------------------------------------------------------------------ estimator step
@pytest.mark.parametrize("Est,loss", [(GGNScoreRegressor, None),
                                      (GGNScoreRegressor, "poisson"),
                                      (GGNScoreClassifier, "log_loss"),
                                      (GGNScoreClassifier, "squared_error"),
                                      (GGNScoreClassifier, "multilabel")])
@pytest.mark.parametrize("linear_solver", ["dual", "primal"])
@pytest.mark.parametrize("step", ["paper", "default"])
def test_one_fit_call_is_one_step_from_user_weights(Est, loss, linear_solver, step):
    """warm_start + max_iter=1 + full batch: exactly θ − α d from the user's θ,
    for the paper's step (exact Q, diagonal H) and the default one
    (true-vs-rest Q, per-unit H)."""
    rng = np.random.default_rng(5)
    b, d, n = 12, 3, 8
    X = rng.standard_normal((b, d))
    if Est is GGNScoreRegressor and loss == "poisson":
        y = rng.poisson(2.0, b).astype(float)
        kwargs = {"loss": loss}
    elif Est is GGNScoreRegressor:
        y = rng.standard_normal(b)
        kwargs = {}
    elif loss == "multilabel":  # an indicator matrix of 3 labels
        y = rng.integers(0, 2, (b, 3))
        kwargs = {"loss": "log_loss"}
    else:
        y = np.array(["a", "b", "c"])[np.arange(b) % 3]
        kwargs = {"loss": loss}
    if Est is GGNScoreRegressor:  # the oracle steps on y as given
        kwargs["standardize_target"] = False
    # the oracle's network sees X as given (weights set by hand start on the
    # inputs as the fit maps them)
    kwargs["input_transform"] = None
    sw = rng.uniform(0.5, 2.0, b)
    est = Est(n_hidden=n, batch_size=None, warm_start=True, max_iter=1,
              line_search=False, tau=1e-3, mu=0.8, linear_solver=linear_solver,
              curvature="exact" if step == "paper" else "auto",
              hessian="diagonal" if step == "paper" else "auto",
              damping="tau" if step == "paper" else "adaptive", **kwargs)
    # the targets' shape decides K; set weights of that shape
    K = 1 if Est is GGNScoreRegressor else (3 if loss else 3)
    U, V = rng.standard_normal((n, d)), rng.standard_normal((n, K))
    b_h, b_o = rng.standard_normal(n), rng.standard_normal(K)
    est.hidden_weights_, est.output_weights_ = U.copy(), V.copy()
    est.hidden_intercept_, est.output_intercept_ = b_h.copy(), b_o.copy()
    est.fit(X, y, sample_weight=sw)

    dense = DenseNetwork(U, V, b_h, b_o, 1 / np.sqrt(n), "silu")
    if Est is GGNScoreRegressor:
        Y, loss_name = y[:, None], loss or "squared_error"
    elif loss == "multilabel":
        Y, loss_name = y.astype(float), "multilabel_log_loss"
    else:
        Y, loss_name = np.eye(3)[np.arange(b) % 3], loss
    s = sw / sw.sum()
    e, Q = naive_residual_and_curvature(dense.forward(X), Y, s, loss_name)
    theta = dense.theta()
    reg = REGULARIZERS["pseudo_huber"](0.8)
    grad_g, hess_g = reg.derivatives(theta)
    grad_g *= 1e-3
    # H = λ_H ḡ'': the paper's λ_H = τ; the default full-batch damping's
    # λ_H = max(τ, min(0.01, 10 / Σ sample_weight))
    H = (1e-3 if step == "paper" else max(1e-3, min(0.01, 10 / sw.sum()))) * hess_g
    if step == "default":
        H = naive_per_unit(dense, H)
        if loss_name == "log_loss":
            Q = naive_true_vs_rest(dense.forward(X), Y, s)
    direction = dense_directions(dense.jacobian(X), Q, e, grad_g, H)[0]
    M_g = 2 * 0.8**-0.7 * theta.size**0.2
    alpha = min(1.0, 0.95 / (1 + M_g * np.sqrt(np.sum(grad_g**2 / H))))
    expected = dense.with_theta(theta - alpha * direction)
    np.testing.assert_allclose(est.hidden_weights_, expected.U, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.output_weights_, expected.V, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.hidden_intercept_, expected.b_h, rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_allclose(est.output_intercept_, expected.b_o, rtol=1e-9,
                               atol=1e-12)
    assert est.n_iter_ == 1 and est.t_ == 1


@pytest.mark.parametrize("tau, path", [(1.0, "float32"), (1e-4, "refined"),
                                       (1e-8, "float64")])
@pytest.mark.parametrize("K", [1, 3])
def test_float32_dual_step_matches_float64_solve(tau, path, K, monkeypatch):
    """The float32 dual step (float32 Gram, float64 Cholesky, mixed-precision
    refinement, float64 fallback) against the float64 solve of the same
    float32-rounded problem, from well- to ill-conditioned (μ = √n)."""
    from sklearn_ggn._network import ForwardCache

    b, n, d = 80, 40, 5
    loss = "squared_error" if K == 1 else "log_loss"
    net, theta, _, X, Y, s = make_problem(K=K, d=d, n=n, b=b, loss=loss, seed=3)
    reg = REGULARIZERS["pseudo_huber"](np.sqrt(n))

    def inputs(dtype):
        th = theta.astype(np.float32).astype(dtype)
        Xa = net.augment(X.astype(np.float32).astype(dtype))
        cache = net.forward(th, Xa)
        if dtype == np.float64:  # the float32 forward pass, promoted
            c32 = net.forward(theta.astype(np.float32),
                              net.augment(X.astype(np.float32)))
            cache = ForwardCache(*(None if a is None else a.astype(np.float64)
                                   for a in (c32.Xa, c32.rho, c32.rho_d,
                                             c32.outputs)))
        residual, factor = LOSSES[loss]().residual_and_factor(
            cache.outputs, Y.astype(dtype), s.astype(dtype))
        if dtype == np.float64:
            r32, f32 = LOSSES[loss]().residual_and_factor(
                cache.outputs.astype(np.float32), Y.astype(np.float32),
                s.astype(np.float32))
            residual, factor = r32.astype(np.float64), f32.astype(np.float64)
        grad_g, D, _ = reg.step_quantities(th.astype(np.float32), tau, tau)
        return (th, cache, residual, factor, grad_g.astype(dtype), D.astype(dtype))

    calls = []
    for name in ("_refine_mixed", "_float64_direction"):
        original = getattr(Linearization, name)
        monkeypatch.setattr(Linearization, name, lambda *a, _f=original, _n=name, **k:
                            calls.append(_n) or _f(*a, **k))
    d64, _ = ggn_direction(net, *inputs(np.float64), "dual")
    assert not calls
    d32, r32 = ggn_direction(net, *inputs(np.float32), "dual")
    assert d32.dtype == r32.dtype == np.float32
    err = np.linalg.norm(d32 - d64) / np.linalg.norm(d64)
    if path == "float32":  # well-conditioned: float32 solve, no refinement
        assert calls == []
        assert err <= 1e-4
    else:
        assert calls == {"refined": ["_refine_mixed"],
                         "float64": ["_float64_direction"]}[path]
        assert err <= 1e-6  # float32 storage precision of d


@pytest.mark.parametrize("Est", [GGNScoreRegressor, GGNScoreClassifier])
@pytest.mark.parametrize("batch_size", [None, 16])
def test_float32_stays_float32(Est, batch_size):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int) if Est is GGNScoreClassifier else X[:, 0] ** 2

    def fit(X, **kw):
        est = Est(n_hidden=16, max_iter=5, tol=0, batch_size=batch_size,
                  random_state=0, **kw)
        with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
            return est.fit(X, y)

    est = fit(X)
    for name in ("hidden_weights_", "output_weights_", "hidden_intercept_",
                 "output_intercept_"):
        assert getattr(est, name).dtype == np.float32
    out = est.decision_function(X) if Est is GGNScoreClassifier else est.predict(X)
    assert out.dtype == np.float32 and np.all(np.isfinite(out))
    # With the exact curvature H = tau * g'' (tau = 1e-4) the dual system is
    # ill-conditioned and float32 trajectories drift from float64 ones; in full
    # batch the objective they reach stays the same (mini-batch steps that
    # nearly interpolate each batch are too erratic to compare).
    if batch_size is None:
        ref = fit(X.astype(np.float64))
        np.testing.assert_allclose(est.loss_curve_, ref.loss_curve_, rtol=0.05)
    # At tau = 1e-6 the system is too ill-conditioned for float32 alone; the
    # float32 step is refined in float64 (dual) or formed in float64
    # (primal), so the float32 fit reaches the same objective.
    if batch_size is None:
        for solver in ("dual", "primal"):
            low, high = (fit(X_, tau=1e-6, linear_solver=solver)
                         for X_ in (X, X.astype(np.float64)))
            assert low.loss_curve_[-1] == pytest.approx(high.loss_curve_[-1],
                                                        rel=0.05)
    # A well-conditioned system (damping=1) follows the float64 trajectory.
    est, ref = fit(X, damping=1.0), fit(X.astype(np.float64), damping=1.0)
    np.testing.assert_allclose(est.hidden_weights_, ref.hidden_weights_,
                               rtol=1e-4, atol=1e-5)


def test_large_cholesky_path_runs_on_one_blas_thread(monkeypatch):
    """Systems of order ≥ LARGE_CHOLESKY are factorized with one BLAS thread
    (OpenBLAS's threaded potrf crashed at order 16 128); same factor."""
    from threadpoolctl import threadpool_info

    import sklearn_ggn.engine._linearization as solver

    rng = np.random.default_rng(0)
    B = rng.standard_normal((40, 40))
    system = B @ B.T + 40 * np.eye(40)
    small = solver.cholesky(system)
    seen = []
    original = solver.one_blas_thread

    def spy():
        limiter = original()
        seen.append(1)
        return limiter

    factorize = np.linalg.cholesky

    def threads_in_potrf(system):
        seen.append({i["num_threads"] for i in threadpool_info()
                     if i["user_api"] == "blas"})
        return factorize(system)

    monkeypatch.setattr(solver, "one_blas_thread", spy)
    monkeypatch.setattr(solver, "SMALL_CHOLESKY", 20)
    middle = solver.cholesky(system)  # NumPy's, on the caller's threads
    assert seen == []
    monkeypatch.setattr(solver, "LARGE_CHOLESKY", 30)
    monkeypatch.setattr(solver.np.linalg, "cholesky", threads_in_potrf)
    large = solver.cholesky(system)
    assert seen == [1, {1}]
    for L in (middle, large):
        np.testing.assert_allclose(L, small, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(L @ L.T, system, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_small_cholesky_is_lower_triangular_and_rejects_indefinite(dtype):
    """The direct LAPACK path for small systems: a C-contiguous lower factor
    (upper triangle zero) in the system's dtype, the system left intact, and
    StepFailure for an indefinite or non-finite system."""
    import sklearn_ggn.engine._linearization as solver

    rng = np.random.default_rng(1)
    B = rng.standard_normal((12, 12))
    system = (B @ B.T + 12 * np.eye(12)).astype(dtype)
    before = system.copy()
    L = solver.cholesky(system)
    assert L.dtype == dtype and L.flags.c_contiguous
    np.testing.assert_array_equal(np.triu(L, 1), 0)
    np.testing.assert_array_equal(system, before)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(L @ L.T, system, rtol=rtol, atol=rtol * 12)
    indefinite = system.copy()
    indefinite[3, 3] = -1.0
    with pytest.raises(solver.StepFailure, match="positive definite"):
        solver.cholesky(indefinite)
    system[0, 1] = np.nan
    with pytest.raises(solver.StepFailure, match="non-finite"):
        solver.cholesky(system)
