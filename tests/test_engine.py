"""The engine's units on their own: no estimator involved unless stated."""

import warnings

import numpy as np
import pytest
from naive import DenseNetwork
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor
from sklearn_ggn._losses import SquaredError
from sklearn_ggn._network import ForwardCache, TwoLayerNetwork
from sklearn_ggn._regularizers import REGULARIZERS
from sklearn_ggn.engine import (
    AdaptiveDamping,
    AdaptiveStepSize,
    ArmijoLineSearch,
    Batching,
    FixedDamping,
    GGNScoreSolver,
    GradientDescentSolver,
    NoImprovement,
    Problem,
    SolverState,
    TrustDamping,
    choose_linear_solver,
    resolve_damping,
)


# ------------------------------------------------- a quadratic problem
class LinearModel:
    """Φ(x) = x·θ: the network interface of the engine for a linear model,
    so that squared error + ℓ2 is a quadratic with a closed-form minimizer."""

    def __init__(self, d):
        self.n_params = d
        # sizes for the memory estimate of choose_linear_solver
        self.n_features, self.n_hidden, self.n_outputs = d, 1, 1
        self.fit_intercept = False

    def augment(self, X):
        return np.ascontiguousarray(X)

    def step_costs(self, batch_size):
        return {"dual": 1.0, "primal": 2.0}

    def forward(self, theta, Xa, with_deriv=True):
        return ForwardCache(Xa, None, None, (Xa @ theta)[:, None])

    def gradient(self, theta, cache, residual):
        return cache.Xa.T @ residual[:, 0]

    def sensitivities(self, theta, cache, factor):
        # the built-in losses give the structured factor (FactorParts):
        # for one output A_k = diag(a_k) is the scalar a_k
        return factor.a[:, 0]

    def jvp(self, theta, cache, W, factor, v):
        return (W * (cache.Xa @ v))[:, None]

    def vjp(self, theta, cache, W, factor, y):
        return cache.Xa.T @ (W * y[:, 0])

    def gram(self, theta, cache, W, factor, D):
        Jt = W[:, None] * cache.Xa
        return (Jt * D) @ Jt.T

    def gauss_newton_matrix(self, theta, cache, W, factor):
        Jt = W[:, None] * cache.Xa
        return Jt.T @ Jt


def quadratic(n=50, d=4, tau=0.3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n)
    w = rng.uniform(0.5, 2.0, n)
    problem = Problem(LinearModel(d), SquaredError(), REGULARIZERS["l2"](1.0), tau,
                      X, y[:, None], w)
    s = w / w.sum()
    # ½ Σ s_k (x_k·θ − y_k)² + τ/2 ‖θ‖²  →  (Xᵀ S X + τ I) θ = Xᵀ S y
    minimizer = np.linalg.solve(X.T @ (s[:, None] * X) + tau * np.eye(d),
                                X.T @ (s * y))
    return problem, minimizer


@pytest.mark.parametrize("linear_solver", ["dual", "primal"])
def test_solver_minimizes_a_quadratic_without_an_estimator(linear_solver):
    """With H = ∇²g the GGN step on a quadratic is Newton's: one step with
    α = 1 lands on the minimizer, and the loop then stops for no improvement."""
    problem, minimizer = quadratic()
    solver = GGNScoreSolver(FixedDamping(problem.tau), AdaptiveStepSize(1.0),
                            ArmijoLineSearch(), linear_solver,
                            Batching(problem.n_samples, shuffle=False), max_iter=50,
                            stopping=NoImprovement(1e-12, 2))
    result = solver.solve(problem, np.zeros(4), np.random.RandomState(0))
    np.testing.assert_allclose(result.theta, minimizer, rtol=1e-10)
    assert result.history[0]["step_size"] == 1.0
    assert result.status == "converged" and result.state.n_iter == 4
    assert result.linear_solver == linear_solver
    objectives = [r["objective"] for r in result.history]
    assert objectives[1] == pytest.approx(objectives[0], rel=1e-14)


def test_mini_batch_gradient_descent_converges_on_a_quadratic():
    problem, minimizer = quadratic(tau=0.0)
    problem.regularized = False
    solver = GradientDescentSolver(0.2, Batching(10, shuffle=True), max_iter=400)
    result = solver.solve(problem, np.zeros(4), np.random.RandomState(0))
    assert result.state.n_steps == 400 * 5
    # constant-step SGD hovers near the least-squares solution
    np.testing.assert_allclose(result.theta, minimizer, atol=0.05)


