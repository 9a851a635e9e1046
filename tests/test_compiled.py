"""The compiled step (engine/_compiled.py) is the NumPy route's step.

Every configuration is solved twice from the same θ₀ and random state, once
with ``compiled=True`` and once on the NumPy route (``Problem.linearize``,
``Linearization.direction``), and everything the solver reports is
compared: parameters, per-epoch records, status and reason, steps taken and
the adapted damping state. They differ by round-off only (both call the same
loss, regularizer, activation and Gram kernels; a few sums run in another
order), so the tolerance is tight. Both step structures are covered: the
exact step (``curvature="exact", hessian="diagonal"``) and the structured
default (per-unit H, true-vs-rest curvature).
"""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_ggn.engine import (
    LOSSES,
    REGULARIZERS,
    AdaptiveDamping,
    AdaptiveStepSize,
    ArmijoLineSearch,
    Batching,
    FixedDamping,
    GGNScoreSolver,
    Problem,
    SolverState,
    TwoLayerNetwork,
)
from sklearn_ggn.engine._compiled import compiled_epoch_arguments


def _data(loss, K, n=90, d=5, seed=0, weights="uniform"):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if loss == "log_loss":
        labels = (X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.3).astype(int) if K == 1 else \
            rng.integers(0, K, n)
        Y = labels[:, None].astype(float) if K == 1 else np.eye(K)[labels]
    elif loss == "poisson":
        Y = rng.poisson(np.exp(0.3 * X[:, :K]))
    elif loss == "multilabel_log_loss":
        Y = (X[:, :K] + 0.5 * rng.standard_normal((n, K)) > 0).astype(float)
    else:
        Y = np.column_stack([np.sin(X[:, c]) + 0.1 * rng.standard_normal(n)
                             for c in range(K)])
    w = np.ones(n)
    if weights == "random":
        w = rng.uniform(0.2, 3.0, n)
        w[rng.choice(n, 10, replace=False)] = 0.0
    elif weights == "zero_batch":  # a whole batch of zero weight is skipped
        w[:12] = 0.0
    return X, np.asarray(Y, dtype=float), w


def _problem(loss="log_loss", K=3, activation="silu", regularizer="pseudo_huber",
             fit_intercept=True, tau=1e-3, weights="uniform", n_hidden=7, seed=0,
             scale_x=1.0):
    X, Y, w = _data(loss, K, seed=seed, weights=weights)
    net = TwoLayerNetwork(X.shape[1], n_hidden, K, 1 / np.sqrt(n_hidden),
                          activation, fit_intercept)
    problem = Problem(net, LOSSES[loss](), REGULARIZERS[regularizer](2.0), tau,
                      scale_x * X, Y, w)
    theta0 = np.random.default_rng(seed + 1).standard_normal(net.n_params) * 0.5
    return problem, theta0


STRUCTURED = dict(curvature="true_vs_rest", hessian="per_unit")


def _solver(compiled, damping="adaptive", line_search=True, batch=12,
            max_iter=3, shuffle=True, step="exact"):
    damping = (AdaptiveDamping(unit=2.0) if damping == "adaptive"
               else FixedDamping(damping))
    structure = STRUCTURED if step == "structured" else {}
    return GGNScoreSolver(damping, AdaptiveStepSize(0.95),
                          ArmijoLineSearch() if line_search else None, "dual",
                          Batching(batch, shuffle), max_iter, compiled=compiled,
                          **structure)


def _solve_both(problem, theta0, **solver_kw):
    results = []
    for compiled in (True, False):
        solver = _solver(compiled, **solver_kw)
        result = solver.solve(problem, theta0, np.random.RandomState(0))
        results.append((result, solver))
    return results


