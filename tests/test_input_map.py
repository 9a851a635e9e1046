"""The input map as one fitted object: scikit-learn's transformer API,
the estimators' ``input_map_`` and the one prediction path through it,
and files of the estimators written before the map was an object."""

import pathlib
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor
from sklearn_ggn._inputs import (
    Identity,
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


@parametrize_with_checks([Identity(), RobustClip()])
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
    reg = GGNScoreRegressor(n_hidden=4, max_iter=2, random_state=0).fit(
        X, X[:, 0])
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