def test_state_carries_over_between_solves():
    problem, minimizer = quadratic()
    solver = GGNScoreSolver(FixedDamping(problem.tau), AdaptiveStepSize(0.5), None,
                            "dual", Batching(problem.n_samples, False), max_iter=3)
    first = solver.solve(problem, np.zeros(4), np.random.RandomState(0))
    start = problem.evaluate(np.zeros(4), problem.batch()).objective
    assert first.state.initial_objective == start
    second = solver.solve(problem, first.theta, np.random.RandomState(0),
                          state=first.state)
    assert second.state.n_iter == 6 and second.state.n_steps == 6
    assert second.state.initial_objective == start  # kept, not re-measured
    # α = ½ without line search: the error halves every step
    err = np.linalg.norm(second.theta - minimizer) / np.linalg.norm(minimizer)
    assert err == pytest.approx(0.5 ** 6, rel=1e-6)


def test_callback_sees_every_iteration_and_can_stop():
    problem, _ = quadratic()
    seen = []

    def callback(record, theta):
        seen.append((dict(record), theta.copy()))
        record["extra"] = len(seen)
        return len(seen) == 2

    solver = GGNScoreSolver(FixedDamping(1.0), AdaptiveStepSize(0.5), None, "dual",
                            Batching(7, True), max_iter=10)
    result = solver.solve(problem, np.zeros(4), np.random.RandomState(0), callback)
    assert result.status == "stopped" and len(result.history) == 2
    assert [r["extra"] for r in result.history] == [1, 2]
    np.testing.assert_array_equal(seen[-1][1], result.theta)
    assert set(seen[0][0]) == {"objective", "risk", "step_size", "damping", "time"}


def test_divergence_keeps_the_last_finite_parameters():
    problem, _ = quadratic()
    # GD with a huge learning rate: the iterates blow up
    solver = GradientDescentSolver(1e3, Batching(problem.n_samples, False),
                                   max_iter=50)
    result = solver.solve(problem, np.zeros(4), np.random.RandomState(0))
    assert result.status == "diverged"
    assert "grew" in result.reason or "non-finite" in result.reason
    assert np.all(np.isfinite(result.theta))
    assert len(result.history) == result.state.n_iter < 50


# ------------------------------------------------- strategies
def test_armijo_halves_until_sufficient_decrease():
    def f(t):
        return float(t[0] ** 2)

    theta = np.array([1.0])
    grad = np.array([2.0])
    # d = 4·grad overshoots: α = 1, ½ and ¼ (f back at 1) fail, ⅛ is the
    # exact minimizer
    alpha, value, new = ArmijoLineSearch()(f, theta, 4 * grad, grad, 1.0, f(theta))
    assert alpha == 0.125 and new[0] == 0.0 and value == 0.0
    # an ascent direction is never accepted: α = 0 and θ stays
    alpha, value, new = ArmijoLineSearch(max_trials=5)(f, theta, -grad, grad, 1.0,
                                                       f(theta))
    assert alpha == 0.0 and value == 1.0 and new is theta


def test_armijo_rejects_non_finite_trials():
    calls = []

    def f(t):
        calls.append(t[0])
        return np.inf if t[0] < 0.4 else float(t[0] ** 2)

    alpha, _, new = ArmijoLineSearch()(f, np.array([1.0]), np.array([1.0]),
                                       np.array([2.0]), 1.0, 1.0)
    assert alpha == 0.5 and new[0] == 0.5 and len(calls) == 2


def test_step_size_rule_and_damping_resolution():
    assert AdaptiveStepSize(0.95)(0.0, 10.0) == 0.95
    assert AdaptiveStepSize(0.95)(2.0, 0.5) == pytest.approx(0.475)
    assert resolve_damping("auto", 1e-4, full_batch=True).value() == 1e-4
    assert resolve_damping("auto", 1e-4, full_batch=False).value() == 1.0
    assert resolve_damping("auto", 0.0, full_batch=True).value() == 1.0
    assert resolve_damping(3.0, 1e-4, full_batch=True).value() == 3.0
    with pytest.raises(ValueError, match="tau=0"):
        resolve_damping("tau", 0.0, full_batch=True)
    # "adaptive" in full batch: a trust damping from max(tau, floor) down to
    # tau; with tau = 0 the constant start; "tau" ignores the start
    trust = resolve_damping("adaptive", 1e-4, True, start=0.01)
    assert isinstance(trust, TrustDamping) and trust.value() == 0.01
    assert resolve_damping("adaptive", 0.05, True, start=0.01).value() \
        == 0.05
    assert resolve_damping("adaptive", 0.0, True, start=0.01).value() \
        == 0.01
    assert resolve_damping("tau", 1e-4, True, start=0.01).value() == 1e-4
    assert isinstance(resolve_damping("adaptive", 1e-4, False, start=0.01),
                      AdaptiveDamping)


