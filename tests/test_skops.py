"""Safe persistence: ``skops.io`` round-trips every kind of fitted estimator
trusting only the package's own estimator classes, and pickling still
restores the same estimator, able to continue (warm start, partial_fit)."""

import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.datasets import (
    make_classification,
    make_multilabel_classification,
    make_regression,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor
from sklearn_ggn._persistence import solver_state_from_dict as _solver_state_from_dict
from sklearn_ggn._persistence import solver_state_to_dict as _solver_state_to_dict

sio = pytest.importorskip("skops.io")

TRUSTED = {GGNScoreClassifier: ["sklearn_ggn._estimators.GGNScoreClassifier"],
           GGNScoreRegressor: ["sklearn_ggn._estimators.GGNScoreRegressor"]}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def _data(kind):
    if kind == "multilabel":
        X, y = make_multilabel_classification(n_samples=120, n_features=5,
                                              n_classes=3, random_state=0)
        return StandardScaler().fit_transform(X), y
    if kind.startswith("regression"):
        X, y = make_regression(n_samples=120, n_features=5, random_state=0)
        if kind == "regression_poisson":
            y = np.abs(y) / 10
        return X, y
    n_classes = 3 if kind == "multiclass" else 2
    X, y = make_classification(n_samples=120, n_features=5, n_informative=3,
                               n_classes=n_classes, random_state=0)
    return X, np.array(["no", "yes", "maybe"])[y] if kind == "strings" else y


CASES = [
    ("binary", GGNScoreClassifier, {}),
    ("strings", GGNScoreClassifier, {"loss": "squared_error"}),
    ("multiclass", GGNScoreClassifier, {"early_stopping": True}),
    ("multiclass", GGNScoreClassifier, {"batch_size": 30, "partial": True}),
    ("multiclass", GGNScoreClassifier, {"class_weight": "balanced",
                                        "damping": "auto"}),
    ("multilabel", GGNScoreClassifier, {"early_stopping": True}),
    ("regression", GGNScoreRegressor, {"early_stopping": True}),
    ("regression", GGNScoreRegressor, {"batch_size": 30, "partial": True}),
    ("regression", GGNScoreRegressor, {"damping": 1.0, "solver": "gd"}),
    ("regression_poisson", GGNScoreRegressor, {"loss": "poisson"}),
    ("regression", GGNScoreRegressor, {"loss": "huber", "epsilon": 0.5,
                                       "early_stopping": True,
                                       "scoring": "neg_mean_absolute_error"}),
]


def _fitted(kind, cls, params):
    params = dict(params)
    partial = params.pop("partial", False)
    X, y = _data(kind)
    est = cls(n_hidden=6, max_iter=8, random_state=0, **params)
    if partial:
        for chunk in np.array_split(np.arange(len(X)), 3):
            kwargs = {"classes": np.unique(y)} if cls is GGNScoreClassifier else {}
            est.partial_fit(X[chunk], y[chunk], **kwargs)
    else:
        est.fit(X, y)
    return est, X, y


def _outputs(est, X):
    outputs = [est.predict(X)]
    if hasattr(est, "predict_proba"):
        outputs.append(est.predict_proba(X))
    if hasattr(est, "decision_function"):
        outputs.append(est.decision_function(X))
    return outputs


@pytest.mark.parametrize("kind, cls, params", CASES)
def test_skops_round_trip_trusts_only_the_estimator(kind, cls, params):
    est, X, y = _fitted(kind, cls, params)
    data = sio.dumps(est)
    assert sio.get_untrusted_types(data=data) == TRUSTED[cls]
    loaded = sio.loads(data, trusted=TRUSTED[cls])
    assert type(loaded) is cls
    for got, expected in zip(_outputs(loaded, X), _outputs(est, X), strict=True):
        assert_array_equal(got, expected)
    assert_array_equal(loaded.loss_curve_, est.loss_curve_)
    assert type(loaded._solver_state) is type(est._solver_state)
    got, expected = (_solver_state_to_dict(e._solver_state) for e in (loaded, est))
    step_from = [d.pop("step_from") for d in (got, expected)]
    assert got == expected
    if step_from[1] is None:
        assert step_from[0] is None
    else:
        assert_array_equal(step_from[0], step_from[1])


@pytest.mark.parametrize("kind, cls, params", CASES[3:5] + CASES[7:8])
def test_continues_after_loading(kind, cls, params):
    """A loaded estimator continues (partial_fit / warm start) exactly as
    the original: the solver state (the adapted damping) survives skops and
    pickle."""
    est, X, y = _fitted(kind, cls, params)
    copies = [sio.loads(sio.dumps(est), trusted=TRUSTED[cls]),
              pickle.loads(pickle.dumps(est))]
    for other in [est] + copies:
        other.set_params(warm_start=True)
        if "partial" in params:
            other.partial_fit(X, y)
        else:
            other.fit(X, y)
    for other in copies:
        assert_array_equal(other.output_weights_, est.output_weights_)
        assert_array_equal(other.loss_curve_, est.loss_curve_)


def test_pickle_restores_the_solver_state_object():
    est, X, _ = _fitted("multiclass", GGNScoreClassifier,
                        {"batch_size": 30, "partial": True})
    loaded = pickle.loads(pickle.dumps(est))
    assert type(loaded._solver_state.damping) is type(est._solver_state.damping)
    assert vars(loaded._solver_state.damping) == vars(est._solver_state.damping)
    assert_array_equal(loaded.predict_proba(X), est.predict_proba(X))
    # the fitted attributes are unchanged by pickling
    assert set(vars(loaded)) == set(vars(est))


def test_plain_state_round_trip():
    est, _, _ = _fitted("regression", GGNScoreRegressor,
                        {"batch_size": 30, "partial": True})
    plain = _solver_state_to_dict(est._solver_state)
    assert plain["damping"]["strategy"] == type(est._solver_state.damping).__name__

    def is_plain(value):
        if isinstance(value, dict):
            return all(isinstance(k, str) and is_plain(v) for k, v in value.items())
        if isinstance(value, np.ndarray):  # (partial_fit's last step)
            return value.dtype.kind == "f"
        return value is None or isinstance(value, (bool, int, float, str))

    assert is_plain(plain)
    restored = _solver_state_from_dict(plain)
    assert vars(restored.damping) == vars(est._solver_state.damping)
    assert_array_equal(restored.step_from, est._solver_state.step_from)
    assert restored.n_steps == est._solver_state.n_steps


def test_unfitted_round_trip():
    est = GGNScoreClassifier(n_hidden=7, class_weight={0: 2.0})
    data = sio.dumps(est)
    assert sio.get_untrusted_types(data=data) == TRUSTED[GGNScoreClassifier]
    assert sio.loads(data, trusted=TRUSTED[GGNScoreClassifier]).get_params() == \
        est.get_params()
