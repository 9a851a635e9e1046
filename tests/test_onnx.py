"""ONNX deployment: ``skl2onnx.to_onnx`` after ``register_onnx_converters``,
run by ``onnxruntime``, reproduces ``predict``, ``predict_proba`` and
``decision_function`` for every loss and activation, with and without
intercepts, alone and at the end of a Pipeline.

Needs ``skl2onnx`` and ``onnxruntime`` (the ``onnx`` extra, also in the
``test`` extra); skipped otherwise, except the test of the error without
``skl2onnx``.
"""

import builtins
import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.datasets import make_classification, make_multilabel_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor, register_onnx_converters

ACTIVATIONS = ["silu", "relu", "tanh", "sigmoid", "softplus", "identity"]
TASKS = ["log_loss_binary", "log_loss_multiclass", "multilabel",
         "squared_error_binary", "squared_error_multiclass",
         "squared_error", "squared_error_multioutput", "poisson", "huber"]
TOL = 1e-4  # float32 graph against the float64 estimator


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def task_data(task, seed=0):
    """Standardized inputs and the estimator of ``task``."""
    rng = np.random.RandomState(seed)
    if task == "multilabel":
        X, y = make_multilabel_classification(n_samples=150, n_features=5,
                                              n_classes=3, random_state=seed)
        return StandardScaler().fit_transform(X), y, GGNScoreClassifier()
    if task.startswith(("log_loss", "squared_error_b", "squared_error_mu")) \
            and task != "squared_error_multioutput":
        n_classes = 2 if task.endswith("binary") else 4
        X, y = make_classification(n_samples=150, n_features=5, n_informative=4,
                                   n_redundant=0, n_classes=n_classes,
                                   random_state=seed)
        loss = "log_loss" if task.startswith("log_loss") else "squared_error"
        return X, y, GGNScoreClassifier(loss=loss)
    X = rng.standard_normal((150, 5))
    signal = np.tanh(X[:, :2]) @ [1.0, -0.5] + 0.3 * X[:, 2]
    if task == "poisson":
        return X, rng.poisson(np.exp(signal)), GGNScoreRegressor(loss="poisson")
    if task == "squared_error_multioutput":
        y = np.column_stack([signal, X[:, 3] ** 2]) * 3.0 + 2.0
        return X, y, GGNScoreRegressor()
    y = 3.0 * signal + 1.0 + 0.1 * rng.standard_normal(150)
    y[:5] += 20.0  # outliers for the Huber loss
    return X, y, GGNScoreRegressor(loss="huber" if task == "huber" else
                                   "squared_error")


def fitted(task, activation, fit_intercept):
    X, y, est = task_data(task)
    est.set_params(n_hidden=10, activation=activation, fit_intercept=fit_intercept,
                   max_iter=8, random_state=0)
    return X, y, est.fit(X, y)


def run(model, X, options=None):
    from skl2onnx import to_onnx

    rt = pytest.importorskip("onnxruntime")
    onx = to_onnx(model, X[:1].astype(np.float32), options=options,
                  target_opset=17)
    session = rt.InferenceSession(onx.SerializeToString(),
                                  providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: X.astype(np.float32)})


def final(model):
    return model.steps[-1][1] if hasattr(model, "steps") else model


def check_classifier(model, X):
    est = final(model)
    no_zipmap = {id(est): {"zipmap": False}}
    labels, scores = run(model, X, no_zipmap)
    raw = run(model, X, {id(est): {"zipmap": False, "raw_scores": True}})[1]
    decision = model.decision_function(X)
    if decision.ndim == 1:
        decision = np.column_stack([-decision, decision])
    assert np.abs(raw - decision).max() <= TOL
    if est.loss == "log_loss":
        assert np.abs(scores - model.predict_proba(X)).max() <= TOL
    else:  # no probabilities: the decision values
        assert np.abs(scores - decision).max() <= TOL
    expected = model.predict(X)
    if est._multilabel:
        threshold = 0.0 if est.loss == "log_loss" else 0.5
        clear = np.abs(decision - threshold) > TOL  # not rounded across
        assert_array_equal(labels[clear], expected[clear])
    else:
        top = np.sort(decision, axis=1)
        clear = top[:, -1] - top[:, -2] > TOL
        assert clear.mean() > 0.9
        assert_array_equal(labels[clear], expected[clear])
    return max(np.abs(raw - decision).max(), np.abs(scores - (
        model.predict_proba(X) if est.loss == "log_loss" else decision)).max())


def check_regressor(model, X):
    (predictions,) = run(model, X)
    expected = model.predict(X).reshape(len(X), -1)
    assert predictions.shape == expected.shape
    difference = np.abs(predictions - expected).max()
    # float32 rounding is relative: the targets' scale (up to ~30) enters
    assert difference <= TOL * max(1.0, np.abs(expected).max()), difference
    return difference