def test_trust_damping_follows_the_line_search_down_to_tau():
    d = TrustDamping(1e-4, 0.01)
    d.update(0.9, 0.9)  # taken as proposed: / 3
    assert d.value() == pytest.approx(0.01 / 3)
    d.update(0.45, 0.9)  # shortened: x 2
    assert d.value() == pytest.approx(0.02 / 3)
    for _ in range(20):
        d.update(0.9, 0.9)
    assert d.value() == 1e-4  # never below tau
    d.update(0.0, 0.9)  # no decrease found: raised
    assert d.value() == 2e-4


def test_full_batch_damping_starts_at_the_tau_rule_and_ends_at_tau():
    # the estimator's start is tau="auto"'s full-batch value min(0.01, 10/n)
    # (samples as frequency weights); with tau=1e-4 on a ReLU regression
    # (MLP's test_lbfgs_regression) it keeps the steps from collapsing, and
    # on a smooth problem it reaches tau, the paper's step, and the same
    # objective as damping="tau"
    from sklearn.datasets import make_regression
    from sklearn.preprocessing import scale

    from sklearn_ggn.datasets import make_teacher_student

    X, y = make_regression(n_samples=200, n_features=10, bias=20.0, noise=100.0,
                           random_state=7)
    y = scale(y)
    params = dict(n_hidden=50, tau=1e-4, activation="relu", random_state=1,
                  max_iter=200, tol=1e-3)
    est = GGNScoreRegressor(**params).fit(X, y)
    assert est.history_["damping"][0] == 0.01
    paper = GGNScoreRegressor(damping="tau", **params).fit(X, y)
    assert np.all(np.array(paper.history_["damping"]) == 1e-4)
    assert paper.history_["step_size"][-1] < 0.1  # collapsed
    assert est.score(X, y) > 0.98 > paper.score(X, y)
    est.fit(X[:100], y[:100], sample_weight=np.full(100, 20.0))
    assert est.history_["damping"][0] == 10.0 / 2000

    X, y, _, _ = make_teacher_student(n_train=300, n_features=5, random_state=0)
    params = dict(n_hidden=200, tau=1e-4, random_state=0)
    est = GGNScoreRegressor(**params).fit(X, y)
    paper = GGNScoreRegressor(damping="tau", **params).fit(X, y)
    assert est.history_["damping"][0] == 0.01
    assert est.history_["damping"][-1] == 1e-4
    assert est.loss_curve_[-1] == pytest.approx(paper.loss_curve_[-1], rel=0.05)
def test_batching_partitions_every_epoch():
    rng = np.random.RandomState(0)
    batches = Batching(4, shuffle=True).epoch(10, rng)
    assert [len(b) for b in batches] == [4, 4, 2]
    assert sorted(np.concatenate(batches)) == list(range(10))
    ordered = Batching(4, shuffle=False).epoch(10, rng)
    np.testing.assert_array_equal(np.concatenate(ordered), np.arange(10))
    assert Batching(10, False).full_batch(10) and not Batching(9, False).full_batch(10)