def _assert_same(results, rtol=1e-9, normwise=False):
    (ours, s_ours), (ref, s_ref) = results
    assert ours.status == ref.status and ours.reason == ref.reason
    if normwise:  # round-off amplified by the conditioning: compare norms
        assert (np.linalg.norm(ours.theta - ref.theta)
                <= rtol * np.linalg.norm(ref.theta))
    else:
        np.testing.assert_allclose(ours.theta, ref.theta, rtol=rtol, atol=1e-12)
    assert len(ours.history) == len(ref.history)
    for a, b in zip(ours.history, ref.history):
        assert set(a) == set(b)
        for key in a:
            if key != "time":
                assert a[key] == pytest.approx(b[key], rel=rtol, abs=1e-12), key
    assert ours.state.n_steps == ref.state.n_steps
    assert ours.state.n_iter == ref.state.n_iter
    assert ours.state.initial_objective == pytest.approx(
        ref.state.initial_objective, rel=rtol)
    if isinstance(s_ours.damping, AdaptiveDamping):
        assert s_ours.damping.lam == pytest.approx(s_ref.damping.lam, rel=rtol)
        assert s_ours.damping.n_rejected == s_ref.damping.n_rejected
        assert s_ours.damping.floor == pytest.approx(s_ref.damping.floor, rel=rtol)


@pytest.mark.parametrize("loss,K", [("log_loss", 2), ("log_loss", 4),
                                    ("squared_error", 2), ("squared_error", 3),
                                    ("poisson", 2), ("multilabel_log_loss", 3)])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_compiled_epoch_equals_python_epoch_losses(loss, K, fit_intercept):
    problem, theta0 = _problem(loss, K, fit_intercept=fit_intercept)
    assert compiled_epoch_arguments(_prepared(problem), problem) is not None
    _assert_same(_solve_both(problem, theta0))


@pytest.mark.parametrize("loss", ["log_loss", "squared_error"])
def test_compiled_sigmoid_and_single_output_kernels(loss):
    """One output runs the Python loop in a fit (its batches of 256 amortize
    it); the compiled code still handles K = 1 (the sigmoid's factor, the
    pairwise Gram) and equals the Python epoch when called directly."""
    from sklearn_ggn.engine import _compiled

    problem, theta0 = _problem(loss, 1)
    solver = _solver(True)
    solver.prepare(problem, SolverState())
    assert solver._compiled is None  # a fit takes the Python loop
    problem.network.n_outputs = 2  # pass the gate, then restore K = 1
    arguments = compiled_epoch_arguments(solver, problem)
    problem.network.n_outputs = 1
    model = arguments["model"]
    arguments["model"] = ((7, 1) + model[0][2:],) + model[1:]
    arguments["n_params"] = problem.network.n_params
    batches = solver.batching.epoch(problem.n_samples, np.random.RandomState(0))
    ours = _compiled.run_compiled_epoch(arguments, solver.damping, theta0,
                                        batches, SolverState())
    python = _solver(False)
    python.prepare(problem, SolverState())
    theta, record = python._epoch(problem, theta0, np.random.RandomState(0),
                                  SolverState())
    assert ours[0] == 0
    np.testing.assert_allclose(ours[2], theta, rtol=1e-9, atol=1e-12)
    assert ours[3][0] / ours[4] == pytest.approx(record["objective"], rel=1e-9)


def _prepared(problem):
    solver = _solver(True)
    solver.prepare(problem, SolverState())
    return solver


@pytest.mark.parametrize("activation", ["silu", "relu", "tanh", "sigmoid",
                                        "softplus", "identity"])
@pytest.mark.parametrize("regularizer", ["pseudo_huber", "ostrovskii_bach", "l2"])
def test_compiled_epoch_equals_python_epoch_activations_regularizers(
        activation, regularizer):
    problem, theta0 = _problem("log_loss", 3, activation=activation,
                               regularizer=regularizer)
    _assert_same(_solve_both(problem, theta0))


@pytest.mark.parametrize("weights", ["random", "zero_batch"])
@pytest.mark.parametrize("damping,line_search", [("adaptive", True),
                                                 ("adaptive", False),
                                                 (1.0, True), (0.3, False)])
