"""The input map as one fitted object: scikit-learn's transformer API,
the estimators' ``input_map_`` and the one prediction path through it,
and files of the estimators written before the map was an object."""

import pathlib
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from naive import naive_piecewise_linear, naive_quantile_edges
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor
from sklearn_ggn._inputs import (
    Identity,
    PiecewiseLinear,
    RobustClip,
    input_map_from_dict,
    input_map_to_dict,
    robust_clip,
    robust_clip_statistics,
)

DATA = pathlib.Path(__file__).parent / "data"


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def _heavy(n=200, seed=0):
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.standard_normal(n), rng.lognormal(0, 2, n),
                            rng.integers(0, 2, n).astype(float),
                            10 + 5 * rng.standard_t(2, n)])


@parametrize_with_checks([Identity(), RobustClip(), PiecewiseLinear(n_bins=4)])
def test_maps_are_scikit_learn_transformers(estimator, check):
    check(estimator)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_robust_clip_object_is_the_map_bit_for_bit(weighted, dtype):
    X = _heavy().astype(dtype)
    w = np.random.default_rng(1).integers(0, 3, len(X)).astype(float) \
        if weighted else None
    fitted = RobustClip().fit(X, sample_weight=w)
    center, scale = robust_clip_statistics(X, w)
    np.testing.assert_array_equal(fitted.center_, center)
    np.testing.assert_array_equal(fitted.scale_, scale)
    np.testing.assert_array_equal(fitted.transform(X),
                                  robust_clip(X, center, scale))
    assert fitted.transform(X).dtype == dtype
    S = sp.csr_array(np.where(np.abs(X) > 1, X, 0))
    mapped = RobustClip().fit(S).transform(S)
    expected = robust_clip(S, *robust_clip_statistics(S))
    np.testing.assert_array_equal(
        mapped.toarray() if sp.issparse(mapped) else mapped,
        expected.toarray() if sp.issparse(expected) else expected)
    assert fitted.n_features_out_ == X.shape[1]


def test_identity_is_x_as_given():
    X = _heavy()
    identity = Identity().fit(X)
    assert identity.transform(X) is X
    assert identity.n_features_out_ == X.shape[1]
    names = identity.get_feature_names_out(["a", "b", "c", "d"])
    assert list(names) == ["a", "b", "c", "d"]


@pytest.mark.parametrize("Est", [GGNScoreRegressor, GGNScoreClassifier])
def test_estimators_hold_the_fitted_map(Est):
    X = _heavy()
    y = X[:, 0] > 0 if Est is GGNScoreClassifier else X[:, 0]
    est = Est(n_hidden=4, max_iter=2, random_state=0).fit(X, y)
    assert isinstance(est.input_map_, RobustClip)
    assert est.input_center_ is est.input_map_.center_
    assert est.input_scale_ is est.input_map_.scale_
    np.testing.assert_array_equal(est.input_center_,
                                  robust_clip_statistics(X)[0])
    plain = Est(n_hidden=4, max_iter=2, random_state=0,
                input_transform=None).fit(X, y)
    assert isinstance(plain.input_map_, Identity)
    assert plain.input_center_ is None and plain.input_scale_ is None
    with pytest.raises(AttributeError):
        _ = Est().input_center_


def test_unknown_input_transform_is_a_clear_error():
    X = _heavy()
    with pytest.raises(ValueError, match="input_transform"):
        GGNScoreRegressor(input_transform="robust").fit(X, X[:, 0])


@pytest.mark.parametrize("fit_dtype", [np.float64, np.float32])
def test_every_prediction_casts_then_maps(fit_dtype):
    """predict, decision_function, the probit and return_std cast X to the
    weights' dtype first, then map it: X in another dtype predicts as X
    cast."""
    X = _heavy().astype(fit_dtype)
    other = np.float32 if fit_dtype == np.float64 else np.float64
    X_other = X.astype(other) * other(1.0001)
    X_cast = X_other.astype(fit_dtype)
    reg = GGNScoreRegressor(n_hidden=4, max_iter=3, random_state=0).fit(
        X, X[:, 0])
    mean, std = reg.predict(X_other, return_std=True)
    mean_cast, std_cast = reg.predict(X_cast, return_std=True)
    np.testing.assert_array_equal(mean, mean_cast)
    np.testing.assert_array_equal(std, std_cast)
    clf = GGNScoreClassifier(n_hidden=4, max_iter=3, random_state=0,
                             predictive="probit").fit(X, X[:, 0] > 0)
    np.testing.assert_array_equal(clf.decision_function(X_other),
                                  clf.decision_function(X_cast))
    np.testing.assert_array_equal(clf.predict_proba(X_other),
                                  clf.predict_proba(X_cast))


