"""The reduced output curvature and the per-unit H against dense references.

Every step option still solves ``(Jᵀ Q̃ J + H̃) d = Jᵀ e + ∇g`` for the Q̃ and
H̃ it names; the references here build Q̃ and H̃ densely from their
definitions, independently of the package's factors and kernels.
"""

import numpy as np
import pytest
from naive import (
    dense_directions,
    naive_per_unit,
    naive_residual_and_curvature,
    naive_true_vs_rest,
)
from test_numerics import RTOL, make_problem, to_dense_layout

from sklearn_ggn import _network, _plan
from sklearn_ggn._losses import LOSSES, RankFactor
from sklearn_ggn._regularizers import REGULARIZERS
from sklearn_ggn.engine import Batch, Problem

CASES = [(K, loss, fi, w) for K, loss in [(1, "squared_error"), (3, "squared_error"),
                                          (1, "log_loss"), (4, "log_loss"),
                                          (3, "poisson")]
         for fi in (True, False) for w in (False, True)]


@pytest.mark.parametrize("K,loss,fit_intercept,weighted", CASES)
@pytest.mark.parametrize("curvature", ["exact", "true_vs_rest"])
@pytest.mark.parametrize("hessian", ["diagonal", "per_unit"])
def test_step_options_equal_dense_reference(K, loss, fit_intercept, weighted,
                                            curvature, hessian, monkeypatch):
    net, theta, dense, X, Y, s = make_problem(K=K, loss=loss,
                                              fit_intercept=fit_intercept,
                                              weighted=weighted, b=6, n=6)
    tau, mu, scale = 1e-2, 0.5, 0.3
    reg = REGULARIZERS["pseudo_huber"](mu)
    problem = Problem(net, LOSSES[loss](), reg, tau, X, Y, s)
    batch = Batch(problem.Xa, Y, s, 1.0)
    evaluation = problem.evaluate(theta, batch)
    lin, eta = problem.linearize(theta, batch, evaluation, scale,
                                 curvature=curvature, hessian=hessian)
    hits = []
    # dense reference
    grad_g, hess_g = reg.derivatives(theta)
    grad_g = tau * to_dense_layout(net, grad_g)
    H = naive_per_unit(dense, scale * to_dense_layout(net, hess_g))
    if hessian == "diagonal":
        H = scale * to_dense_layout(net, hess_g)
    e, Q = naive_residual_and_curvature(dense.forward(X), Y, s, loss)
    if curvature == "true_vs_rest" and loss == "log_loss" and K > 1:
        Q = naive_true_vs_rest(dense.forward(X), Y, s)
        # Q̃ ≤ Q: the dropped part is positive semidefinite
        _, Q_exact = naive_residual_and_curvature(dense.forward(X), Y, s, loss)
        assert np.linalg.eigvalsh(Q_exact - Q).min() > -1e-12
    J = dense.jacobian(X)
    refs = dense_directions(J, Q, e, grad_g, H)
    ref = refs[0]
    scale_ref = np.linalg.norm(ref)
    assert np.linalg.norm(refs[1] - ref) <= RTOL * scale_ref
    np.testing.assert_allclose(eta, np.sqrt(grad_g @ (grad_g / H)), rtol=1e-12)
    # the step's curvature: J̃ᵀ J̃ = Jᵀ Q̃ J through the products
    rng = np.random.default_rng(5)
    v = rng.standard_normal(net.n_params)
    JtJv = lin.vjp(lin.jvp(v))
    np.testing.assert_allclose(to_dense_layout(net, JtJv),
                               J.T @ Q @ J @ to_dense_layout(net, v),
                               rtol=1e-9, atol=1e-12)
    # the Gram: J̃ D J̃ᵀ has the eigenvalues of Q^{1/2} J D Jᵀ Q^{1/2}
    G = lin.gram()
    Dd = np.diag(1.0 / H)
    w_ref = np.linalg.eigvalsh(J @ Dd @ J.T @ Q)  # same nonzero spectrum
    w = np.linalg.eigvalsh(G)
    top = np.sort(np.real(np.linalg.eigvals(J @ Dd @ J.T @ Q)))[::-1][:w.size]
    np.testing.assert_allclose(np.sort(w)[::-1], top, rtol=1e-8,
                               atol=1e-10 * max(1.0, np.abs(w_ref).max()))
    for form in ("dual", "primal"):
        d = lin.direction(form)
        assert np.linalg.norm(to_dense_layout(net, d) - ref) <= RTOL * scale_ref, form
        slope = lin.cached_slope(d)
        if slope is not None:  # the solve without the explicit gradient
            assert form == "dual" and lin.rank == 1
            r = to_dense_layout(net, lin.gradient)
            np.testing.assert_allclose(slope, r @ to_dense_layout(net, d),
                                       rtol=1e-10)
            hits.append(1)
    if isinstance(lin.factor, RankFactor) and lin.rank == 1:
        assert hits, "the coefficient form was not exercised"
    # the blocked pair kernels at block boundaries (diagonal H)
    monkeypatch.setattr(_network, "_BLOCK_BYTES", 1)
    lin2, _ = problem.linearize(theta, batch, evaluation, scale,
                                curvature=curvature, hessian=hessian)
    np.testing.assert_allclose(lin2.gram(), G, rtol=1e-12, atol=1e-14)