@pytest.fixture(scope="module", autouse=True)
def _registered():
    pytest.importorskip("skl2onnx")
    pytest.importorskip("onnxruntime")
    register_onnx_converters()


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("task", TASKS)
def test_onnxruntime_reproduces_the_estimator(task, activation, fit_intercept):
    X, _, est = fitted(task, activation, fit_intercept)
    X_new = np.random.RandomState(1).standard_normal((200, X.shape[1]))
    X_all = np.vstack([X, X_new])
    if isinstance(est, GGNScoreClassifier):
        check_classifier(est, X_all)
    else:
        check_regressor(est, X_all)


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("task", TASKS)
def test_in_a_pipeline(task, activation):
    X, y, est = task_data(task)
    X = 3.0 * X + 5.0  # the scaler's work
    est.set_params(n_hidden=10, activation=activation, max_iter=8, random_state=0)
    pipe = make_pipeline(StandardScaler(), est).fit(X, y)
    if isinstance(est, GGNScoreClassifier):
        check_classifier(pipe, X)
    else:
        check_regressor(pipe, X)


def test_string_labels_and_zipmap():
    X, y = make_classification(n_samples=120, n_features=4, n_informative=3,
                               n_redundant=0, n_classes=3, random_state=0)
    labels = np.array(["cat", "dog", "emu"])[y]
    clf = GGNScoreClassifier(n_hidden=8, max_iter=8, random_state=0).fit(X, labels)
    predicted, probabilities = run(clf, X)  # default: a list of dicts
    assert_array_equal(predicted, clf.predict(X))
    as_matrix = np.array([[row[c] for c in clf.classes_] for row in probabilities])
    assert np.abs(as_matrix - clf.predict_proba(X)).max() <= TOL


def test_float64_graph_is_exact():
    from skl2onnx import to_onnx

    rt = pytest.importorskip("onnxruntime")
    X, _, reg = fitted("squared_error", "silu", True)
    onx = to_onnx(reg, X[:1])  # a float64 input: the graph computes in float64
    session = rt.InferenceSession(onx.SerializeToString(),
                                  providers=["CPUExecutionProvider"])
    (predictions,) = session.run(None, {session.get_inputs()[0].name: X})
    np.testing.assert_allclose(predictions[:, 0], reg.predict(X), rtol=1e-12,
                               atol=1e-12)


def test_float32_fit_converts():
    X, y, clf = task_data("log_loss_multiclass")
    clf.set_params(n_hidden=8, max_iter=5, random_state=0, batch_size=30)
    clf.fit(X.astype(np.float32), y)
    assert clf.hidden_weights_.dtype == np.float32
    check_classifier(clf, X)


def test_error_without_skl2onnx(monkeypatch):
    real_import = builtins.__import__

    def without_skl2onnx(name, *args, **kwargs):
        if name == "skl2onnx" or name.startswith("skl2onnx."):
            raise ImportError("No module named 'skl2onnx'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_skl2onnx)
    with pytest.raises(ImportError, match=r"sklearn_ggn\[onnx\]"):
        register_onnx_converters()


def test_probit_predictive_is_not_exported_silently():
    """The graph holds no posterior: a classifier whose predict_proba is the
    probit predictive raises instead of exporting other probabilities (they
    differed by up to 0.27); predictive="map" and the raw scores convert."""
    from skl2onnx import to_onnx

    X, y = make_classification(300, 6, n_informative=4, n_classes=3,
                               random_state=0)
    clf = GGNScoreClassifier(n_hidden=8, max_iter=8, predictive="probit",
                             random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    with pytest.raises(NotImplementedError, match="probit predictive"):
        to_onnx(clf, X[:1].astype(np.float32), target_opset=17)
    # (loaded from a file saved without its posterior: refused the same way)
    loaded = pickle.loads(pickle.dumps(clf))
    with pytest.raises(NotImplementedError, match="probit predictive"):
        to_onnx(loaded, X[:1].astype(np.float32), target_opset=17)
    raw = run(clf, X, {id(clf): {"zipmap": False, "raw_scores": True}})[1]
    assert np.abs(raw - clf.decision_function(X)).max() <= TOL
    clf.set_params(predictive="map")
    check_classifier(clf, X)


def test_old_opsets_are_named():
    from skl2onnx import to_onnx

    X, y, est = fitted("regression", "silu", True)
    with pytest.raises(NotImplementedError, match="opset 11 or newer"):
        to_onnx(est, X[:1].astype(np.float32), target_opset=10)


def test_nocl_is_refused():
    """nocl=True asks for class indices; the graph outputs the labels (it
    was accepted and ignored: labels [5 5 6] beside zipmap keys [0, 1, 2])."""
    from skl2onnx import to_onnx

    X, y = make_classification(200, 5, n_classes=3, n_informative=3,
                               random_state=0)
    clf = GGNScoreClassifier(n_hidden=6, max_iter=5, random_state=0).fit(X, y + 5)
    with pytest.raises(NotImplementedError, match="nocl=True"):
        to_onnx(clf, X[:1].astype(np.float32), target_opset=17,
                options={id(clf): {"nocl": True}})
