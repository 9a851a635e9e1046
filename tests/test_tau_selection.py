"""tau="auto" by generalized cross-validation of the linearized problem:
the formulas against slow, obviously correct references, and the estimator's
attributes."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor, _base, _plan
from sklearn_ggn._tau import TAU_GRID, linearized_gram, select_tau, smoother_criteria
from sklearn_ggn.engine import LOSSES, REGULARIZERS, Problem, TwoLayerNetwork


def _fit(est, X, y, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, y, **kwargs)


def _problem(n=30, d=3, n_hidden=7, n_outputs=1, seed=0, weights=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    Y = np.column_stack([np.sin(X[:, 0] + c) for c in range(n_outputs)])
    Y += 0.1 * rng.standard_normal(Y.shape)
    w = rng.uniform(0.2, 2.0, n) if weights else np.ones(n)
    net = TwoLayerNetwork(d, n_hidden, n_outputs, n_hidden ** -0.5, "silu", True)
    problem = Problem(net, LOSSES["squared_error"](),
                      REGULARIZERS["pseudo_huber"](n_hidden ** 0.5), 1e-3, X, Y,
                      w, regularized=False)
    theta = net.pack(rng.standard_normal((n_hidden, d)) / np.sqrt(d),
                     rng.standard_normal((n_hidden, n_outputs)),
                     0.1 * rng.standard_normal(n_hidden), np.zeros(n_outputs))
    return problem, theta


def _explicit_jacobian(problem, theta, batch):
    """J̃ column by column from the engine's J̃ v (the obvious way)."""
    evaluation = problem.evaluate(theta, batch)
    lin, _ = problem.linearize(theta, batch, evaluation, 1.0, np.float64)
    p = theta.size
    cols = [lin.jvp(np.eye(p)[j]).ravel() for j in range(p)]
    return np.column_stack(cols), lin


def test_criteria_match_the_explicit_hat_matrix():
    rng = np.random.default_rng(0)
    F = rng.standard_normal((12, 5))
    G = F @ F.T  # rank 5 < 12: zero eigenvalues too
    z = rng.standard_normal(12)
    taus = np.array([1e-3, 0.1, 2.0])
    got = smoother_criteria(G, z, taus)
    m = len(z)
    for t, tau in enumerate(taus):
        S = G @ np.linalg.inv(G + tau * np.eye(m))
        r = z - S @ z
        np.testing.assert_allclose(got["dof"][t], np.trace(S), rtol=1e-10)
        np.testing.assert_allclose(got["gcv"][t],
                                   m * (r @ r) / (m - np.trace(S)) ** 2, rtol=1e-9)
        np.testing.assert_allclose(got["loo"][t],
                                   np.sum((r / (1 - np.diag(S))) ** 2), rtol=1e-9)


@pytest.mark.parametrize("n_outputs,weights", [(1, False), (2, True)])
def test_linearized_smoother_is_the_ridge_on_the_jacobian(n_outputs, weights):
    """S(τ) = G (G + τI)⁻¹ from the engine's Gram equals the primal hat
    matrix J̃ (J̃ᵀJ̃ + τ H̄)⁻¹ J̃ᵀ with H̄ = ḡ''(θ), and the leave-one-out
    criterion equals brute-force refits of the linearized ridge problem
    without each row (τ in the units of the estimator's objective)."""
    problem, theta = _problem(n=14, n_outputs=n_outputs, weights=weights)
    rows = np.arange(problem.n_samples)
    batch = problem.batch(rows)
    Jt, lin = _explicit_jacobian(problem, theta, batch)
    H = problem.regularizer.hessian(theta)
    G, z = linearized_gram(problem, theta, rows, response="parameters")
    np.testing.assert_allclose(G, Jt @ (Jt / H).T, rtol=1e-9, atol=1e-12)
    # z: the weighted targets of the linear model in θ, A (y − Φ + J θ)
    a = np.sqrt(batch.s / n_outputs)[:, None]
    outputs = problem.evaluate(theta, batch).cache.outputs
    np.testing.assert_allclose(z, (a * (batch.Y - outputs)).ravel() + Jt @ theta,
                               rtol=1e-9, atol=1e-12)
    taus = np.array([1e-4, 1e-2, 1.0])
    got = smoother_criteria(G, z, taus)
    m = z.size
    for t, tau in enumerate(taus):
        # primal hat matrix
        S = Jt @ np.linalg.solve(Jt.T @ Jt + tau * np.diag(H), Jt.T)
        r = z - S @ z
        np.testing.assert_allclose(got["gcv"][t],
                                   m * (r @ r) / (m - np.trace(S)) ** 2, rtol=1e-7)
        # brute-force leave-one-out: refit the ridge without entry i and
        # predict it
        loo = 0.0
        for i in range(m):
            keep = np.arange(m) != i
            beta = np.linalg.solve(Jt[keep].T @ Jt[keep] + tau * np.diag(H),
                                   Jt[keep].T @ z[keep])
            loo += (z[i] - Jt[i] @ beta) ** 2
        np.testing.assert_allclose(got["loo"][t], loo, rtol=1e-7)