def test_mini_batch_risks_add_up_to_the_weighted_risk():
    """A mini-batch's weights are relative to the mean weight of all rows:
    over a partition, the batches' risks weighted by ``batch.weight`` sum to
    the weighted risk of all rows (each batch an unbiased estimate of it),
    and a batch of light rows weighs little (normalizing within the batch
    gave it the weight of a heavy one)."""
    problem, _ = quadratic(n=50, d=4)
    theta = np.arange(1.0, 5.0)
    X, y, w = problem.Xa, problem.Y[:, 0], problem.sample_weight
    losses = 0.5 * (X @ theta - y) ** 2
    full = problem.batch()
    np.testing.assert_allclose(full.s, w / w.sum())
    batches = [problem.batch(idx, step=True) for idx in
               Batching(8, shuffle=True).epoch(50, np.random.RandomState(0))]
    total = sum(b.weight for b in batches)
    np.testing.assert_allclose(total, w.sum())
    risks = [np.dot(b.s, 0.5 * (b.Xa @ theta - b.Y[:, 0]) ** 2) for b in batches]
    np.testing.assert_allclose(sum(r * b.weight for r, b in zip(risks, batches))
                               / total, np.dot(w / w.sum(), losses))
    light, heavy = np.argsort(w)[:8], np.argsort(w)[-8:]
    assert (problem.batch(light, step=True).s.sum()
            < 0.8 * problem.batch(heavy, step=True).s.sum())
    # the problem on some rows (the posterior's, GCV's) normalizes within them
    np.testing.assert_allclose(problem.batch(light).s, w[light] / w[light].sum())
    # equal weights: 1/b either way
    equal = Problem(problem.network, problem.loss, problem.regularizer, 0.3,
                    X, problem.Y, np.full(50, 2.5))
    np.testing.assert_array_equal(equal.batch(np.arange(8), step=True).s,
                                  np.full(8, 1 / 8))


def test_epoch_means_count_batches_of_zero_weight():
    """0/1 weights that leave whole batches empty: the epoch's mean risk
    still estimates the weighted risk of all rows (the empty batches'
    share counted with no risk; it read 0.13 against 0.09 before)."""
    problem, _ = quadratic(n=400, d=4, tau=0.0)
    problem.regularized = False
    w = (np.random.default_rng(1).random(400) < 0.15).astype(float)
    problem = Problem(problem.network, problem.loss, problem.regularizer, 0.0,
                      problem.Xa, problem.Y, w, regularized=False)
    theta = np.array([0.5, -1.0, 2.0, 0.3])
    full = problem.evaluate(theta, problem.batch()).risk
    # a step of 1e-14 leaves θ where it is: the epoch mean is at θ
    solver = GradientDescentSolver(1e-14, Batching(8, shuffle=True), max_iter=1)
    result = solver.solve(problem, theta, np.random.RandomState(0))
    assert sum(problem.batch(idx, step=True) is None for idx in
               Batching(8, shuffle=True).epoch(400, np.random.RandomState(0))) > 0
    np.testing.assert_allclose(result.history[0]["risk"], full, rtol=1e-10)


def test_no_improvement_counts_consecutive_stalls():
    rule = NoImprovement(tol=0.1, n_iter_no_change=2)
    assert [rule(v, best) for v, best in [(1.0, np.inf), (0.95, 1.0), (0.9, 0.95),
                                          (0.5, 0.9), (0.45, 0.5), (0.44, 0.45),
                                          (0.43, 0.44)]] == [
        False, False, False, False, False, False, True]


def test_choose_linear_solver_by_cost_and_memory():
    small_net = TwoLayerNetwork(3, 4, 1, 0.5, "tanh", True)
    big_net = TwoLayerNetwork(20, 500, 1, 0.05, "tanh", True)
    assert choose_linear_solver(small_net, 5000) == "primal"  # p = 21 ≪ b
    assert choose_linear_solver(big_net, 100) == "dual"  # b ≪ p
    assert choose_linear_solver(big_net, 100, "primal") == "primal"
    # the full batch of 30 000 rows × 10 features, 10 classes: the
    # dual system alone is 671 GiB, the primal form needs a few GiB
    clf_net = TwoLayerNetwork(10, 100, 10, 0.1, "silu", True)
    assert choose_linear_solver(clf_net, 30_000, available_bytes=20 * 2**30) == \
        "primal"
    with pytest.raises(MemoryError, match='linear_solver="primal"'):
        choose_linear_solver(clf_net, 30_000, "dual", available_bytes=20 * 2**30)
    with pytest.raises(MemoryError, match="batch_size="):
        choose_linear_solver(clf_net, 30_000, available_bytes=2**30)


@pytest.mark.parametrize("scaling, kappa", [("mean_field", 1 / 8), (0.3, 0.3),
                                            ("ntk", 8 ** -0.5)])
