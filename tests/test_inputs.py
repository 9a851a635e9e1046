"""input_transform="robust_clip": the map against a slow reference, and the
estimators' use of it (fit, predict, warm starts, partial_fit, sparse X)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor
from sklearn_ggn._inputs import CLIP, robust_clip, robust_clip_statistics


def test_light_tailed_columns_are_standardized_in_their_bulk():
    """s = min(σ, IQR/1.349): a uniform column is scaled by its σ, a
    Gaussian one by either (they agree), a heavy-tailed one by its IQR."""
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(-2, 2, 10000), rng.normal(3, 2, 10000),
                         rng.lognormal(0, 2, 10000)])
    center, scale = robust_clip_statistics(X)
    assert 1 / scale[0] == pytest.approx(X[:, 0].std(), rel=1e-12)
    assert 1 / scale[1] == pytest.approx(2.0, rel=0.03)
    q1, q3 = np.quantile(X[:, 2], [0.25, 0.75])
    assert 1 / scale[2] == pytest.approx((q3 - q1) / 1.3489795003921634, rel=1e-3)
    assert CLIP == pytest.approx(3 * 1.3489795003921634)


def naive_robust_clip(X, w=None):
    """Column by column, with the quantiles of the weighted empirical
    distribution read off the sorted values (rows repeated by weight)."""
    X = np.asarray(X, dtype=float)
    w = np.ones(len(X), dtype=int) if w is None else np.asarray(w, dtype=int)
    out = np.empty_like(X)
    for j in range(X.shape[1]):
        col = np.sort(np.repeat(X[:, j], w))
        n = len(col)

        def q(p):  # the smallest value whose empirical CDF reaches p
            return col[int(np.ceil(p * n)) - 1]

        med, spread, full = q(0.5), q(0.75) - q(0.25), col[-1] - col[0]
        sigma = np.sqrt(np.mean((col - col.mean()) ** 2))
        # quartiles that coincide: the range sets the scale, an indicator
        # (two values, each in at least 5 of the repeated rows) keeps its
        # step 1
        counts = np.unique(col, return_counts=True)[1]
        reach = 1 if len(counts) == 2 and counts.min() >= 5 else 2
        a = (1 / min(sigma, spread / 1.3489795003921634) if spread > 0
             else (reach / full if full > 0 else 0.0))
        for i in range(len(X)):
            z = a * (X[i, j] - med)
            out[i, j] = z / np.sqrt(1 + (z / CLIP) ** 2)
    return out


def heavy_data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    return np.column_stack([
        rng.normal(size=n),                    # Gaussian
        rng.lognormal(0, 2.5, n),              # heavy right tail
        rng.integers(0, 2, n) * (rng.uniform(size=n) < 0.1),  # rare one-hot
        rng.poisson(3, n) * (rng.uniform(size=n) < 0.15),  # zero-inflated
        np.full(n, 3.5),                       # constant
        rng.standard_t(1, n) * 1e6,            # Cauchy, unscaled
    ])


def test_indicators_keep_their_step_and_zero_inflated_columns_spread():
    """Quartiles that coincide: a 0/1 column (one-hot) enters as 0/1 (its
    step scaled by 1/range), a zero-inflated count by 2/range."""
    X = heavy_data(400)
    center, scale = robust_clip_statistics(X)
    assert center[2] == 0 and scale[2] == 1.0
    assert center[3] == 0 and scale[3] == pytest.approx(2 / np.ptp(X[:, 3]))
    mapped = robust_clip(X, center, scale)
    np.testing.assert_allclose(np.unique(mapped[:, 2]),
                               [0.0, 1 / np.sqrt(1 + 1 / CLIP**2)])
    assert scale[4] == 0  # constant
    # a value in 4 rows is no category (a pixel lit in a few images): the
    # range rule; in 5 rows, or 4 rows of which one weighs 2, an indicator
    odd = np.zeros((400, 1))
    odd[:4] = 3.0
    assert robust_clip_statistics(odd)[1][0] == pytest.approx(2 / 3)
    odd[4] = 3.0
    assert robust_clip_statistics(odd)[1][0] == pytest.approx(1 / 3)
    four = odd[1:]  # rows 1-4 hold the 3
    w = np.ones(len(four))
    assert robust_clip_statistics(four, w)[1][0] == pytest.approx(2 / 3)
    w[0] = 2.0
    assert robust_clip_statistics(four, w)[1][0] == pytest.approx(1 / 3)


@pytest.mark.parametrize("first", [0, 1])
def test_indicators_are_counted_over_all_rows(first):
    """Beyond the rows of the quantiles (every k-th row of a tall X) the
    rows' order decides nothing: 8 ones on odd or on even rows of 16 385 are
    an indicator either way, and a third value on a row the quantiles skip
    still makes the column no indicator."""
    X = np.zeros((16385, 2))
    X[first:16:2, 0] = 1.0
    X[:40:2, 1] = 1.0
    X[1, 1] = 7.0
    center, scale = robust_clip_statistics(X)
    assert scale[0] == 1.0
    assert scale[1] == pytest.approx(2 / 7)
    # weights as repeated rows, also on the tall X
    w = np.ones(len(X))
    w[first] = 0.0
    assert robust_clip_statistics(X, w)[1][0] == 1.0  # 7 ones left
    w[first:8:2] = 0.0
    assert robust_clip_statistics(X, w)[1][0] == 2.0  # 4 ones left


def test_map_matches_the_naive_reference():
    X = heavy_data()
    center, scale = robust_clip_statistics(X)
    np.testing.assert_allclose(robust_clip(X, center, scale),
                               naive_robust_clip(X), rtol=1e-12, atol=1e-15)


def test_weights_count_as_repeated_rows():
    X = heavy_data(120, seed=1)
    w = np.random.default_rng(2).integers(0, 4, len(X))
    center, scale = robust_clip_statistics(X, w.astype(float))
    np.testing.assert_allclose(robust_clip(X, center, scale),
                               naive_robust_clip(X, w), rtol=1e-12, atol=1e-15)
    # and as the repeated rows themselves
    rep = np.repeat(X, w, axis=0)
    np.testing.assert_array_equal(center, robust_clip_statistics(rep)[0])
    np.testing.assert_allclose(scale, robust_clip_statistics(rep)[1], rtol=1e-12)


def test_map_is_bounded_monotone_and_keeps_the_bulk():
    X = heavy_data(2000)
    Z = robust_clip(X, *robust_clip_statistics(X))
    assert np.all(np.abs(Z) < CLIP)
    for j in range(X.shape[1]):
        order = np.argsort(X[:, j], kind="stable")
        assert np.all(np.diff(Z[order, j]) >= 0)
    # the constant column is 0, the heavy column's bulk is spread, not
    # squeezed into a sliver as StandardScaler leaves it
    assert np.all(Z[:, 4] == 0)
    assert np.percentile(Z[:, 1], 75) - np.percentile(Z[:, 1], 25) > 0.8
    S = StandardScaler().fit_transform(X)
    assert np.percentile(S[:, 1], 75) - np.percentile(S[:, 1], 25) < 0.5


def test_huge_values_and_float32_stay_finite():
    X = np.array([[0.0], [1.0], [2.0], [3.0], [3e38]], dtype=np.float32)
    Z = robust_clip(X, *robust_clip_statistics(X))
    assert Z.dtype == np.float32 and np.all(np.isfinite(Z))
    assert Z[-1, 0] == pytest.approx(CLIP, rel=1e-6)


@pytest.mark.parametrize("Est", [GGNScoreRegressor, GGNScoreClassifier])
def test_fit_is_the_untransformed_fit_on_mapped_inputs(Est):
    """The estimator with the map is exactly the estimator without it fitted
    on the mapped inputs: same weights, same predictions."""
    X = heavy_data(200)
    y = (X[:, 0] + np.log(X[:, 1]) > 4).astype(int)
    Z = robust_clip(X, *robust_clip_statistics(X))
    kw = dict(n_hidden=12, max_iter=15, random_state=0)
    a = Est(**kw).fit(X, y)
    b = Est(input_transform=None, **kw).fit(Z, y)
    np.testing.assert_array_equal(a.hidden_weights_, b.hidden_weights_)
    np.testing.assert_array_equal(a.predict(X), b.predict(Z))
    assert b.input_center_ is None and b.input_scale_ is None
    X_new = heavy_data(50, seed=5)
    Z_new = robust_clip(X_new, a.input_center_, a.input_scale_)
    np.testing.assert_array_equal(a.predict(X_new), b.predict(Z_new))


def test_a_scaler_in_front_changes_nothing():
    X = heavy_data(300)
    y = np.sin(X[:, 0]) + np.log(X[:, 1])
    kw = dict(n_hidden=10, max_iter=10, random_state=0)
    raw = GGNScoreRegressor(**kw).fit(X, y)
    S = StandardScaler().fit(X)
    scaled = GGNScoreRegressor(**kw).fit(S.transform(X), y)
    np.testing.assert_allclose(raw.predict(X), scaled.predict(S.transform(X)),
                               rtol=1e-6, atol=1e-8)


def test_no_unscaled_warning_on_raw_columns(recwarn):
    X = heavy_data(300)
    GGNScoreRegressor(n_hidden=5, max_iter=3).fit(X, X[:, 0])
    assert not [w for w in recwarn if "standardized" in str(w.message)
                or "extreme" in str(w.message) or "values up to" in str(w.message)]
    with pytest.warns(UserWarning, match="values up to"):
        GGNScoreRegressor(n_hidden=5, max_iter=3,
                          input_transform=None).fit(X, X[:, 0])


def test_warm_start_and_partial_fit_keep_the_statistics():
    X = heavy_data(300)
    y = X[:, 0]
    reg = GGNScoreRegressor(n_hidden=5, max_iter=3, warm_start=True).fit(X, y)
    center, scale = reg.input_center_.copy(), reg.input_scale_.copy()
    reg.fit(X[:100] * 7, y[:100])
    np.testing.assert_array_equal(reg.input_center_, center)
    np.testing.assert_array_equal(reg.input_scale_, scale)
    # (heavy_data's constant column is centered, not zeroed, by a stream's
    # first chunk: later chunks may vary)
    inc = GGNScoreRegressor(n_hidden=5).partial_fit(X[:150], y[:150])
    first = robust_clip_statistics(X[:150])
    inc.partial_fit(X[150:], y[150:])
    np.testing.assert_array_equal(inc.input_center_, first[0])
    np.testing.assert_array_equal(inc.input_scale_,
                                  np.where(first[1] > 0, first[1], 1.0))
    # a cold refit computes them again
    reg.set_params(warm_start=False).fit(X[:100] * 7, y[:100])
    np.testing.assert_array_equal(reg.input_center_,
                                  robust_clip_statistics(X[:100] * 7)[0])


def test_weights_set_by_hand_start_on_the_mapped_inputs():
    """Weights set before any fit are an initialization like the drawn one:
    on the inputs as the fit maps them (the same fit as from those weights
    with input_transform=None on the mapped inputs)."""
    X = heavy_data(200)
    y = np.sin(X[:, 0]) + np.log(X[:, 1])
    rng = np.random.default_rng(0)
    init = {"hidden_weights_": rng.standard_normal((6, X.shape[1])),
            "output_weights_": rng.standard_normal((6, 1)),
            "hidden_intercept_": np.zeros(6), "output_intercept_": np.zeros(1)}
    kw = dict(n_hidden=6, max_iter=1, batch_size=None, warm_start=True,
              early_stopping=False)
    mapped = GGNScoreRegressor(**kw)
    plain = GGNScoreRegressor(input_transform=None, **kw)
    for est in (mapped, plain):
        for name, value in init.items():
            setattr(est, name, value.copy())
    mapped.fit(X, y)
    np.testing.assert_array_equal(mapped.input_center_,
                                  robust_clip_statistics(X)[0])
    plain.fit(robust_clip(X, *robust_clip_statistics(X)), y)
    np.testing.assert_allclose(mapped.hidden_weights_, plain.hidden_weights_,
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sparse_inputs_to_a_model_fitted_on_dense_ones_are_mapped(fmt):
    """A model fitted on dense X (with the map) predicts, continues and
    validates on sparse X as on its dense rows."""
    X = heavy_data(120)
    y = np.sin(X[:, 0]) + np.log(X[:, 1])
    S = sp.random(30, X.shape[1], density=0.5, format=fmt, random_state=0) * 10
    reg = GGNScoreRegressor(n_hidden=5, max_iter=3, random_state=0).fit(X, y)
    np.testing.assert_array_equal(reg.predict(S), reg.predict(S.toarray()))
    clf = GGNScoreClassifier(n_hidden=5, max_iter=3, random_state=0).fit(X, y > 1)
    np.testing.assert_array_equal(clf.predict_proba(S), clf.predict_proba(S.toarray()))
    a = GGNScoreRegressor(n_hidden=5, random_state=0).partial_fit(X, y)
    b = GGNScoreRegressor(n_hidden=5, random_state=0).partial_fit(X, y)
    a.partial_fit(S, y[:30])
    b.partial_fit(S.toarray(), y[:30])
    np.testing.assert_allclose(a.hidden_weights_, b.hidden_weights_, rtol=1e-10)


def sparse_heavy_data(n=300, seed=0):
    """Sparse columns of every kind: median 0 (sparse Gaussian, rare one-hot,
    zero-inflated counts, an empty column) and median not 0 (a common
    level's indicator, a mostly positive column), with explicit zeros."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([
        rng.normal(size=n) * (rng.uniform(size=n) < 0.3),
        rng.integers(0, 2, n) * (rng.uniform(size=n) < 0.1),
        rng.poisson(3, n) * (rng.uniform(size=n) < 0.15),
        np.zeros(n),
        (rng.uniform(size=n) < 0.7).astype(float),
        rng.lognormal(0, 1, n) * (rng.uniform(size=n) < 0.8),
    ])
    S = sp.csr_array(X)
    S.data[::7] = 0.0  # explicit zeros
    return S


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_statistics_and_map_match_the_naive_reference(weighted, fmt):
    """The implicit zeros count as rows of value 0: the statistics and the
    map of sparse X are the dense copy's, against the slow reference."""
    S = sparse_heavy_data().asformat(fmt)
    X = S.toarray()
    w = (np.random.default_rng(2).integers(0, 4, X.shape[0]) if weighted
         else None)
    center, scale = robust_clip_statistics(
        S, None if w is None else w.astype(float))
    dense = robust_clip_statistics(X, None if w is None else w.astype(float))
    np.testing.assert_array_equal(center, dense[0])
    np.testing.assert_allclose(scale, dense[1], rtol=1e-12)
    mapped = robust_clip(S, center, scale)
    assert sp.issparse(mapped)  # (two of six columns stored in full)
    np.testing.assert_allclose(mapped.toarray(), naive_robust_clip(X, w),
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(mapped.toarray(),
                                  robust_clip(X, center, scale))


def test_sparse_map_keeps_zero_median_columns_sparse():
    """Where every column's median is 0 the map touches the stored values
    only (the same sparsity pattern); a matrix that the map would fill more
    than half is returned dense."""
    S = sp.random(200, 30, density=0.1, format="csr", random_state=0,
                  data_rvs=np.random.default_rng(0).standard_normal)
    center, scale = robust_clip_statistics(S)
    assert np.all(center == 0)
    mapped = robust_clip(S, center, scale)
    assert sp.issparse(mapped)
    np.testing.assert_array_equal(mapped.indptr, S.indptr)
    np.testing.assert_array_equal(mapped.indices, S.indices)
    dense = sp.random(200, 30, density=0.9, format="csr", random_state=0)
    dense.data += 1.0
    center, scale = robust_clip_statistics(sp.csr_array(dense))
    out = robust_clip(sp.csr_array(dense), center, scale)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, robust_clip(dense.toarray(), center,
                                                   scale))