def test_select_tau_takes_the_grid_minimum_and_reports_the_curve():
    problem, theta = _problem(n=40)
    tau, path = select_tau(problem, theta, np.random.RandomState(0))
    assert tau in TAU_GRID
    assert tau == path["tau"][np.argmin(path["gcv"])]
    assert path["n_rows"] == 40
    # a floor: the minimum over the allowed part of the grid
    floor = float(np.sort(path["tau"])[-5])
    tau, _ = select_tau(problem, theta, np.random.RandomState(0), tau_min=floor)
    allowed = path["tau"] >= floor
    assert tau == path["tau"][allowed][np.argmin(path["gcv"][allowed])]
    # a subsample when rows × outputs exceed the cap
    tau, path = select_tau(problem, theta, np.random.RandomState(0), max_rows=16)
    assert path["n_rows"] == 16 and len(path["gcv"]) == len(TAU_GRID)


def test_auto_tau_is_chosen_in_full_batch_and_reported():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 4))
    y = np.sin(X[:, 0]) + 0.3 * rng.standard_normal(120)
    reg = _fit(GGNScoreRegressor(n_hidden=16, tau="gcv", random_state=0), X, y)
    path = reg.tau_path_
    assert set(path) >= {"tau", "gcv", "loo", "dof", "n_rows", "criterion",
                         "tau_min"}
    assert "evidence_path" not in path
    allowed = path["tau"] >= path["tau_min"]
    assert reg.tau_ == path["tau"][allowed][np.argmin(path["gcv"][allowed])]
    # the problem actually solved used it: the objective's penalty part
    assert reg.tau_ in TAU_GRID
    # a warm start that continues the fit keeps it
    reg.set_params(warm_start=True)
    previous = reg.tau_
    _fit(reg, X, y)
    assert reg.tau_ == previous


@pytest.mark.parametrize("kw", [dict(tau=3e-3), dict(tau=0.0, damping=1.0),
                                dict(tau=1e-4, batch_size=None)])
def test_a_float_tau_is_used_as_given(kw):
    X, y = np.random.default_rng(1).standard_normal((60, 3)), np.arange(60.0)
    reg = _fit(GGNScoreRegressor(n_hidden=8, max_iter=3, **kw), X, y)
    assert reg.tau_ == kw["tau"] and reg.tau_path_ is None


def test_rule_elsewhere():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    y = X[:, 0] + 0.1 * rng.standard_normal(200)
    mini = _fit(GGNScoreRegressor(n_hidden=8, batch_size=32, max_iter=2), X, y)
    assert mini.tau_ == 1 / 200 and mini.tau_path_ is None
    clf = _fit(GGNScoreClassifier(n_hidden=8, max_iter=2), X, y > 0)
    assert clf.tau_ == min(0.01, 10 / 200) and clf.tau_path_ is None


def test_mini_batch_rule_counts_rows_as_frequencies_and_is_capped():
    # mini-batch fits: τ = max(1e-4, 1/n), one sample's loss; the sum of
    # the weights is n (a row of weight 2 counts twice, weight 0 not at all)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 3))
    y = (X[:, 0] > 0).astype(int)
    kw = dict(n_hidden=4, batch_size=64, max_iter=1)
    w = np.where(np.arange(300) < 100, 2.0, 1.0)
    w[-50:] = 0.0
    assert _fit(GGNScoreClassifier(**kw), X, y).tau_ == 1 / 300
    assert _fit(GGNScoreClassifier(**kw), X, y, sample_weight=w).tau_ == 1 / 350
    # class weights count as compute_sample_weight's weights passed as
    # sample_weight do (as in full batch): a row of class 0 five times
    weighted = _fit(GGNScoreClassifier(class_weight={0: 5.0, 1: 1.0}, **kw), X, y)
    assert weighted.tau_ == 1 / (5.0 * np.sum(y == 0) + np.sum(y == 1))
    # a scalar 0.5 halves the count; weights normalized to one would give
    # τ = 1 — capped at the full-batch cap
    assert _fit(GGNScoreClassifier(**kw), X, y, sample_weight=0.5).tau_ == 1 / 150
    normalized = _fit(GGNScoreClassifier(**kw), X, y,
                      sample_weight=np.full(300, 1 / 300))
    assert normalized.tau_ == _plan.AUTO_TAU_MAX == 0.01
    # from 10 000 rows on the floor 1e-4
    X = rng.standard_normal((12_000, 2))
    big = _fit(GGNScoreRegressor(n_hidden=2, max_iter=1), X, X[:, 0])
    assert big.batch_size_ < 12_000 and big.tau_ == 1e-4