def test_output_scaling_reaches_the_network(scaling, kappa):
    """κ of mean_field and float scalings, checked against the dense network."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 3))
    reg = GGNScoreRegressor(n_hidden=8, scaling=scaling, max_iter=2, random_state=0,
                            standardize_target=False,  # predict = Φ
                            input_transform=None)  # ... of X as given
    with pytest.warns(Warning, match="Maximum iterations"):  # 2 steps are enough
        reg.fit(X, X[:, 0])
    dense = DenseNetwork(reg.hidden_weights_, reg.output_weights_,
                         reg.hidden_intercept_, reg.output_intercept_, kappa, "silu")
    np.testing.assert_allclose(reg.predict(X), dense.forward(X)[:, 0], rtol=1e-10)


# ------------------------------------------------- scikit-learn callbacks
callback = pytest.importorskip("sklearn.callback")


def test_scoring_monitor_records_a_score_per_epoch():
    X, y = load_iris(return_X_y=True)
    clf = GGNScoreClassifier(n_hidden=16, max_iter=4, tol=0, batch_size=32,
                             random_state=0)
    monitor = callback.ScoringMonitor(scoring="accuracy")
    with pytest.warns(Warning, match="Maximum iterations"):
        clf.set_callbacks(monitor).fit(X, y)
    rows = [r for r in monitor.get_logs().data if r["task_name"] == "epoch"]
    assert len(rows) == clf.n_iter_ == 4
    assert all(0 <= r["accuracy"] <= 1 for r in rows)
    # the last epoch's score is the fitted model's
    assert rows[-1]["accuracy"] == pytest.approx(clf.score(X, y))


def test_callbacks_through_pipeline_and_grid_search():
    X, y = load_iris(return_X_y=True)
    monitor = callback.ScoringMonitor(scoring="accuracy")
    est = GGNScoreClassifier(n_hidden=8, max_iter=3, tol=0, random_state=0)
    search = GridSearchCV(make_pipeline(StandardScaler(), est.set_callbacks(monitor)),
                          {"ggnscoreclassifier__tau": [1e-4, 1e-2]}, cv=2)
    with pytest.warns(Warning, match="Maximum iterations"):
        search.fit(X, y)
    epochs = [r for run in monitor.get_logs("all") for r in run.data
              if r["task_name"] == "epoch"]
    # 2 candidates × 2 folds + the refit, 3 epochs each
    assert len(epochs) == 5 * 3


def test_progress_bar_through_grid_search(capsys):
    pytest.importorskip("rich")
    X, y = load_iris(return_X_y=True)
    search = GridSearchCV(
        make_pipeline(StandardScaler(),
                      GGNScoreClassifier(n_hidden=8, max_iter=2, tol=0,
                                         random_state=0)),
        {"ggnscoreclassifier__tau": [1e-4, 1e-2]}, cv=2)
    search.set_callbacks(callback.ProgressBar(max_propagation_depth=None))
    with pytest.warns(Warning, match="Maximum iterations"):
        search.fit(X, y)
    assert "GGNScoreClassifier - fit" in capsys.readouterr().out


def test_failed_fit_still_tears_callbacks_down():
    X, y = load_iris(return_X_y=True)
    monitor = callback.ScoringMonitor(scoring="accuracy")
    clf = GGNScoreClassifier(n_hidden=8, max_iter=2).set_callbacks(monitor)
    with pytest.raises(ValueError):
        clf.fit(X[:, :2], y[:-1])
    assert not hasattr(clf, "_callback_fit_ctx")
    assert not hasattr(clf, "n_features_in_")


def test_solver_state_is_picklable():
    import pickle

    state = SolverState(1.0, 0.5, 3, 30)
    assert pickle.loads(pickle.dumps(state)) == state


def test_small_steps_run_on_one_blas_thread():
    """The thread policy: a mini-batch step's BLAS calls run on one thread,
    whatever the caller's setting (the solver's own limit, inside solve)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    problem, _ = quadratic()
    seen = []

    def callback(record, theta):
        seen.append({i["num_threads"] for i in threadpool_info()
                     if i["user_api"] == "blas"})

    solver = GGNScoreSolver(FixedDamping(1.0), AdaptiveStepSize(0.5), None, "dual",
                            Batching(7, True), max_iter=2)
    with threadpool_limits(limits=2, user_api="blas"):
        solver.solve(problem, np.zeros(4), np.random.RandomState(0), callback)
        after = {i["num_threads"] for i in threadpool_info()
                 if i["user_api"] == "blas"}
    assert seen == [{1}, {1}]
    assert after == {2} or after == {1}  # restored (1 on a one-core machine)


