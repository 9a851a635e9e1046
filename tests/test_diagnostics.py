"""Diagnostics (SPEC section 8), per-iteration history and validation data."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor
from sklearn_ggn.diagnostics import (
    cardcal,
    n_zeros,
    parameter_vector,
    time_invariance,
)


def naive_cardcal(x, r):
    """The authors' loop, verbatim in spirit: first i with sum of the i
    largest |x| >= r ‖x‖₁."""
    absx = sorted(np.abs(x), reverse=True)
    norm1 = np.sum(np.abs(x))
    for i in range(1, len(absx) + 1):
        if np.sum(absx[:i]) >= r * norm1:
            return i


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("ratio", [0.5, 0.9, 0.999])
def test_cardcal_matches_the_reference_loop(seed, ratio):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(200) * rng.uniform(0, 1, 200) ** 6  # many tiny
    assert cardcal(x, ratio) == naive_cardcal(x, ratio)
    assert n_zeros(x, ratio) == 200 - naive_cardcal(x, ratio)


def test_cardcal_at_ratio_one_counts_every_nonzero():
    # A running sum cannot see entries below its ulp, so the loop's answer at
    # ratio 1 depends on summation order; the exact answer is the support.
    x = np.array([1.0, -1e-20, 0.0, 3e-12, 0.5])
    assert cardcal(x, 1.0) == 4 and n_zeros(x, 1.0) == 1


def test_cardcal_edge_cases():
    assert cardcal(np.zeros(5)) == 0 and n_zeros(np.zeros(5)) == 5
    with pytest.raises(ValueError, match="ratio"):
        cardcal([1.0], ratio=0)
    with pytest.raises(ValueError, match="finite"):
        n_zeros([np.nan, 1.0])


def fit_quietly(est, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(*args, **kwargs)


def data(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, np.sin(X[:, 0]) + X[:, 1] ** 2


def test_parameter_vector_and_zeros_of_an_estimator():
    X, y = data()
    reg = fit_quietly(GGNScoreRegressor(n_hidden=10, max_iter=3), X, y)
    theta = parameter_vector(reg)
    assert theta.size == 10 * 3 + 10 + 10 + 1
    assert n_zeros(reg) == theta.size - cardcal(theta)


def test_time_invariance_counts_sign_changes_by_hand():
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    reg = fit_quietly(GGNScoreRegressor(n_hidden=2, max_iter=1,
                                        store_initial_weights=True),
                      X, np.array([0.0, 1.0]))
    reg.initial_weights_ = {"hidden_weights": np.array([[1.0, -1.0], [2.0, 3.0]]),
                            "hidden_intercept": np.zeros(2)}
    reg.hidden_weights_ = np.array([[0.5, 0.0], [-2.0, 3.0]])
    reg.hidden_intercept_ = np.zeros(2)
    # pre-activations start [[1, 2], [-1, 3]], end [[0.5, -2], [0, 3]]:
    # unchanged (0,0), (1,1); changed (0,1); (1,0) ends at exactly 0
    assert time_invariance(reg, X) == 50.0
    assert time_invariance(reg, X, zero_as_unchanged=True) == 75.0


def test_time_invariance_needs_stored_initial_weights():
    X, y = data()
    reg = fit_quietly(GGNScoreRegressor(n_hidden=5, max_iter=2), X, y)
    assert not hasattr(reg, "initial_weights_")  # ordinary fits pay nothing
    with pytest.raises(ValueError, match="store_initial_weights=True"):
        time_invariance(reg, X)


def test_initial_weights_are_the_start_of_a_warm_started_sequence():
    X, y = data()
    reg = GGNScoreRegressor(n_hidden=6, max_iter=1, batch_size=None,
                            warm_start=True, store_initial_weights=True,
                            random_state=0)
    fit_quietly(reg, X, y)
    first = {k: v.copy() for k, v in reg.initial_weights_.items()}
    fit_quietly(reg, X, y)
    for key, value in first.items():
        np.testing.assert_array_equal(reg.initial_weights_[key], value)
    assert not np.array_equal(reg.hidden_weights_, first["hidden_weights"])
    assert 0.0 <= time_invariance(reg, X) <= 100.0


@pytest.mark.parametrize("batch_size", [None, 16])
def test_history_records_every_iteration(batch_size):
    X, y = data(n=80)
    X_val, y_val = data(n=30, seed=1)
    reg = fit_quietly(GGNScoreRegressor(n_hidden=10, max_iter=6, tol=0,
                                        batch_size=batch_size, random_state=0),
                      X, y, X_val=X_val, y_val=y_val)
    h = reg.history_
    assert set(h) == {"objective", "risk", "step_size", "damping", "time",
                      "validation_risk", "validation_score"}
    assert all(len(v) == reg.n_iter_ == 6 for v in h.values())
    assert h["objective"] == reg.loss_curve_
    assert np.all(np.diff(h["time"]) > 0)
    assert all(0 < a <= 1 for a in h["step_size"])
    # the regularizer is non-negative: risk <= objective
    assert all(r <= o for r, o in zip(h["risk"], h["objective"], strict=True))
    # the last validation record is the fitted model's score and ½·MSE (in
    # the units of the standardized targets, see standardize_target)
    scale = reg.target_scale_[0]
    assert h["validation_score"][-1] == pytest.approx(reg.score(X_val, y_val))
    assert h["validation_risk"][-1] == pytest.approx(
        0.5 * np.mean(((reg.predict(X_val) - y_val) / scale) ** 2))
    if batch_size is None:  # full batch: the risk is the training risk
        assert h["risk"][-1] == pytest.approx(
            0.5 * np.mean(((reg.predict(X) - y) / scale) ** 2))


def test_warm_started_history_continues():
    X, y = data()
    reg = GGNScoreRegressor(n_hidden=5, max_iter=2, tol=0, warm_start=True)
    fit_quietly(reg, X, y)
    fit_quietly(reg, X, y)
    assert len(reg.history_["time"]) == 4 and np.all(np.diff(reg.history_["time"]) > 0)


def test_early_stopping_uses_given_validation_data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    X_val = rng.standard_normal((40, 4))
    y_val = (X_val[:, 0] + X_val[:, 1] > 0).astype(int)
    clf = fit_quietly(GGNScoreClassifier(n_hidden=8, batch_size=16,
                                         early_stopping=True, max_iter=30,
                                         random_state=0),
                      X, y, X_val=X_val, y_val=y_val)
    assert clf.validation_scores_ == clf.history_["validation_score"]
    assert clf.best_validation_score_ == pytest.approx(clf.score(X_val, y_val))
    with pytest.raises(ValueError, match="together"):
        clf.fit(X, y, X_val=X_val)
    with pytest.raises(ValueError, match="features"):
        clf.fit(X, y, X_val=X_val[:, :2], y_val=y_val)


def test_history_has_validation_keys_even_if_the_first_epoch_diverges():
    X, y = data(n=80)
    reg = GGNScoreRegressor(solver="gd", learning_rate=1e6, n_hidden=8,
                            batch_size=16, max_iter=3, random_state=0)
    with pytest.warns(ConvergenceWarning, match="diverged"):
        reg.fit(X, y, X_val=X, y_val=y)
    assert reg.history_["validation_risk"] == [] == reg.history_["objective"]