def test_partial_fit_keeps_the_floor():
    # a chunk of a stream is not the data set: its size does not set τ
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 3))
    clf = GGNScoreClassifier(n_hidden=4).partial_fit(X, X[:, 0] > 0, classes=[0, 1])
    assert clf.tau_ == 1e-4


def test_integer_weights_give_the_curve_of_repeated_rows():
    problem, theta = _problem(n=20)
    w = np.random.default_rng(3).integers(0, 4, 20)
    rows = np.repeat(np.arange(20), w)
    net, loss, reg = problem.network, problem.loss, problem.regularizer
    X = problem.Xa[:, :-1]
    weighted = Problem(net, loss, reg, 1e-3, X, problem.Y, w.astype(float),
                       regularized=False)
    repeated = Problem(net, loss, reg, 1e-3, X[rows], problem.Y[rows],
                       np.ones(rows.size), regularized=False)
    rng = np.random.RandomState(0)
    tau_w, path_w = select_tau(weighted, theta, rng, response="parameters")
    tau_r, path_r = select_tau(repeated, theta, rng, response="parameters")
    assert tau_w == tau_r
    np.testing.assert_allclose(path_w["gcv"], path_r["gcv"], rtol=1e-8)
    np.testing.assert_allclose(path_w["dof"], path_r["dof"], rtol=1e-8)


def test_a_new_tau_is_a_new_objective_for_a_continued_fit(monkeypatch):
    # partial_fit's τ is 1e-4, a fit's 1/n: a warm start after partial_fit
    # minimizes another objective, whose epochs must not be judged against
    # the best one of the first, nor its batches against the damping's
    # running mean of the first's (judged against the best one, such a fit
    # stops while still improving)
    from sklearn_ggn.engine import GGNScoreSolver, SolverState

    calls, judged = [], []
    original = SolverState.new_objective
    monkeypatch.setattr(SolverState, "new_objective",
                        lambda self, **kw: calls.append(1) or original(self, **kw))
    epoch = GGNScoreSolver._epoch

    def recording(self, problem, theta, rng, state):
        # what each epoch is judged against: the best objective so far and
        # the damping's running mean of the batch objectives
        judged.append((state.best_objective, state.damping.running_objective,
                       state.damping.lam, state.damping.floor,
                       state.damping.initial))
        return epoch(self, problem, theta, rng, state)

    monkeypatch.setattr(GGNScoreSolver, "_epoch", recording)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 6))
    y = (X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(400) > 0).astype(int)
    for tau, resets in (("auto", 1), (1e-4, 0)):
        calls.clear()
        clf = GGNScoreClassifier(n_hidden=32, batch_size=64, random_state=0,
                                 tau=tau)
        for _ in range(30):
            clf.partial_fit(X, y, classes=[0, 1])
        judged.clear()
        clf.set_params(warm_start=True, max_iter=60, early_stopping=False)
        _fit(clf, X, y)
        assert len(calls) == resets  # (partial_fit resets nothing)
        assert clf.tau_ == (1 / 400 if tau == "auto" else 1e-4)
        # a new objective's first epoch is judged against nothing; the same
        # objective's against the partial_fit epochs before it
        best, running, lam, floor, initial = judged[0]
        assert (best == np.inf) == (resets == 1)
        assert (running is None) == (resets == 1)
        # and the damping starts again as in a fresh fit: λ and its floor
        # at their initial value (the same objective's λ goes on)
        assert (lam == floor == initial) == (resets == 1)
        assert all(np.isfinite(b) and r is not None for b, r, *_ in judged[1:])