def test_a_new_objective_restarts_the_damping_only_for_another_tau():
    import pickle

    d = AdaptiveDamping(unit=10.0, initial=0.05)
    d.lam, d.floor, d.stalls = 0.4, 0.2, 2
    d.first_epoch_objective, d.last_epoch_objective = 3.0, 1.0
    d.running_objective = d.last_objective = 1.0
    d.new_objective()  # more rows, the same τ: λ and its floor go on
    assert (d.lam, d.floor, d.stalls) == (0.4, 0.2, 0)
    assert d.last_epoch_objective is None and d.running_objective is None
    assert d.last_objective is None and d.first_epoch_objective == 3.0
    d.new_objective(restart=True)  # another τ: λ starts again
    assert d.lam == d.floor == 0.05 and d.first_epoch_objective == 3.0
    # a state pickled before it kept its initial λ keeps λ
    old = pickle.loads(pickle.dumps(d))
    del old.__dict__["initial"]
    old.lam = old.floor = 0.4
    old.new_objective(restart=True)
    assert old.lam == old.floor == 0.4


def test_adaptive_damping_rule():
    d = AdaptiveDamping(unit=10.0, initial=0.1)
    assert d.value() == pytest.approx(1.0)  # H ≈ λ near θ = 0
    assert d.accept(1.15, 1.0) and d.lam == 0.1  # decays, not below the floor
    assert not d.accept(1.3, 1.0) and d.lam == pytest.approx(0.3)  # undo, ×3
    assert d.accept(1.0, 1.0) and d.lam == pytest.approx(0.3 * 0.995)
    d.end_epoch(1.0)
    # improved by < 1 % (slow) but by more than 0.3 % of the first epoch's
    # objective: the floor rises by 1.5, the fit goes on (noisy data sit
    # near their noise floor, where every epoch is slow)
    d.end_epoch(0.995)
    assert d.floor == pytest.approx(0.15) and d.stalls == 0 and not d.converged()
    assert d.lam == pytest.approx(0.3 * 0.995)  # above the new floor: kept
    d.end_epoch(0.994)  # < 0.3 % of the first objective: small, counts
    assert d.floor == pytest.approx(0.225) and d.stalls == 1
    d.end_epoch(0.993)
    assert d.stalls == 2 and not d.converged()
    d.end_epoch(0.5)  # progress resets the count
    assert d.stalls == 0 and not d.converged()
    d.end_epoch(0.1)
    assert d.stalls == 0
    # far below the first epoch's objective (1.0), 2 % relative progress is
    # polishing: less than 0.3 % of the first objective
    d.end_epoch(0.098)
    assert d.stalls == 1
    for k in range(2):  # three small epochs in a row end the fit
        assert not d.converged()
        d.end_epoch(0.097 - 0.001 * k)
    assert d.converged() and d.stalls == 3
    assert d.floor == pytest.approx(0.1 * 1.5**6)
    assert d.lam == pytest.approx(d.floor)  # raised to the floor


def test_adaptive_damping_undoes_a_step_that_hurts_the_next_batch():
    """An outlying batch (targets × 30) takes a step that makes the next
    batch far worse: the solver undoes it and triples λ; the adapted state
    carries into the next solve."""
    problem, _ = quadratic(n=40)
    problem.Y = problem.Y.copy()
    problem.Y[10:20] *= 30.0  # the second batch of an unshuffled epoch
    damping = AdaptiveDamping(unit=1.0, initial=0.1)
    solver = GGNScoreSolver(damping, AdaptiveStepSize(1.0), None, "dual",
                            Batching(10, shuffle=False), max_iter=1)
    first = solver.solve(problem, np.zeros(4), np.random.RandomState(0))
    assert damping.n_rejected >= 1 and damping.lam > 0.1
    lam = damping.lam
    again = GGNScoreSolver(AdaptiveDamping(unit=1.0), AdaptiveStepSize(1.0), None,
                           "dual", Batching(10, shuffle=False), max_iter=1)
    second = again.solve(problem, first.theta, np.random.RandomState(0),
                         state=first.state)
    assert second.state.damping is damping  # continued, not reset to 0.1
    assert second.history[0]["damping"] >= min(lam, 0.1)