def test_compiled_epoch_equals_python_epoch_weights_and_strategies(
        weights, damping, line_search):
    problem, theta0 = _problem("log_loss", 3, weights=weights)
    _assert_same(_solve_both(problem, theta0, damping=damping,
                             line_search=line_search, shuffle=weights == "random"))


def test_compiled_epoch_rejects_steps_like_the_python_epoch():
    """Small batches and a weak initial damping: the adaptive test undoes
    steps; both paths undo the same ones (same λ, same count)."""
    problem, theta0 = _problem("log_loss", 4, tau=1e-4, n_hidden=12)
    results = _solve_both(problem, theta0, batch=3, max_iter=4)
    assert results[1][1].damping.n_rejected > 0  # the case is exercised
    _assert_same(results)


def _solve_both_counting_refinements(monkeypatch, problem, theta0, **solver_kw):
    """``_solve_both`` and how often the NumPy route refined a direction."""
    from sklearn_ggn.engine import _linearization

    calls = []
    original = _linearization.Linearization.primal_residual

    def spy(self, d, r):
        calls.append(1)
        return original(self, d, r)

    monkeypatch.setattr(_linearization.Linearization, "primal_residual", spy)
    results = _solve_both(problem, theta0, **solver_kw)
    monkeypatch.undo()
    return results, len(calls)


def test_compiled_epoch_refines_like_the_python_epoch(monkeypatch):
    """Tiny τ with a fixed tiny damping: D is huge, ‖D r‖/‖d‖ exceeds the
    refinement threshold and both paths refine the dual direction."""
    problem, theta0 = _problem("squared_error", 2, tau=1e-6)
    results, refined = _solve_both_counting_refinements(
        monkeypatch, problem, theta0, damping=1e-6, max_iter=2)
    assert refined  # the Python path refined
    # the dual formula loses log10(‖D r‖/‖d‖) digits before refinement, so
    # the two paths agree to the refined solution's accuracy, norm-wise
    _assert_same(results, rtol=1e-7, normwise=True)


@pytest.mark.parametrize("loss,reason", [("log_loss", "objective grew"),
                                         ("poisson", "non-finite objective")])
def test_compiled_epoch_diverges_like_the_python_epoch(loss, reason):
    """Inputs of size 100, no line search, little damping: both paths end
    the fit as diverged with the same reason and the parameters of the last
    complete epoch."""
    problem, theta0 = _problem(loss, 2 if loss == "poisson" else 3, tau=1e-8,
                               scale_x=100.0)
    results = _solve_both(problem, theta0, damping=1e-3, line_search=False,
                          batch=3)
    assert results[1][0].status == "diverged"
    assert results[1][0].reason.startswith(reason)
    _assert_same(results)


def test_compiled_epoch_carries_state_across_solves():
    """Warm starts: the damping state and the divergence reference go on."""
    problem, theta0 = _problem("log_loss", 3)
    out = []
    for compiled in (True, False):
        solver = _solver(compiled, max_iter=2)
        state = SolverState()
        first = solver.solve(problem, theta0, np.random.RandomState(0), state=state)
        second = solver.solve(problem, first.theta, np.random.RandomState(1),
                              state=state)
        out.append((second, solver))
    _assert_same(out)