def test_a_continued_fit_on_a_new_objective_trains_on():
    # after 30 partial_fit calls at tau=1e-4 the damping's λ is that of
    # their last steps; the fit at tau=1/n that continues them, with that
    # λ, ended after 5 of 60 epochs (its epoch objective rising 0.367 ->
    # 0.380), above the objective of a fresh fit
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 6))
    y = (X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(400) > 0).astype(int)
    clf = GGNScoreClassifier(n_hidden=32, batch_size=64, random_state=0)
    for _ in range(30):
        clf.partial_fit(X, y, classes=[0, 1])
    clf.set_params(warm_start=True, max_iter=60, early_stopping=False)
    _fit(clf, X, y)
    assert clf.n_iter_ > 30
    fresh = _fit(GGNScoreClassifier(n_hidden=32, batch_size=64, random_state=0,
                                    max_iter=60, early_stopping=False), X, y)
    assert clf.loss_curve_[-1] < fresh.loss_curve_[-1]


def test_every_phase_of_the_watch_takes_one_tau(monkeypatch):
    # float32 rows with weights float32 rounds: the watch's phases and the
    # plain fit of all rows sum the weights alike
    seen = []

    class Recording(_base.Problem):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            seen.append(self.tau)

    monkeypatch.setattr(_base, "Problem", Recording)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((900, 5)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.standard_normal(900) > 0).astype(int)
    w = np.full(900, 0.3)
    auto = _fit(GGNScoreClassifier(n_hidden=8, max_iter=20, random_state=0),
                X, y, sample_weight=w)
    # (the watch, the input map's screen under input_transform="auto", all rows)
    assert auto.overfitting_watch_ is not None and len(seen) >= 2
    phases = len(seen)
    plain = _fit(GGNScoreClassifier(n_hidden=8, max_iter=20, random_state=0,
                                    early_stopping=False), X, y, sample_weight=w)
    assert len(seen) == phases + 1
    assert set(seen) == {auto.tau_} and plain.tau_ == auto.tau_
    assert auto.tau_ == pytest.approx(1 / 270, rel=1e-6)


class _Solve:
    """A stand-in solve for :func:`evidence_path`: its τ, θ and history."""

    def __init__(self, tau, theta, n_iter):
        self.problem = type("P", (), {"tau": tau})()
        self.result = type("R", (), {"theta": theta, "history": [{}] * n_iter})()


@pytest.mark.parametrize("peak, expected", [
    (1e-2, [1e-3, 10 ** -2.5, 1e-2, 10 ** -1.5]),   # climbs up, one past the peak
    (1e-4, [1e-3, 10 ** -2.5, 10 ** -3.5, 1e-4, 10 ** -4.5]),  # up fails: down
    (1e-3, [1e-3, 10 ** -2.5, 10 ** -3.5]),          # the start is the peak
    (10.0, [1e-3, 10 ** -2.5, 1e-2, 10 ** -1.5, 1e-1, 10 ** -0.5, 1.0]),  # the end
])
def test_evidence_path_climbs_to_the_peak_with_warm_starts(peak, expected):
    from sklearn_ggn._tau import evidence_path

    starts = []

    def solve(tau, start):
        starts.append(start)
        return _Solve(tau, np.array([tau]), 3)

    def log_evidence(solved):  # unimodal in log τ, highest at ``peak``
        return -(np.log10(solved.problem.tau) - np.log10(peak)) ** 2

    best, path = evidence_path(solve, log_evidence, _Solve(1e-3, np.array([1e-3]), 7))
    np.testing.assert_allclose(path["tau"], expected, rtol=1e-12)
    chosen = int(np.argmax(path["log_evidence"]))
    assert path["chosen"] == chosen and best.problem.tau == path["tau"][chosen]
    np.testing.assert_allclose(best.problem.tau, min(peak, 1.0), rtol=1e-12)
    assert list(path["n_iter"]) == [7] + [3] * (len(expected) - 1)
    # every solve is warm-started from the best fit before it
    for k, start in enumerate(starts, start=1):
        earlier = path["log_evidence"][:k]
        assert start[0] == pytest.approx(path["tau"][int(np.argmax(earlier))])


def test_evidence_path_keeps_the_start_without_an_evidence():
    from sklearn_ggn._tau import evidence_path

    start = _Solve(1e-3, np.zeros(1), 5)
    best, path = evidence_path(lambda tau, theta: pytest.fail("no solve"),
                               lambda s: -np.inf, start)
    assert best is start and list(path["tau"]) == [1e-3] and path["chosen"] == 0