def test_adaptive_damping_screen():
    """A step passes the screen when the next batch's objective at the new θ
    is within ``screen`` times both the last batch's and the running mean
    (each observation capped at ``screen`` times the mean)."""
    d = AdaptiveDamping(unit=1.0, screen=1.2)
    assert not d.screened(0.1)  # nothing observed yet: test
    d.observe(1.0)
    assert d.screened(1.2) and not d.screened(1.21)
    d.observe(100.0)  # an outlying batch moves the mean by 2 % only
    assert d.running_objective == pytest.approx(1.0 + 0.1 * 0.2)
    assert not d.screened(1.3)
    d.observe(0.5)  # a falling objective: the last batch's counts at once
    assert d.screened(0.6) and not d.screened(0.61)
    assert d.accept(0.6, None) and d.lam == 0.1  # passed: decays to its floor
    assert not AdaptiveDamping(unit=1.0, screen=None).screened(0.0)


def test_damping_state_pickled_without_the_screen_tests_every_step():
    """An adapted damping saved before the screen existed (no ``screen``,
    running mean or last objective in its state) tests every step and
    keeps its running mean, after a pickle round trip too."""
    import pickle

    d = AdaptiveDamping(unit=1.0)
    for name in ("screen", "running_objective", "last_objective"):
        del d.__dict__[name]
    d = pickle.loads(pickle.dumps(d))
    d.observe(1.0)
    d.observe(2.0)
    assert d.running_objective == pytest.approx(1.1)  # not capped
    assert not d.screened(0.1)
    assert d.accept(1.0, 1.0) and not d.accept(2.0, 1.0)


def test_screen_spares_the_previous_thetas_forward_pass():
    """The screened solver evaluates the previous θ on far fewer batches
    than a solver that evaluates it on every batch, and undoes the same
    steps: a step is undone when the next batch's objective at the new θ
    exceeds ``screen`` times the typical batch objective (the smaller of the
    last batch's and the running mean) and ``reject_ratio`` times the
    batch's objective at the previous θ."""
    problem, _ = quadratic(n=400)
    calls = {}
    evaluate = problem.evaluate

    def counting(theta, batch, with_deriv=True):
        calls[key] += not with_deriv
        return evaluate(theta, batch, with_deriv)

    class EveryBatch(AdaptiveDamping):
        """The rule written out, with the previous θ evaluated every time."""

        def screened(self, new_objective):
            return False

        def accept(self, new_objective, old_objective):
            typical = min(self.running_objective, self.last_objective)
            undone = (new_objective > self.screen * typical
                      and new_objective > self.reject_ratio * old_objective)
            verdict = AdaptiveDamping.accept(
                self, new_objective, old_objective if undone else None)
            assert verdict is (not undone)
            return verdict

    problem.evaluate = counting
    results, rejected = {}, {}
    for key, kind in (("every batch", EveryBatch), ("screened", AdaptiveDamping)):
        calls[key] = 0
        damping = kind(unit=1.0)
        solver = GGNScoreSolver(damping, AdaptiveStepSize(1.0), None, "dual",
                                Batching(10, shuffle=True), max_iter=3)
        results[key] = solver.solve(problem, np.zeros(4), np.random.RandomState(0))
        rejected[key] = damping.n_rejected
    # 3 epochs of 40 batches: 39 tests each (the first batch has no
    # previous θ) and the last step's check on its own batch
    assert calls["every batch"] == 3 * 40
    assert calls["screened"] < calls["every batch"] / 2
    assert rejected["screened"] == rejected["every batch"] > 0
    np.testing.assert_array_equal(results["screened"].theta,
                                  results["every batch"].theta)


def test_damping_undoes_a_step_only_above_both_references():
    """The adaptive damping's verdict on a step, from the next batch's
    objective at the new θ (``new``), at the previous θ (``old``) and the
    typical batch objective (running mean 1.0, last batch 1.0)."""
    for new, old, screened, kept in (
            (1.1, 0.5, True, True),     # near the typical batch: kept untested
            (1.3, 1.2, False, True),    # above it, but 1.08× its own old value
            (1.3, 1.0, False, False),   # 1.3× both: undone
            (3.0, 2.9, False, True)):   # an outlying batch the step did not hurt
        d = AdaptiveDamping(unit=1.0)
        d.floor = 0.01  # (λ = 0.1 above its floor: it can decay)
        d.observe(1.0)
        d.observe(1.0)
        lam = d.lam
        assert d.screened(new) is screened
        assert d.accept(new, None if screened else old) is kept
        assert d.lam == pytest.approx(lam * (d.decay if kept else d.increase))
    # the typical batch is the smaller of the running mean (weight 0.1,
    # each objective capped at 1.2 times the mean) and the last batch's
    # objective: 1.5 is above it whichever of the two is lower
    for first, last, mean in ((1.0, 2.0, 1.02), (2.0, 1.0, 1.9)):
        d = AdaptiveDamping(unit=1.0)
        d.observe(first)
        d.observe(last)
        assert d.running_objective == pytest.approx(mean)
        assert not d.screened(1.5)
        assert not d.accept(1.5, 1.0)
        assert d.screened(1.15)  # within 1.2 of both references