def test_the_map_is_stored_as_plain_values():
    X = _heavy()
    reg = GGNScoreRegressor(n_hidden=4, max_iter=2, random_state=0,
                            input_transform="robust_clip").fit(X, X[:, 0])
    state = reg.__getstate__()
    plain = state["input_map_"]
    assert plain == {"class": "RobustClip", "params": {"stream": False},
                     "attributes": plain["attributes"]}
    assert set(plain["attributes"]) == {"n_features_in_", "center_", "scale_"}
    again = input_map_from_dict(input_map_to_dict(reg.input_map_))
    np.testing.assert_array_equal(again.transform(X), reg.input_map_.transform(X))
    restored = pickle.loads(pickle.dumps(reg))
    assert isinstance(restored.input_map_, RobustClip)
    np.testing.assert_array_equal(restored.predict(X), reg.predict(X))


def test_a_state_holding_the_statistics_alone_loads():
    """A state with ``input_center_`` and ``input_scale_`` and no map (as
    the 0.15 release pickles them) loads as the same map."""
    X = _heavy()
    for transform in ("robust_clip", None):
        reg = GGNScoreRegressor(n_hidden=4, max_iter=2, random_state=0,
                                input_transform=transform).fit(X, X[:, 0])
        state = reg.__getstate__()
        del state["input_map_"]
        state["input_center_"], state["input_scale_"] = (
            reg.input_center_, reg.input_scale_)
        old = GGNScoreRegressor.__new__(GGNScoreRegressor)
        old.__setstate__(state)
        assert type(old.input_map_) is type(reg.input_map_)
        assert "input_center_" not in old.__dict__
        np.testing.assert_array_equal(old.predict(X), reg.predict(X))


@pytest.mark.parametrize("name", ["robust_clip", "none"])
def test_skops_files_of_the_0_15_release_load(name):
    sio = pytest.importorskip("skops.io")
    reg = sio.load(DATA / f"release_0.15.0_{name}.skops",
                   trusted=["sklearn_ggn._estimators.GGNScoreRegressor"])
    stored = np.load(DATA / "release_0.15.0_predictions.npz")
    np.testing.assert_array_equal(reg.predict(stored["X"]), stored[name])
    assert isinstance(reg.input_map_,
                      RobustClip if name == "robust_clip" else Identity)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_network_owns_its_layout(fit_intercept):
    from sklearn_ggn._network import TwoLayerNetwork

    network = TwoLayerNetwork(5, 4, 3, 0.5, "silu", fit_intercept)
    shapes = network.weight_shapes()
    names = ["hidden_weights", "hidden_intercept", "output_weights",
             "output_intercept"]
    assert list(shapes) == (names if fit_intercept else names[::2])
    assert sum(int(np.prod(s)) for s in shapes.values()) == network.n_params
    theta = network.initial_theta(np.random.RandomState(0))
    weights = network.weights(theta)
    assert {k: v.shape for k, v in weights.items()} == shapes
    np.testing.assert_array_equal(network.theta_of(weights), theta)
    rng = np.random.RandomState(0)
    np.testing.assert_array_equal(weights["hidden_weights"],
                                  rng.standard_normal((4, 5)) / np.sqrt(5))
    np.testing.assert_array_equal(weights["output_weights"],
                                  rng.standard_normal((4, 3)))
    assert network.weights(theta, np.float32)["output_weights"].dtype == np.float32


# ------------------------------------------- piecewise-linear encodings (PLE)
def _mixed(n=300, seed=0):
    """A normal, a lognormal, a three-level, a binary and a constant column."""
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.standard_normal(n), rng.lognormal(0, 1.5, n),
                            rng.integers(0, 3, n).astype(float),
                            rng.integers(0, 2, n).astype(float), np.full(n, 2.0)])