def test_what_runs_in_python():
    """The exact step in float32, sparse inputs, the primal form, full batch
    and custom losses take the NumPy route; float64 mini-batch fits of the
    exact step compile."""
    problem, _ = _problem("log_loss", 3)
    assert compiled_epoch_arguments(_prepared(problem), problem) is not None
    off = _prepared(problem)
    off.compiled = False
    assert compiled_epoch_arguments(off, problem) is None

    X, Y, w = _data("log_loss", 3)
    net = TwoLayerNetwork(5, 7, 3, 0.3, "silu", True)
    cases = {
        "float32": Problem(net, LOSSES["log_loss"](), REGULARIZERS["pseudo_huber"](2.0),
                           1e-3, X.astype(np.float32), Y.astype(np.float32), w),
        "sparse": Problem(net, LOSSES["log_loss"](), REGULARIZERS["pseudo_huber"](2.0),
                          1e-3, sp.csr_matrix(X), Y, w),
    }

    class MyLoss(LOSSES["log_loss"]):
        pass

    cases["custom loss"] = Problem(net, MyLoss(), REGULARIZERS["pseudo_huber"](2.0),
                                   1e-3, X, Y, w)
    for name, prob in cases.items():
        assert compiled_epoch_arguments(_prepared(prob), prob) is None, name
    primal = _solver(True)
    primal.linear_solver = "primal"
    primal.prepare(problem, SolverState())
    assert primal._compiled is None
    full = _solver(True, batch=10_000)
    full.prepare(problem, SolverState())
    assert full._compiled is None


@pytest.mark.parametrize("segment", [1, 2, 7])
def test_compiled_epoch_in_segments_is_the_same_epoch(monkeypatch, segment):
    """The compiled epoch runs in segments of batches (so that Ctrl-C is
    seen between them); the state carried across segments (θ, the previous
    θ of the damping test, g of both, sums, λ) makes it the same epoch."""
    from sklearn_ggn.engine import _compiled

    problem, theta0 = _problem("log_loss", 4, tau=1e-4, n_hidden=12)
    whole = _solve_both(problem, theta0, batch=3, max_iter=3)
    monkeypatch.setattr(_compiled, "SEGMENT_BATCHES", segment)
    solver = _solver(True, batch=3, max_iter=3)
    result = solver.solve(problem, theta0, np.random.RandomState(0))
    assert whole[1][1].damping.n_rejected > 0
    _assert_same([(result, solver), whole[1]])
    np.testing.assert_array_equal(result.theta, whole[0][0].theta)