def test_stall_thresholds_are_counted_in_steps_of_work():
    """The thresholds scale with the epoch's steps per ``work_steps``, for
    long epochs as for short ones: 0.5 % of the first objective is small
    progress for a 500-step epoch (threshold 0.6 %), not for a 250-step one
    (0.3 %), and large for a 100-step one (0.12 %)."""
    for steps, small in ((500, True), (250, False), (100, False)):
        d = AdaptiveDamping(unit=1.0, work_steps=250)
        d.end_epoch(1.0, n_steps=steps)
        d.end_epoch(0.995, n_steps=steps)
        assert d.stalls == int(small), steps


def test_scoring_monitor_scores_the_regressor_in_its_target_units():
    """The epochs' reconstructions carry the target map (its R² per epoch was
    -6.3 on a fit whose score is 0.99)."""
    from sklearn.callback import ScoringMonitor
    from sklearn.datasets import make_regression

    X, y = make_regression(600, 5, noise=1.0, random_state=0)
    y = 100.0 + 50.0 * y
    reg = GGNScoreRegressor(batch_size=64, max_iter=4, early_stopping=False,
                            random_state=0)
    monitor = ScoringMonitor(scoring="r2")
    reg.set_callbacks(monitor)
    with pytest.warns(ConvergenceWarning):
        reg.fit(X, y)
    rows = [r for r in monitor.get_logs().data if r["task_name"] == "epoch"]
    assert rows[-1]["r2"] == pytest.approx(reg.score(X, y), rel=1e-9)


@pytest.mark.parametrize("early_stopping", ["auto", True])
def test_probit_with_a_probability_scorer_fits(early_stopping):
    """Validation scores during the fit use the MAP probabilities (the
    posterior is the final weights'): the probit predictive with
    scoring="neg_log_loss" raised NotFittedError mid-fit."""
    from sklearn.datasets import make_classification

    X, y = make_classification(1500, 8, n_informative=4, n_classes=3,
                               random_state=0)
    clf = GGNScoreClassifier(predictive="probit", scoring="neg_log_loss",
                             early_stopping=early_stopping, max_iter=20,
                             random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    assert np.all(np.isfinite(clf.predict_proba(X)))


def test_empty_batches_do_not_dilute_the_step_size():
    """The epoch's mean step size (and damping) is over the batches that
    stepped: batches of zero weight took none (the mean read 0.51 where
    every step was 0.93)."""
    problem, _ = quadratic(n=64, d=4, tau=0.0)
    w = np.where(np.arange(64) < 32, 0.0, 1.0)  # four empty batches of 8
    problem = Problem(problem.network, problem.loss, problem.regularizer, 0.0,
                      problem.Xa, problem.Y, w, regularized=False)
    solver = GradientDescentSolver(0.25, Batching(8, shuffle=False), max_iter=1)
    result = solver.solve(problem, np.zeros(4), np.random.RandomState(0))
    assert result.state.n_steps == 4
    assert result.history[0]["step_size"] == 0.25


def test_full_batch_damping_without_line_search_hears_the_objective():
    """damping="adaptive" in full batch with line_search=False: a step that
    raised the objective raises λ (every step lowered it, down to τ, and this
    fit diverged to R² -5.5)."""
    rng = np.random.RandomState(0)
    X = rng.randn(120, 5)
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.1 * rng.randn(120)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = GGNScoreRegressor(n_hidden=15, line_search=False,
                                random_state=0).fit(X, y)
    objective, damping = reg.loss_curve_, reg.history_["damping"]
    for k in range(1, len(objective) - 1):
        if objective[k] > objective[k - 1]:
            assert damping[k + 1] > damping[k]
    assert reg.score(X, y) > 0.9
    trust = TrustDamping(1e-4, 1e-2)
    trust.judge(2.0, 1.0)
    assert trust.value() == 2e-2
    trust.judge(1.0, 2.0)
    assert trust.value() == pytest.approx(2e-2 / 3)
