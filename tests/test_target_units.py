"""The regressor does not depend on the units of y (standardize_target)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_ggn import GGNScoreRegressor

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import example, given, note  # noqa: E402
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


U64 = np.finfo(np.float64).eps / 2
# refits of the fit in the original units, its targets perturbed at the
# bound on the moved fit's (moved_targets_allowance)
N_REFITS = 4


def standardization_rounding(a, b, y, sd):
    """A bound on how far the standardized targets of ``a·y + b`` are from
    those of ``y``, in units of the standard deviation of ``a·y + b``.

    ``a·y + b`` is rounded in float64 to ``u·(|b| + a·max|y|)``; its
    weighted mean, the deviations from it and their root mean square are
    sums over the ``n`` rows, which round to ``n·u`` times the same
    magnitude (Higham's ``γ_n``). Over the targets' spread ``a·sd`` that is
    ``r = (n + 4)·u·(|b| + a·max|y|)/(a·sd)``, the same for the mean (an
    offset) and the scale (relative): a standardized target ``z`` moves by
    up to ``r·(1 + |z|)``. With ``b/a`` far above the spread of ``y`` the
    rounding of ``b`` dominates (``r`` is 6e-7 at ``a = 1e-4``, ``b = 1e4``).
    The targets of ``y`` round the same way with ``a = 1``, ``b = 0`` (no
    more than for any ``a``, ``b``), hence the factor 2 of the bound.

    Parameters
    ----------
    a, b : float
        The change of units, ``a > 0``.
    y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        The targets in the original units.
    sd : ndarray of shape (n_outputs,)
        Their (weighted) standard deviation, ``target_scale_``.

    Returns
    -------
    r : ndarray of shape (n_outputs,)
        Twice the bound ``r`` of each output.
    """
    Y = y.reshape(len(y), -1)
    return 2 * (len(Y) + 4) * U64 * (abs(b) + a * np.abs(Y).max(axis=0)) / (a * sd)


def moved_targets_allowance(a, b, X, y, w, kw):
    """How far the fit of ``a·y + b`` may be from ``a`` times the fit of
    ``y``, plus ``b``, for this example.

    The two fits see standardized targets that differ by the rounding of
    :func:`standardization_rounding`, ``r·(1 + |z|)``, and, computing in
    float32, by one unit in the last place of float32 where that rounding
    takes ``z`` across a float32 rounding boundary: up to
    ``ε = r·(1 + |z|) + eps32·|z|`` per target. How far that moves the fit is
    measured: the fit of ``y`` is refitted ``N_REFITS`` times with every
    target moved by ``±ε`` (random signs; the refits round all their steps
    afresh too), and the spread (the largest change over the refits) of
    the standardized predictions ``Φ`` and of the loss curve is taken. The
    moved fit's targets are one perturbation within ``±ε``, not of random
    signs: its linear response is at most ``sqrt(N)`` times that of random
    signs, ``N`` the number of targets, so each spread is allowed
    ``sqrt(N)`` times (6.3 to 11); the round-off of the steps, which the
    refits sample, made the moved fit differ by up to a third of that with
    other BLAS kernels and numba targets. The predictions are also
    un-standardized with the moved mean and scale, rounded at ``r`` (an
    offset and a relative error), and ``a·ŷ + b`` is rounded once more.

    Parameters
    ----------
    a, b : float
        The change of units, ``a > 0``.
    X, y, w : ndarray or None
        The example's data and sample weights.
    kw : dict
        The estimators' parameters.

    Returns
    -------
    base : GGNScoreRegressor
        The fit of ``y``.
    prediction_allowance : ndarray of shape (n_outputs,)
        The largest difference allowed between the predictions of the fit
        of ``a·y + b`` and ``a·base.predict(X) + b``, per output.
    loss_allowance : float
        The largest difference allowed between the two loss curves (in the
        standardized units both fits train in).
    """
    base = _fit(GGNScoreRegressor(**kw), X, y, sample_weight=w)
    Y = y.reshape(len(y), -1)
    sd = base.target_scale_
    z = (Y - base.target_mean_) / sd
    r = standardization_rounding(a, b, y, sd)
    eps = r * (1 + np.abs(z))
    if kw["compute_dtype"] == "float32":
        eps += np.finfo(np.float32).eps * np.abs(z)
    rng = np.random.default_rng(0)
    predictions = base.predict(X).reshape(len(X), -1)
    phi = (predictions - base.target_mean_) / sd
    spread_phi = np.zeros(Y.shape[1])
    spread_loss = 0.0
    for _ in range(N_REFITS):
        moved = Y + sd * eps * rng.choice([-1.0, 1.0], size=Y.shape)
        refit = _fit(GGNScoreRegressor(**kw), X, moved.reshape(y.shape),
                     sample_weight=w)
        change = np.abs(refit.predict(X).reshape(len(X), -1) - predictions) / sd
        spread_phi = np.maximum(spread_phi, change.max(axis=0))
        spread_loss = max(spread_loss, float(np.max(np.abs(
            np.asarray(refit.loss_curve_) - base.loss_curve_))))
    multiple = np.sqrt(Y.size)
    prediction_allowance = (a * sd * (multiple * spread_phi
                                      + r * (2 + np.abs(phi).max(axis=0)))
                            + 2 * U64 * (np.abs(a * predictions).max(axis=0)
                                         + abs(b)))
    return base, prediction_allowance, multiple * spread_loss


@given(a=st.floats(1e-4, 1e4), b=st.floats(-1e4, 1e4),
       n_outputs=st.integers(1, 3), weighted=st.booleans(),
       batch_size=st.sampled_from([None, 16]), seed=st.integers(0, 2**16),
       compute_dtype=st.sampled_from(["float64", "float32"]))
# b/a ~ 1e7: the rounding of b moves the standardized targets across float32
# rounding boundaries, and four full-batch float32 steps amplify it to 1.5e-4
# of the loss, by amounts that depend on the BLAS kernel
@example(a=0.0001, b=1145.0, n_outputs=1, weighted=True, batch_size=None,
         seed=264, compute_dtype="float32")
def test_affine_change_of_units_maps_predictions(a, b, n_outputs, weighted,
                                                 batch_size, seed, compute_dtype):
    """Fitting a·y + b (a > 0) predicts a·ŷ + b and follows the same loss
    curve: the same fit up to round-off, as much of it as
    :func:`moved_targets_allowance` bounds for the drawn example."""
    X, Y = _data(n_outputs=n_outputs, seed=seed)
    y = Y[:, 0] if n_outputs == 1 else Y
    rng = np.random.default_rng(seed + 1)
    w = rng.uniform(0, 3, len(X)) * (rng.uniform(size=len(X)) > 0.2) if weighted \
        else None
    note(f"a={a} b={b} K={n_outputs} weighted={weighted} batch={batch_size}")
    kw = dict(n_hidden=8, max_iter=4, tol=0, batch_size=batch_size,
              random_state=seed, compute_dtype=compute_dtype)
    base, prediction_allowance, loss_allowance = moved_targets_allowance(
        a, b, X, y, w, kw)
    moved = _fit(GGNScoreRegressor(**kw), X, a * y + b, sample_weight=w)
    expected = (a * base.predict(X) + b).reshape(len(X), -1)
    difference = np.abs(moved.predict(X).reshape(len(X), -1) - expected)
    note(f"prediction difference / allowance: "
         f"{difference.max(axis=0) / prediction_allowance}")
    assert np.all(difference <= prediction_allowance)
    loss_difference = np.abs(np.asarray(moved.loss_curve_) - base.loss_curve_)
    note(f"loss difference {loss_difference.max():.3g}, "
         f"allowed {loss_allowance:.3g}")
    assert np.all(loss_difference <= loss_allowance)


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
