"""The regressor does not depend on the units of y (standardize_target)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_ggn import GGNScoreRegressor

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, note  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _fit(est, X, y, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, y, **kwargs)


def _data(n=40, d=3, n_outputs=1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    Y = np.column_stack([np.sin(X[:, 0] + c) + 0.5 * X[:, 1] * X[:, c % d]
                         for c in range(n_outputs)])
    return X, Y


# how far the two fits may part: the round-off of the
# standardized targets (~1e-10 relative for these a, b) is amplified by the
# steps; in float64 it stays ~1e-10, float32 steps (the mini-batch default)
# round it to their own 6e-8 and four steps made 1.6e-6 of it (a=1e-4,
# b=290, batches of 16)
# (the same for the predictions, relative to the targets' spread)
RTOL = {"float64": 1e-6, "float32": 1e-4}


@given(a=st.floats(1e-4, 1e4), b=st.floats(-1e4, 1e4),
       n_outputs=st.integers(1, 3), weighted=st.booleans(),
       batch_size=st.sampled_from([None, 16]), seed=st.integers(0, 2**16),
       compute_dtype=st.sampled_from(["float64", "float32"]))
def test_affine_change_of_units_maps_predictions(a, b, n_outputs, weighted,
                                                 batch_size, seed, compute_dtype):
    """Fitting a·y + b predicts a·ŷ + b (a > 0: the same fit up to round-off;
    a < 0 flips the standardized targets, a fit equal in distribution over
    the initial weights but not to the last digit)."""
    X, Y = _data(n_outputs=n_outputs, seed=seed)
    y = Y[:, 0] if n_outputs == 1 else Y
    rng = np.random.default_rng(seed + 1)
    w = rng.uniform(0, 3, len(X)) * (rng.uniform(size=len(X)) > 0.2) if weighted \
        else None
    note(f"a={a} b={b} K={n_outputs} weighted={weighted} batch={batch_size}")
    kw = dict(n_hidden=8, max_iter=4, tol=0, batch_size=batch_size,
              random_state=seed, compute_dtype=compute_dtype)
    base = _fit(GGNScoreRegressor(**kw), X, y, sample_weight=w)
    moved = _fit(GGNScoreRegressor(**kw), X, a * y + b, sample_weight=w)
    expected = a * base.predict(X) + b
    spread = a * np.std(Y, axis=0)
    np.testing.assert_allclose(
        moved.predict(X), expected, rtol=0,
        atol=RTOL[compute_dtype] * float(spread.max() + abs(b) * 1e-6))
    np.testing.assert_allclose(moved.loss_curve_, base.loss_curve_,
                               rtol=RTOL[compute_dtype])


def test_statistics_are_weighted_and_a_constant_output_is_only_centered():
    X, Y = _data(n_outputs=2)
    Y[:, 1] = 7.5
    w = np.r_[np.ones(20), 3 * np.ones(20)]
    reg = _fit(GGNScoreRegressor(n_hidden=8, max_iter=3), X, Y, sample_weight=w)
    mean = np.average(Y, axis=0, weights=w)
    std = np.sqrt(np.average((Y - mean) ** 2, axis=0, weights=w))
    np.testing.assert_allclose(reg.target_mean_, mean)
    np.testing.assert_allclose(reg.target_scale_, [std[0], 1.0])
    # the constant output is only centered: its prediction is 7.5 + Φ
    np.testing.assert_allclose(reg.predict(X)[:, 1], 7.5 + reg._raw_output(X)[:, 1])


def test_repeated_rows_equal_integer_weights():
    X, Y = _data()
    w = np.random.default_rng(0).integers(0, 4, len(X))
    weighted = _fit(GGNScoreRegressor(n_hidden=8, max_iter=2), X, Y[:, 0],
                    sample_weight=w)
    repeated = _fit(GGNScoreRegressor(n_hidden=8, max_iter=2),
                    np.repeat(X, w, axis=0), np.repeat(Y[:, 0], w))
    np.testing.assert_allclose(weighted.target_mean_, repeated.target_mean_)
    np.testing.assert_allclose(weighted.target_scale_, repeated.target_scale_)


def test_off_trains_on_y_as_given():
    X, Y = _data()
    reg = _fit(GGNScoreRegressor(n_hidden=8, max_iter=2, random_state=0,
                                 standardize_target=False), X, 5 * Y[:, 0])
    np.testing.assert_array_equal(reg.target_mean_, [0.0])
    np.testing.assert_array_equal(reg.target_scale_, [1.0])
    np.testing.assert_allclose(reg.predict(X), reg._raw_output(X)[:, 0])


def test_poisson_scales_by_the_mean_only():
    X, _ = _data(n=60)
    rng = np.random.default_rng(0)
    counts = rng.poisson(np.exp(X[:, 0])).astype(float)
    kw = dict(loss="poisson", n_hidden=8, max_iter=4, tol=0, random_state=0)
    base = _fit(GGNScoreRegressor(**kw), X, counts)
    scaled = _fit(GGNScoreRegressor(**kw), X, 40.0 * counts)
    np.testing.assert_allclose(base.target_mean_, [0.0])
    np.testing.assert_allclose(base.target_scale_, [counts.mean()])
    np.testing.assert_allclose(scaled.predict(X), 40.0 * base.predict(X),
                               rtol=1e-7)
    assert np.all(base.predict(X) >= 0)


def test_partial_fit_and_warm_start_keep_the_first_statistics():
    X, Y = _data(n=60)
    y = Y[:, 0]
    reg = GGNScoreRegressor(n_hidden=8, batch_size=10, random_state=0)
    reg.partial_fit(X[:30], y[:30])
    first = reg.target_mean_.copy(), reg.target_scale_.copy()
    reg.partial_fit(X[30:], 10 * y[30:] + 3)
    np.testing.assert_array_equal(reg.target_mean_, first[0])
    np.testing.assert_array_equal(reg.target_scale_, first[1])

    warm = _fit(GGNScoreRegressor(n_hidden=8, max_iter=2, warm_start=True), X, y)
    stats = warm.target_mean_.copy(), warm.target_scale_.copy()
    _fit(warm, X, 100 * y)  # continues the same map: same units
    np.testing.assert_array_equal(warm.target_mean_, stats[0])
    np.testing.assert_array_equal(warm.target_scale_, stats[1])
    fresh = _fit(GGNScoreRegressor(n_hidden=8, max_iter=2), X, y)
    _fit(fresh, X, 100 * y)  # a new fit: new statistics
    np.testing.assert_allclose(fresh.target_scale_, 100 * stats[1])


def test_validation_scores_do_not_depend_on_units():
    X, Y = _data(n=80)
    y = Y[:, 0]
    kw = dict(n_hidden=8, max_iter=3, tol=0, random_state=0)
    base = _fit(GGNScoreRegressor(**kw), X[:60], y[:60], X_val=X[60:],
                y_val=y[60:])
    moved = _fit(GGNScoreRegressor(**kw), X[:60], 1e3 * y[:60] - 5,
                 X_val=X[60:], y_val=1e3 * y[60:] - 5)
    np.testing.assert_allclose(moved.history_["validation_score"],
                               base.history_["validation_score"], rtol=1e-6)
    assert moved.history_["validation_score"][-1] == pytest.approx(
        moved.score(X[60:], 1e3 * y[60:] - 5))


@pytest.mark.parametrize("factor", [1e155, 1e300])
def test_targets_near_the_largest_float_have_a_finite_scale(factor):
    """y · 1e155 squares beyond the largest float: the standard deviation is
    taken over y's largest magnitude instead (it was inf, and so were the
    predictions), and the fit is the fit of y in other units."""
    rng = np.random.RandomState(0)
    X = rng.randn(100, 4)
    y = X[:, 0] - 0.5 * X[:, 1] ** 2
    kw = dict(n_hidden=6, max_iter=8, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        plain = GGNScoreRegressor(**kw).fit(X, y)
        big = GGNScoreRegressor(**kw).fit(X, y * factor)
    np.testing.assert_allclose(big.target_scale_ / factor, plain.target_scale_,
                               rtol=1e-12)
    np.testing.assert_allclose(big.predict(X) / factor, plain.predict(X),
                               rtol=1e-9, atol=1e-12)