def test_an_interrupt_between_segments_leaves_the_estimator_unchanged(monkeypatch):
    """A KeyboardInterrupt raised between two segments of a compiled epoch
    (where Python sees Ctrl-C) ends the fit and the transactional fit
    restores the estimator."""
    import pickle
    import warnings

    from sklearn_ggn import GGNScoreClassifier
    from sklearn_ggn.engine import _compiled

    X, Y, _ = _data("log_loss", 3, n=120)
    y = Y.argmax(axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = GGNScoreClassifier(n_hidden=6, batch_size=4, max_iter=2,
                                 random_state=0, curvature="exact",
                                 hessian="diagonal").fit(X, y)
    before = pickle.dumps(clf)
    calls = []
    original = _compiled.minibatch_epoch

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(_compiled, "SEGMENT_BATCHES", 5)
    monkeypatch.setattr(_compiled, "minibatch_epoch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        clf.fit(X[::-1], y[::-1])
    assert len(calls) == 3
    assert pickle.dumps(clf) == before


def test_what_runs_in_python_subclasses_and_large_batches():
    """Subclasses of the built-in regularizers or of Problem may override
    what the compiled code computes itself; batches whose all-pairs Gram
    would exceed the Python path's memory blocks (or whose Cholesky order
    needs the one-thread guard) run the Python loop too."""
    problem, _ = _problem("log_loss", 3)

    class MyHuber(REGULARIZERS["pseudo_huber"]):
        def value_sum(self, t):
            return 2 * super().value_sum(t)

    class MyProblem(Problem):
        pass

    X, Y, w = _data("log_loss", 3)
    net = problem.network
    for prob in (Problem(net, LOSSES["log_loss"](), MyHuber(2.0), 1e-3, X, Y, w),
                 MyProblem(net, LOSSES["log_loss"](), REGULARIZERS["pseudo_huber"](2.0),
                           1e-3, X, Y, w)):
        assert compiled_epoch_arguments(_prepared(prob), prob) is None
    wide = TwoLayerNetwork(2000, 100, 3, 0.1, "silu", True)
    rng = np.random.default_rng(0)
    big = Problem(wide, LOSSES["log_loss"](), REGULARIZERS["pseudo_huber"](2.0),
                  1e-3, rng.standard_normal((600, 2000)), np.eye(3)[np.arange(600) % 3],
                  np.ones(600))
    solver = _solver(True, batch=300)
    solver.prepare(big, SolverState())
    assert solver._compiled is None  # 45 000 pairs × 2 101 values > 64 MB
    solver = _solver(True, batch=20)
    solver.prepare(big, SolverState())
    assert solver._compiled is not None


def test_compiled_epoch_checks_shapes():
    """numba does not check bounds: a θ of the wrong length is a clear error."""
    from sklearn_ggn.engine import _compiled

    problem, theta0 = _problem("log_loss", 3)
    solver = _prepared(problem)
    batches = solver.batching.epoch(problem.n_samples, np.random.RandomState(0))
    with pytest.raises(ValueError, match="parameters"):
        _compiled.run_compiled_epoch(solver._compiled, solver.damping, theta0[:-3],
                                     batches, SolverState())


def test_poisson_risk_kernel_overflows_where_numpy_does():
    """The Poisson mean overflows to inf exactly where ``np.exp`` does, in
    float64 and in float32, against the risk written out with NumPy."""
    from scipy.special import xlogy

    from sklearn_ggn._losses import PoissonLoss, risk_kernel

    for dtype, edge in ((np.float64, 709.78), (np.float32, 88.72)):
        POISSON = PoissonLoss().kernel(dtype)
        F = np.array([[edge, 0.0], [edge + 0.1, 1.0]], dtype=dtype)
        Y = np.ones((2, 2), dtype=dtype)
        for rows in ([0], [1]):
            s = np.ones(1, dtype=dtype)
            ours = risk_kernel(F[rows], Y[rows], s, POISSON)
            with np.errstate(over="ignore"):
                mean = np.exp(F[rows])
            ref = float(np.sum(mean - Y[rows] * F[rows]
                               + (xlogy(Y[rows], Y[rows]) - Y[rows]))) / 2
            assert np.isinf(ours) == np.isinf(ref)
            if np.isfinite(ref):
                assert ours == pytest.approx(ref, rel=1e-6)
        assert np.isfinite(risk_kernel(F[[0]], Y[[0]], np.ones(1, dtype), POISSON))


# ------------------------------------------------ a loss added by registration
@pytest.fixture
def log_cosh_loss():
    """A loss added as one function plus its registration: the
    log-cosh loss ``ℓ = (1/K) Σ_c log cosh(F_c − y_c)``, whose residual is
    ``s tanh(F − y)/K`` and whose curvature ``s sech²(F − y)/K`` has the
    diagonal factor ``a = sqrt(s/K) sech(F − y)``."""
    import math

    from numba import njit

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


@pytest.mark.parametrize("K,step", [(2, "exact"), (3, "exact"), (1, "structured")])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_registered_loss_fits_on_both_drivers(log_cosh_loss, K, step, dtype):
    if step == "exact" and dtype == np.float32:
        pytest.skip("the compiled exact step is float64 only")
    X, Y, w = _data("squared_error", K)
    net = TwoLayerNetwork(X.shape[1], 7, K, 1 / np.sqrt(7), "silu", True)
    problem = Problem(net, log_cosh_loss(), REGULARIZERS["pseudo_huber"](2.0), 1e-3,
                      X.astype(dtype), Y.astype(dtype), w.astype(dtype))
    theta0 = (np.random.default_rng(1).standard_normal(net.n_params) * 0.5
              ).astype(dtype)
    # the loss's residual and factor are its risk's derivatives (the
    # function's two modes agree), by central differences in float64
    if dtype == np.float64:
        F = np.random.default_rng(2).standard_normal((5, K))
        s = np.full(5, 0.2)
        e, parts = problem.loss.residual_and_parts(F, Y[:5], s)
        step_fd = 1e-6
        for k, c in [(0, 0), (3, K - 1)]:
            Fp, Fm = F.copy(), F.copy()
            Fp[k, c] += step_fd
            Fm[k, c] -= step_fd
            fd = (problem.loss.risk(Fp, Y[:5], s)
                  - problem.loss.risk(Fm, Y[:5], s)) / (2 * step_fd)
            assert e[k, c] == pytest.approx(fd, rel=1e-6)
            ep = problem.loss.residual_and_parts(Fp, Y[:5], s)[0]
            em = problem.loss.residual_and_parts(Fm, Y[:5], s)[0]
            assert parts.a[k, c] ** 2 == pytest.approx(
                (ep[k, c] - em[k, c]) / (2 * step_fd), rel=1e-5)
    solver_kw = dict(step=step, max_iter=3)
    solver = _solver(True, **solver_kw)
    solver.prepare(problem, SolverState())
    assert compiled_epoch_arguments(solver, problem) is not None
    results = _solve_both(problem, theta0, **solver_kw)
    assert results[0][0].history[-1]["objective"] < results[0][0].history[0][
        "objective"]
    if dtype == np.float64:
        _assert_same(results)
    else:  # float32 round-off, amplified by the steps
        _assert_same(results, rtol=1e-3, normwise=True)


# ------------------------------------------------ the structured (default) step
STRUCTURED_CASES = [("log_loss", 3), ("log_loss", 5), ("log_loss", 1),
                    ("squared_error", 1), ("poisson", 1),
                    ("multilabel_log_loss", 1)]


def _structure_of(problem, **solver_kw):
    from sklearn_ggn.engine import _compiled

    solver = _solver(True, **solver_kw)
    solver.prepare(problem, SolverState())
    if solver._compiled is None:
        return None
    return {_compiled.EXACT: "exact", _compiled.UNIT: "unit"}[
        solver._compiled["structure"]]


@pytest.mark.parametrize("loss,K", STRUCTURED_CASES)
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_structured_compiled_step_equals_numpy_route(loss, K, fit_intercept):
    problem, theta0 = _problem(loss, K, fit_intercept=fit_intercept)
    assert _structure_of(problem, step="structured") == "unit"
    _assert_same(_solve_both(problem, theta0, step="structured"))


@pytest.mark.parametrize("activation", ["silu", "relu", "tanh", "identity"])
@pytest.mark.parametrize("regularizer", ["pseudo_huber", "ostrovskii_bach", "l2"])
def test_structured_compiled_step_activations_regularizers(activation, regularizer):
    problem, theta0 = _problem("log_loss", 3, activation=activation,
                               regularizer=regularizer)
    _assert_same(_solve_both(problem, theta0, step="structured"))


@pytest.mark.parametrize("weights", ["random", "zero_batch"])
@pytest.mark.parametrize("damping,line_search", [("adaptive", True),
                                                 ("adaptive", False),
                                                 (1.0, True), (0.3, False)])
def test_structured_compiled_step_weights_and_strategies(weights, damping,
                                                         line_search):
    problem, theta0 = _problem("log_loss", 3, weights=weights)
    _assert_same(_solve_both(problem, theta0, damping=damping, step="structured",
                             line_search=line_search,
                             shuffle=weights == "random"))


def test_structured_compiled_step_rejects_and_refines_like_numpy(monkeypatch):
    """Tiny batches undo steps; a tiny τ with a tiny fixed damping makes D
    huge, so the solve without the explicit gradient is declined and the
    dual solve of the explicit gradient is refined — on both routes."""
    problem, theta0 = _problem("log_loss", 4, tau=1e-4, n_hidden=12)
    results = _solve_both(problem, theta0, batch=3, max_iter=4, step="structured")
    assert results[1][1].damping.n_rejected > 0
    _assert_same(results)
    problem, theta0 = _problem("squared_error", 1, tau=1e-6)
    results, refined = _solve_both_counting_refinements(
        monkeypatch, problem, theta0, damping=1e-6, max_iter=2, step="structured")
    assert refined  # the NumPy route refined
    _assert_same(results, rtol=1e-7, normwise=True)


@pytest.mark.parametrize("loss,reason", [("log_loss", "objective grew"),
                                         ("poisson", "non-finite objective")])
def test_structured_compiled_step_diverges_like_numpy(loss, reason):
    problem, theta0 = _problem(loss, 3 if loss == "log_loss" else 1, tau=1e-8,
                               scale_x=100.0)
    results = _solve_both(problem, theta0, damping=1e-3, line_search=False,
                          batch=3, step="structured")
    assert results[1][0].status == "diverged"
    assert results[1][0].reason.startswith(reason)
    _assert_same(results)


def test_structured_compiled_step_float32():
    """float32 runs compiled too; its step is the float64 one to float32
    accuracy (a direction whose estimated error is too large is computed
    again in float64), and the NumPy route's float32 step (with
    mixed-precision refinement instead) agrees as closely."""
    from sklearn_ggn.engine import _compiled

    problem, theta0 = _problem("log_loss", 3)
    X, Y, w = _data("log_loss", 3)
    net = problem.network
    single = Problem(net, problem.loss, problem.regularizer, problem.tau,
                     X.astype(np.float32), Y.astype(np.float32),
                     w.astype(np.float32))
    assert _structure_of(single, step="structured") == "unit"
    reference = _solver(True, step="structured").solve(
        problem, theta0, np.random.RandomState(0))
    out = {}
    for compiled in (True, False):
        solver = _solver(compiled, step="structured")
        result = solver.solve(single, theta0.astype(np.float32),
                              np.random.RandomState(0))
        assert result.theta.dtype == np.float32
        out[compiled] = result.theta
    scale = np.linalg.norm(reference.theta)
    for theta in out.values():
        assert np.linalg.norm(theta - reference.theta) <= 1e-4 * scale


def test_structured_float32_direction_falls_back_to_float64():
    """A float32 structured direction whose error estimate exceeds the
    tolerance (here ‖D r‖/‖d‖ is huge: tiny τ and damping) asks for float64
    (status FLOAT64), and the step's direction is then the float64 one
    rounded to float32."""
    from sklearn_ggn.engine import _compiled

    problem, theta0 = _problem("squared_error", 1, tau=1e-6)
    solver = _solver(True, damping=1e-6, step="structured")
    solver.prepare(problem, SolverState())
    assert solver._compiled["structure"] == _compiled.UNIT
    net, reduced, reg_code, mu, tau, _ = solver._compiled["model"]
    Xa, Y, w = solver._compiled["data"]
    s = w[:12] / w[:12].sum()
    directions = {}
    for dtype in (np.float64, np.float32):
        fn, fn64 = problem.loss.kernel(dtype), problem.loss.kernel(np.float64)
        args = [a.astype(dtype) for a in (theta0, Xa[:12], Y[:12], s)]
        _, _, rho, rho_d, F = _compiled._objective(args[0], 0.0, *args[1:], net,
                                                   fn, True)
        ws = np.empty((9, theta0.size), dtype=dtype)
        status = _compiled._unit_direction(*args, rho, rho_d, F, net, fn,
                                           reduced, reg_code, mu, tau, 1e-6, ws)[0]
        if dtype == np.float32:
            assert status == _compiled.FLOAT64
        ws = np.empty((9, theta0.size), dtype=dtype)
        status, d, _, _ = _compiled._direction(None, *args, rho, rho_d, F,
                                               net, fn, fn64, reduced, reg_code,
                                               mu, tau, 1e-6, ws)
        assert status == _compiled.OK
        directions[dtype] = d.copy()
    np.testing.assert_allclose(
        directions[np.float32], directions[np.float64].astype(np.float32),
        rtol=1e-3, atol=1e-3 * np.abs(directions[np.float64]).max())