def _sharp(n=400, seed=0):
    """Targets with a threshold and a bump in single columns."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 4))
    y = ((X[:, 0] > 0.5) + np.exp(-20 * (X[:, 1] - 0.3) ** 2) + 0.3 * X[:, 2]
         + 0.05 * rng.standard_normal(n))
    return X, y


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_bins", [4, 16])
def test_ple_matches_the_element_by_element_formula(weighted, n_bins):
    X = _mixed()
    w = (np.random.default_rng(3).integers(0, 4, len(X)) if weighted
         else None)
    ple = PiecewiseLinear(n_bins=n_bins).fit(
        X, sample_weight=None if w is None else w.astype(float))
    clip = RobustClip().fit(X, sample_weight=None if w is None else
                            w.astype(float))
    clipped = clip.transform(X)
    expected_edges = [naive_quantile_edges(clipped[:, j], n_bins, w)
                      for j in range(X.shape[1])]
    encoded = [j for j, e in enumerate(expected_edges) if len(e) >= 3]
    # the binary and the constant column are left raw; the three-level one
    # has its three values as edges (two bins)
    assert encoded == [0, 1, 2]
    assert len(ple.bin_edges_[2]) == 3
    for j in range(X.shape[1]):
        np.testing.assert_array_equal(
            ple.bin_edges_[j], expected_edges[j] if j in encoded else [])
    reference = np.array([
        list(clipped[i]) + [e for j in encoded for e in naive_piecewise_linear(
            clipped[i, j], expected_edges[j])] for i in range(len(X))])
    mapped = ple.transform(X)
    assert mapped.shape == (len(X), ple.n_features_out_)
    np.testing.assert_array_equal(mapped, reference)
    names = ple.get_feature_names_out(["a", "b", "c", "d", "e"])
    assert list(names[:6]) == ["a", "b", "c", "d", "e", "a_ple1"]
    assert names[-1] == "c_ple2" and len(names) == ple.n_features_out_


def test_ple_weights_count_as_repeated_rows():
    X = _mixed(200, seed=1)
    w = np.random.default_rng(2).integers(0, 4, len(X))
    weighted = PiecewiseLinear(n_bins=8).fit(X, sample_weight=w.astype(float))
    repeated = PiecewiseLinear(n_bins=8).fit(np.repeat(X, w, axis=0))
    # (the same quantiles; the scale's standard deviation rounds apart)
    for a, b in zip(weighted.bin_edges_, repeated.bin_edges_, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_ple_in_float32_and_outside_the_training_range():
    X = _mixed()
    ple = PiecewiseLinear().fit(X.astype(np.float32))
    mapped = ple.transform(X.astype(np.float32))
    assert mapped.dtype == np.float32
    np.testing.assert_allclose(mapped, PiecewiseLinear().fit(X).transform(X),
                               atol=1e-5)
    far = ple.transform(np.array([[1e30, -1e30, 1e30, 1.0, 1e30]]))
    assert np.all(np.isfinite(far)) and far.min() >= -4.1 and far.max() <= 4.1


def _continued_fits(Est, X, y, **kw):
    """A fit with the PLE option and the untransformed fit on the inputs
    encoded by hand."""
    kw = dict(n_hidden=8, max_iter=4, random_state=0, early_stopping=False,
              **kw)
    est = Est(input_transform="robust_clip+ple", **kw).fit(X, y)
    hand = Est(input_transform=None, **kw).fit(
        PiecewiseLinear().fit(X).transform(X), y)
    return est, hand


@pytest.mark.parametrize("batch_size", [None, 64])
def test_the_fit_on_encoded_inputs_is_the_plain_fit_on_them(batch_size):
    """The step is exact on x': the option's fit is the fit with
    input_transform=None on the inputs encoded by hand."""
    X, y = _sharp()
    reg, hand = _continued_fits(GGNScoreRegressor, X, y, batch_size=batch_size)
    assert reg.hidden_weights_.shape == (8, reg.input_map_.n_features_out_)
    for name in ("hidden_weights_", "output_weights_", "hidden_intercept_"):
        np.testing.assert_allclose(getattr(reg, name), getattr(hand, name),
                                   rtol=1e-12, atol=1e-12)
    encoded = reg.input_map_.transform(X)
    mean, std = reg.predict(X, return_std=True)
    mean_hand, std_hand = hand.predict(encoded, return_std=True)
    np.testing.assert_allclose(mean, mean_hand, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(std, std_hand, rtol=1e-10)
    clf, hand = _continued_fits(GGNScoreClassifier, X, y > 1,
                                predictive="probit")
    np.testing.assert_allclose(clf.predict_proba(X),
                               hand.predict_proba(encoded), rtol=1e-10,
                               atol=1e-12)


def test_ple_fit_with_early_stopping_the_watch_and_float32():
    X, y = _sharp(600)
    for kw in ({"early_stopping": True}, {"early_stopping": "auto"},
               {"compute_dtype": "float32", "batch_size": 100}):
        reg = GGNScoreRegressor(n_hidden=8, max_iter=6, random_state=0,
                                input_transform="robust_clip+ple", **kw).fit(X, y)
        assert reg.hidden_weights_.shape[1] == reg.input_map_.n_features_out_
        assert np.all(np.isfinite(reg.predict(X)))
    reg = GGNScoreRegressor(n_hidden=8, max_iter=6, random_state=0,
                            input_transform="robust_clip+ple").fit(
                                X.astype(np.float32), y)
    assert reg.predict(X).dtype == np.float32


def test_ple_is_kept_by_warm_starts_and_partial_fit():
    X, y = _sharp(400)
    reg = GGNScoreRegressor(n_hidden=6, max_iter=3, warm_start=True,
                            input_transform="robust_clip+ple").fit(X, y)
    edges = list(reg.input_map_.bin_edges_)
    reg.fit(X[:100] * 3, y[:100])
    for a, b in zip(reg.input_map_.bin_edges_, edges, strict=True):
        np.testing.assert_array_equal(a, b)
    inc = GGNScoreRegressor(n_hidden=6, input_transform="robust_clip+ple")
    inc.partial_fit(X[:200], y[:200])
    first = inc.input_map_
    assert first.stream and first.n_features_out_ > X.shape[1]
    inc.partial_fit(X[200:], y[200:])
    assert inc.input_map_ is first
    expected = PiecewiseLinear(stream=True).fit(X[:200])
    for a, b in zip(first.bin_edges_, expected.bin_edges_, strict=True):
        np.testing.assert_array_equal(a, b)
    # a cold refit fits the map again
    reg.set_params(warm_start=False).fit(X[200:], y[200:])
    assert reg.input_map_.n_features_out_ == PiecewiseLinear().fit(
        X[200:]).n_features_out_


def test_weights_of_another_width_are_a_clear_error():
    X, y = _sharp(200)
    reg = GGNScoreRegressor(n_hidden=4, warm_start=True,
                            input_transform="robust_clip+ple")
    reg.hidden_weights_ = np.zeros((4, X.shape[1]))
    reg.output_weights_ = np.zeros((4, 1))
    reg.hidden_intercept_, reg.output_intercept_ = np.zeros(4), np.zeros(1)
    with pytest.raises(ValueError, match="inputs to the network"):
        reg.fit(X, y)


def test_ple_is_stored_as_plain_values_and_skops_trusts_the_estimator_only():
    X, y = _sharp(200)
    reg = GGNScoreRegressor(n_hidden=4, max_iter=3, random_state=0,
                            input_transform="robust_clip+ple",
                            store_posterior=True).fit(X, y)
    plain = reg.__getstate__()["input_map_"]
    assert plain["class"] == "PiecewiseLinear"
    assert plain["params"] == {"n_bins": 16, "stream": False}
    assert all(isinstance(v, (int, np.ndarray))
               for v in plain["attributes"].values())
    restored = pickle.loads(pickle.dumps(reg))
    np.testing.assert_array_equal(restored.predict(X), reg.predict(X))
    sio = pytest.importorskip("skops.io")
    loaded = sio.loads(sio.dumps(reg),
                       trusted=["sklearn_ggn._estimators.GGNScoreRegressor"])
    np.testing.assert_array_equal(loaded.predict(X), reg.predict(X))
    np.testing.assert_array_equal(loaded.predict(X, return_std=True)[1],
                                  reg.predict(X, return_std=True)[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ple_onnx_output_is_predict(dtype):
    pytest.importorskip("skl2onnx")
    rt = pytest.importorskip("onnxruntime")
    from skl2onnx import to_onnx

    from sklearn_ggn import register_onnx_converters

    register_onnx_converters()
    X, y = _sharp(300)
    X_test = np.vstack([X[:50], 3 * X[:5]]).astype(dtype)
    reg = GGNScoreRegressor(n_hidden=6, max_iter=4, random_state=0,
                            input_transform="robust_clip+ple").fit(X, y)
    clf = GGNScoreClassifier(n_hidden=6, max_iter=4, random_state=0,
                             input_transform="robust_clip+ple").fit(X, y > 1)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for est in (reg, clf):
        onx = to_onnx(est, X_test[:1], options={"zipmap": False}
                      if est is clf else None)
        session = rt.InferenceSession(onx.SerializeToString(),
                                      providers=["CPUExecutionProvider"])
        outputs = session.run(None, {session.get_inputs()[0].name: X_test})
        if est is reg:
            np.testing.assert_allclose(outputs[0].ravel(), reg.predict(X_test),
                                       rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(outputs[0], clf.predict(X_test))
            np.testing.assert_allclose(outputs[1], clf.predict_proba(X_test),
                                       rtol=tol, atol=tol)


def _sparse_table(n=300, seed=0):
    """Two numeric columns (nonzero medians) and a one-hot block of 60
    levels, as a ColumnTransformer stacks them."""
    rng = np.random.default_rng(seed)
    numeric = np.column_stack([rng.uniform(1, 3, n), rng.lognormal(1, 1, n)])
    levels = rng.integers(0, 60, n)
    onehot = np.zeros((n, 60))
    onehot[np.arange(n), levels] = 1.0
    y = (numeric[:, 0] > 2) + 0.1 * levels / 60 + 0.05 * rng.standard_normal(n)
    return sp.csr_array(np.hstack([numeric, onehot])), y


def test_sparse_one_hot_block_stays_sparse_and_fits_as_its_dense_copy():
    S, y = _sparse_table()
    ple = PiecewiseLinear().fit(S)
    # the numeric columns are encoded, the one-hot levels left raw
    assert [len(e) > 0 for e in ple.bin_edges_[:3]] == [True, True, False]
    assert not any(len(e) for e in ple.bin_edges_[2:])
    mapped = ple.transform(S)
    assert sp.issparse(mapped)
    dense = PiecewiseLinear().fit(S.toarray())
    np.testing.assert_array_equal(mapped.toarray(), dense.transform(S.toarray()))
    kw = dict(n_hidden=6, max_iter=4, random_state=0, early_stopping=False,
              input_transform="robust_clip+ple")
    sparse_fit = GGNScoreRegressor(**kw).fit(S, y)
    dense_fit = GGNScoreRegressor(**kw).fit(S.toarray(), y)
    np.testing.assert_allclose(sparse_fit.hidden_weights_,
                               dense_fit.hidden_weights_, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(sparse_fit.predict(S), dense_fit.predict(S),
                               rtol=1e-10, atol=1e-10)


def test_sparse_columns_of_median_zero_are_encoded_only_when_zeros_stay_zero():
    """A column whose median is 0 is encoded on sparse X when it has no
    negative values (counts: its encodings keep its zeros), and left raw
    when it has some; its dense copy is encoded either way."""
    rng = np.random.default_rng(0)
    n = 400
    counts = np.where(rng.random(n) < 0.6, 0.0, rng.poisson(4, n) + 1.0)
    signed = np.where(rng.random(n) < 0.6, 0.0, rng.standard_normal(n))
    X = np.column_stack([counts, signed])
    sparse, dense = PiecewiseLinear().fit(sp.csr_array(X)), PiecewiseLinear().fit(X)
    assert len(sparse.bin_edges_[0]) >= 3 and len(sparse.bin_edges_[1]) == 0
    assert len(dense.bin_edges_[0]) >= 3 and len(dense.bin_edges_[1]) >= 3
    # (the same quantiles; the sparse scale's standard deviation rounds apart)
    np.testing.assert_allclose(sparse.bin_edges_[0], dense.bin_edges_[0],
                               rtol=1e-12)
    mapped = sparse.transform(sp.csr_array(X))
    assert sp.issparse(mapped) and mapped.nnz <= 3 * sp.csr_array(X).nnz