def test_true_vs_rest_is_one_row_per_sample_and_keeps_the_gradient():
    net, theta, _, X, Y, s = make_problem(K=5, loss="log_loss", b=8, n=4)
    F = net.forward(theta, net.augment(X)).outputs
    loss = LOSSES["log_loss"]()
    e, factor = loss.residual_and_curvature(F, Y, s, "true_vs_rest")
    e_exact, _ = loss.residual_and_parts(F, Y, s)
    np.testing.assert_array_equal(e, e_exact)
    assert factor.columns.shape == (8, 5, 1)
    # the residual lies in the span of F_k (π − e_y = −q (e_y − r))
    for k in range(8):
        f = factor.columns[k, :, 0]
        coef = f @ e[k] / (f @ f)
        np.testing.assert_allclose(coef * f, e[k], atol=1e-15)


def test_true_vs_rest_at_a_certain_prediction_has_no_curvature():
    loss = LOSSES["log_loss"]()
    F = np.array([[800.0, 0.0, 0.0], [0.0, 1.0, 2.0]])
    Y = np.eye(3)[[0, 2]]
    s = np.array([0.5, 0.5])
    _, factor = loss.residual_and_curvature(F, Y, s, "true_vs_rest")
    assert np.all(np.isfinite(factor.columns))
    np.testing.assert_array_equal(factor.columns[0], 0.0)


@pytest.mark.parametrize("K,loss", [(1, "log_loss"), (4, "log_loss"),
                                    (3, "squared_error")])