def test_tau_evidence_climbs_the_evidence_of_the_fitted_network():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((150, 4))
    y = np.sin(2 * X[:, 0]) + X[:, 1] + 0.8 * rng.standard_normal(150)
    reg = _fit(GGNScoreRegressor(n_hidden=20, tau="evidence", random_state=0),
               X, y)
    path, climb = reg.tau_path_, reg.tau_path_["evidence_path"]
    # it starts from GCV's τ and moves by half decades
    allowed = path["tau"] >= path["tau_min"]
    assert climb["tau"][0] == path["tau"][allowed][np.argmin(path["gcv"][allowed])]
    steps = np.abs(np.diff(np.log10(climb["tau"])))
    assert np.all((np.isclose(steps, 0.5)) | np.isclose(steps, 1.0))
    assert len(climb["tau"]) >= 2
    # it keeps the fit of highest evidence, and that is the fitted model:
    # its τ, iterations and the evidence of its posterior (in y's units the
    # standardized targets' evidence less n log(scale))
    chosen = climb["chosen"]
    assert climb["log_evidence"][chosen] == np.max(climb["log_evidence"])
    assert reg.tau_ == climb["tau"][chosen]
    assert reg.n_iter_ == climb["n_iter"][chosen] == len(reg.loss_curve_)
    in_y = climb["log_evidence"][chosen] - 150 * np.log(reg.target_scale_[0]
                                                         if np.ndim(reg.target_scale_)
                                                         else reg.target_scale_)
    np.testing.assert_allclose(reg.log_marginal_likelihood_, in_y, rtol=1e-8)


def test_tau_auto_is_the_evidence_path_and_gcv_is_its_first_stage():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((120, 3))
    y = X[:, 0] + 0.3 * rng.standard_normal(120)
    kw = dict(n_hidden=8, random_state=0)
    auto = _fit(GGNScoreRegressor(**kw), X, y)
    evidence = _fit(GGNScoreRegressor(tau="evidence", **kw), X, y)
    gcv = _fit(GGNScoreRegressor(tau="gcv", **kw), X, y)
    assert auto.tau_ == evidence.tau_
    np.testing.assert_array_equal(auto.predict(X), evidence.predict(X))
    climb = auto.tau_path_["evidence_path"]
    assert climb["tau"][0] == gcv.tau_ and "evidence_path" not in gcv.tau_path_
    # here the evidence moves τ up from GCV's floor, and the fit is another
    assert climb["chosen"] > 0 and auto.tau_ > gcv.tau_


def test_early_stopping_and_mini_batches_take_no_evidence_path():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((120, 3))
    y = X[:, 0] + 0.3 * rng.standard_normal(120)
    # a first solve stopped by max_iter starts the path too (at too small a
    # τ the first solve is slow and interpolates), every solve capped there
    short = _fit(GGNScoreRegressor(n_hidden=8, max_iter=3, random_state=0), X, y)
    climb = short.tau_path_["evidence_path"]
    assert len(climb["tau"]) >= 2 and list(climb["n_iter"]) == [3] * len(climb["tau"])
    assert climb["tau"][0] == _fit(GGNScoreRegressor(
        n_hidden=8, max_iter=3, tau="gcv", random_state=0), X, y).tau_
    early = _fit(GGNScoreRegressor(n_hidden=8, tau="evidence", early_stopping=True,
                                   random_state=0), X, y)
    assert early.tau_path_ is None or "evidence_path" not in early.tau_path_
    # mini-batches: "auto"'s rule, no criterion and no path
    mini = _fit(GGNScoreRegressor(n_hidden=8, tau="evidence", batch_size=32,
                                  max_iter=2), X, y)
    assert mini.tau_path_ is None and mini.tau_ == 1 / 120


def test_the_path_skips_fits_whose_noise_cannot_be_estimated():
    """A fit that spends all but one of its targets' degrees of freedom has
    no evidence to climb on (-inf): the path never keeps it, and the path's
    τ are τ0 · 10^(k/2)."""
    # tiny noise-free data: the fits nearly interpolate
    rng = np.random.RandomState(2)
    X = rng.randn(30, 5)
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2]
    reg = GGNScoreRegressor(random_state=0).fit(X, y)
    climb = reg.tau_path_["evidence_path"]
    state = reg._posterior()["_laplace"]
    spare = 30 - np.asarray(state["dof"])
    kept = climb["log_evidence"][climb["chosen"]]
    assert (np.isneginf(kept) and climb["chosen"] == 0) or spare >= 1.0
    # the path's τ are τ0 · 10^(k/2) (no drift from repeated products)
    steps = 2 * (np.log10(climb["tau"]) - np.log10(climb["tau"][0]))
    np.testing.assert_allclose(steps, np.round(steps), rtol=0, atol=1e-12)