def test_sparse_fit_equals_the_dense_copys_fit():
    """A fit with the robust clip on sparse X is the fit on its dense copy,
    and predicts the same on sparse and dense rows (the encodings of
    "robust_clip+ple" leave a sparse column of median 0 with negative values
    unencoded: their fits differ by design)."""
    S = sparse_heavy_data(200)
    X = S.toarray()
    y = np.sin(X[:, 0]) + X[:, 4] + 0.3 * X[:, 2]
    kw = dict(n_hidden=8, max_iter=5, random_state=0, input_transform="robust_clip")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = GGNScoreRegressor(**kw).fit(S, y)
        b = GGNScoreRegressor(**kw).fit(X, y)
        c = GGNScoreClassifier(**kw).fit(S, y > 0.5)
        d = GGNScoreClassifier(**kw).fit(X, y > 0.5)
    np.testing.assert_array_equal(a.input_center_, b.input_center_)
    np.testing.assert_allclose(a.input_scale_, b.input_scale_, rtol=1e-12)
    np.testing.assert_allclose(a.predict(S), b.predict(X), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(a.predict(X), a.predict(S), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c.predict_proba(S), d.predict_proba(X), atol=1e-9)


def test_sparse_first_partial_fit_chunk_sets_the_map():
    """partial_fit on sparse chunks: the first chunk's statistics, a column
    constant in it centered and not scaled, as for the dense chunks."""
    S = sparse_heavy_data(120)
    X = S.toarray()
    y = X[:, 0] + X[:, 4]
    # (float64 steps: in float32 the sparse and dense products round apart)
    a = GGNScoreRegressor(n_hidden=5, random_state=0, compute_dtype="float64")
    b = GGNScoreRegressor(n_hidden=5, random_state=0, compute_dtype="float64")
    for rows in (slice(0, 60), slice(60, 120)):
        a.partial_fit(S[rows], y[rows])
        b.partial_fit(X[rows], y[rows])
    np.testing.assert_array_equal(a.input_center_, b.input_center_)
    np.testing.assert_allclose(a.input_scale_, b.input_scale_, rtol=1e-12)
    assert a.input_scale_[3] == 1.0  # the empty column
    np.testing.assert_allclose(a.hidden_weights_, b.hidden_weights_,
                               rtol=1e-9, atol=1e-12)


def test_callable_scoring_sees_the_rows_as_given():
    """A scorer predicts through the estimator, so it must get the rows
    untransformed and a copy that holds the statistics."""
    from sklearn.metrics import make_scorer, r2_score

    X = heavy_data(300)
    y = np.sin(X[:, 0]) + np.log(X[:, 1])
    kw = dict(n_hidden=8, max_iter=5, random_state=0)
    a = GGNScoreRegressor(**kw).fit(X[:200], y[:200], X_val=X[200:], y_val=y[200:])
    b = GGNScoreRegressor(scoring=make_scorer(r2_score), **kw).fit(
        X[:200], y[:200], X_val=X[200:], y_val=y[200:])
    np.testing.assert_allclose(a.history_["validation_score"],
                               b.history_["validation_score"], rtol=1e-10)
    assert a.history_["validation_score"][-1] == pytest.approx(
        a.score(X[200:], y[200:]))


def test_predictive_std_is_that_of_the_mapped_inputs():
    X = heavy_data(150)
    y = np.sin(X[:, 0]) + np.log(X[:, 1]) + 0.1 * np.random.default_rng(3).normal(size=150)
    kw = dict(n_hidden=6, max_iter=8, tau=0.05, random_state=0, batch_size=None)
    a = GGNScoreRegressor(**kw).fit(X, y)
    Z = robust_clip(X, a.input_center_, a.input_scale_)
    b = GGNScoreRegressor(input_transform=None, **kw).fit(Z, y)
    X_new = heavy_data(20, seed=9)
    Z_new = robust_clip(X_new, a.input_center_, a.input_scale_)
    for u, v in zip(a.predict(X_new, return_std=True),
                    b.predict(Z_new, return_std=True)):
        np.testing.assert_allclose(u, v, rtol=1e-10)


def test_inputs_near_the_largest_float_fit_by_default():
    """The data of scikit-learn's non-finite-parameters test (values near
    the largest float64): with the map the network sees unit-scale inputs
    and the fit is finite; without it the fit fails with the MLP's error
    (test_mlp_port.py)."""
    rng = np.random.RandomState(0)
    X = np.finfo(np.float64).max * rng.uniform(size=(10, 2))
    y = rng.standard_normal(size=10)
    reg = GGNScoreRegressor(n_hidden=8, max_iter=5, random_state=0).fit(X, y)
    assert np.all(np.isfinite(reg.hidden_weights_))
    assert np.all(np.isfinite(reg.predict(X)))


_MAP_ADVICE = r"input_transform='auto' \(the default\) or 'robust_clip'"


def test_scale_warnings_name_the_input_map():
    """Without the map, the warnings about extreme or unscaled inputs name
    it as the first remedy, for dense and sparse X; with it (the default),
    sparse X is mapped too and there is nothing to warn about."""
    X = heavy_data(100)
    with pytest.warns(UserWarning, match=_MAP_ADVICE):
        GGNScoreRegressor(n_hidden=4, max_iter=2, input_transform=None).fit(
            X, X[:, 0])
    S = sp.csr_array(np.abs(X[:, [1, 4]]) * 1e3)
    with pytest.warns(UserWarning, match=_MAP_ADVICE):
        GGNScoreRegressor(n_hidden=4, max_iter=2, input_transform=None).fit(
            S, X[:, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        GGNScoreRegressor(n_hidden=4, max_iter=2).fit(S, X[:, 0])


def test_a_column_constant_in_the_first_chunk_is_learned_later():
    """A 0/1 feature absent from the first partial_fit chunk: the map fixed by
    that chunk centers it (it was zeroed for good: R² 0.10 against 0.998
    without the map)."""
    rng = np.random.RandomState(0)
    X = rng.standard_normal((3000, 3))
    X[:, 0] = rng.rand(3000) < 0.3
    X[:200, 0] = 0.0
    y = 5 * X[:, 0] + X[:, 1] + 0.1 * rng.standard_normal(3000)
    reg = GGNScoreRegressor(n_hidden=16, random_state=0)
    reg.partial_fit(X[:200], y[:200])
    assert reg.input_scale_[0] == 1.0
    for start in range(200, 2000, 200):
        reg.partial_fit(X[start:start + 200], y[start:start + 200])
    assert reg.score(X[2000:], y[2000:]) > 0.95


def test_a_tiny_first_chunk_warns_that_it_fixes_the_map():
    X = heavy_data(100)
    reg = GGNScoreRegressor(n_hidden=4)
    with pytest.warns(UserWarning, match="here 1 row"):
        reg.partial_fit(X[:1], X[:1, 0])
    np.testing.assert_array_equal(reg.input_scale_, np.ones(X.shape[1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        reg.partial_fit(X[1:], X[1:, 0])  # (said once: the map is set)