@pytest.mark.parametrize("hessian", ["diagonal", "per_unit"])
def test_sparse_and_float32_take_the_same_step(K, loss, hessian):
    """The structured step on CSR inputs equals the dense one; in float32 it
    agrees with float64 to float32 precision."""
    import scipy.sparse as sp

    net, theta, _, X, Y, s = make_problem(K=K, loss=loss, b=9, d=6, n=5, seed=4)
    X[np.abs(X) < 0.7] = 0.0  # some structure for CSR
    reg = REGULARIZERS["pseudo_huber"](0.7)
    directions = {}
    for name, data, dtype in (("dense", X, np.float64),
                              ("sparse", sp.csr_matrix(X), np.float64),
                              ("float32", X.astype(np.float32), np.float32)):
        problem = Problem(net, LOSSES[loss](), reg, 1e-2, data,
                          Y.astype(dtype), s.astype(dtype))
        batch = Batch(problem.Xa, problem.Y, s.astype(dtype), 1.0)
        th = theta.astype(dtype)
        lin, _ = problem.linearize(th, batch, problem.evaluate(th, batch), 0.5,
                                   curvature="true_vs_rest", hessian=hessian)
        directions[name] = lin.direction("dual")
        assert directions[name].dtype == dtype
    ref = directions["dense"]
    np.testing.assert_allclose(directions["sparse"], ref, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(directions["float32"], ref, rtol=2e-3,
                               atol=2e-4 * np.abs(ref).max())


def test_the_cost_and_memory_model_knows_the_structured_step():
    """A full batch of 20 000 rows and 10 classes: the exact dual system
    (200 000 rows, 320 GB) does not fit, the true-vs-rest one (20 000 rows,
    3.2 GB) does; the structured Gram is cheaper than the exact one."""
    from sklearn_ggn import _memory

    args = ("dual", 20_000, 30, 100, 10)
    with pytest.raises(MemoryError, match="batch_size="):
        _memory.choose_linear_solver(*args, available_bytes=16 * 2**30)
    assert _memory.choose_linear_solver(*args, available_bytes=16 * 2**30,
                                        rank=1, per_unit=True) == "dual"
    exact = _memory.step_flops(128, 784, 100, 10)
    structured = _memory.step_flops(128, 784, 100, 10, rank=1, per_unit=True)
    assert structured["dual"] < exact["dual"] / 50
    net = make_problem(K=3, loss="log_loss")[0]
    from sklearn_ggn.engine import (
        AdaptiveStepSize,
        Batching,
        FixedDamping,
        GGNScoreSolver,
    )

    solver = GGNScoreSolver(FixedDamping(1.0), AdaptiveStepSize(0.95), None,
                            "auto", Batching(8, False), 1,
                            curvature="true_vs_rest", hessian="per_unit")
    problem = Problem(net, LOSSES["log_loss"](), REGULARIZERS["l2"](1.0), 1e-3,
                      np.zeros((8, 3)), np.eye(3)[np.arange(8) % 3], np.ones(8))
    assert solver.structure(problem) == {"rank": 1, "per_unit": True}
    problem.loss = LOSSES["squared_error"]()  # no reduced form: K rows
    assert solver.structure(problem) == {"rank": 3, "per_unit": True}


def test_stalled_epochs_end_a_fit_only_without_early_stopping():
    """With a validation score deciding (early stopping), the adaptive
    damping's stalled epochs raise the damping but do not end the fit."""
    from sklearn_ggn.engine import (
        AdaptiveDamping,
        AdaptiveStepSize,
        Batching,
        GGNScoreSolver,
    )

    rng = np.random.default_rng(0)
    X = rng.standard_normal((64, 3))
    Y = np.eye(3)[np.arange(64) % 3]
    net = make_problem(K=3, loss="log_loss", d=3, n=4)[0]
    problem = Problem(net, LOSSES["log_loss"](), REGULARIZERS["pseudo_huber"](2.0),
                      1e-3, X, Y, np.ones(64))
    theta0 = net.pack(rng.standard_normal((4, 3)), rng.standard_normal((4, 3)),
                      np.zeros(4), np.zeros(3))
    epochs = {}
    for ends in (True, False):
        # every epoch stalls (a 100 % improvement is asked), one ends the fit
        damping = AdaptiveDamping(2.0, stall=1.0, patience=1)
        solver = GGNScoreSolver(damping, AdaptiveStepSize(0.95), None, "dual",
                                Batching(16, True), 6, curvature="true_vs_rest",
                                hessian="per_unit", damping_ends_fit=ends)
        result = solver.solve(problem, theta0, np.random.RandomState(0))
        epochs[ends] = len(result.history)
        assert result.status == ("converged" if ends else "max_iter")
    assert epochs == {True: 2, False: 6}


def test_batch_rule_follows_the_steps_structure():
    """The structured batches (128 rows, full batch up to 512 or 1024) only
    for one row of the kernel system per sample; a step whose structure is
    the exact one (curvature changes nothing for multi-output squared error)
    keeps the exact rule, 256 // K rows."""
    from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

    def plan(est, n, K, incremental=False):
        X = np.zeros((n, 3))
        summary = est._summary(X, K, np.ones(n), float(n), incremental)
        return _plan.plan_fit(est.get_params(deep=False), summary)

    reg = GGNScoreRegressor()
    assert plan(reg, 5000, 1).batch_size == 128
    assert plan(reg, 900, 1).batch_size == 900  # GCV in full batch
    assert plan(reg, 900, 1).tau_rule == "select"
    # 20 outputs under the per-unit H: 20 rows per sample, the exact rule
    assert reg._step_structure(20) == {"rank": 20, "per_unit": True}
    assert plan(reg, 5000, 20).batch_size == max(1, 256 // 20)
    clf = GGNScoreClassifier()
    clf._multilabel = False
    assert plan(clf, 900, 5).batch_size == 128
    assert plan(clf, 900, 5).tau_rule == "mini_batch"
    assert not plan(clf, 900, 5).line_search  # the structured mini-batches
    assert plan(clf, 500, 5).batch_size == 500
    assert plan(clf, 500, 5).tau_rule == "samples"
    assert plan(clf, 500, 5, incremental=True).batch_size == 128
    exact = GGNScoreRegressor(hessian="diagonal")
    assert exact._step_structure(3) == {}
    assert plan(exact, 5000, 3).batch_size == 256 // 3
    assert plan(exact, 5000, 3).line_search  # the exact step keeps it
    gd = GGNScoreClassifier(solver="gd")
    assert gd._step_structure(5) == {}


def test_an_adapted_damping_carries_over_only_under_the_same_rules():
    import warnings

    from sklearn_ggn import GGNScoreClassifier

    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 4))
    y = np.arange(400) % 3
    clf = GGNScoreClassifier(n_hidden=6, batch_size=32, max_iter=2,
                             warm_start=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y)
        first = clf._solver_state.damping.first_epoch_objective
        clf.fit(X, y)
        # same rules: the adapted state carries (its first epoch is fit 1's)
        assert clf._solver_state.damping.first_epoch_objective == first
        assert clf._solver_state.damping.work_steps == 250
        clf.set_params(curvature="exact", hessian="diagonal")
        clf.fit(X, y)
    second = clf._solver_state.damping
    assert second.first_epoch_objective != first  # a fresh damping
    assert second.work_steps is None and second.reference_rows is None


def test_coefficients_decline_a_confidently_wrong_row():
    """c_k ~ sqrt(s q / π_y) for a tiny π_y: the solve then forms the
    gradient (the slope rᵀd = cᵀJ̃d would lose its digits)."""
    loss = LOSSES["log_loss"]()
    s = np.array([0.5, 0.5])
    Y = np.eye(3)[[0, 1]]
    for logits, usable in (([[0.0, 1.0, 0.5], [0.2, 1.0, 0.0]], True),
                           ([[-40.0, 0.0, 0.0], [0.2, 1.0, 0.0]], False)):
        e, factor = loss.residual_and_curvature(np.array(logits), Y, s,
                                                "true_vs_rest")
        assert (factor.coefficients(e) is not None) is usable
