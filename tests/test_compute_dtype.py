"""compute_dtype: the dtype of the steps, whatever X's dtype."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor


def _digits(rows=600):
    X, y = load_digits(return_X_y=True)
    return StandardScaler().fit_transform(X[:rows]), y[:rows]


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, y)


def test_auto_is_float32_on_mini_batches_for_float64_data():
    """A float64 X on mini-batches: the steps of "auto" are "float32"'s,
    bit for bit, and the weights come back in float64."""
    X, y = _digits()
    kw = dict(n_hidden=16, batch_size=64, max_iter=3, random_state=0)
    auto = _fit(GGNScoreClassifier(**kw), X, y)
    f32 = _fit(GGNScoreClassifier(compute_dtype="float32", **kw), X, y)
    f64 = _fit(GGNScoreClassifier(compute_dtype="float64", **kw), X, y)
    assert auto.hidden_weights_.dtype == np.float64
    np.testing.assert_array_equal(auto.hidden_weights_, f32.hidden_weights_)
    # float32-representable weights: the steps held them in float32
    np.testing.assert_array_equal(
        auto.hidden_weights_, auto.hidden_weights_.astype(np.float32))
    assert not np.array_equal(f64.hidden_weights_,
                              f64.hidden_weights_.astype(np.float32))
    # the same fit up to float32 rounding
    scale = np.abs(f64.hidden_weights_).max()
    assert np.abs(auto.hidden_weights_ - f64.hidden_weights_).max() < 1e-3 * scale
    assert auto.predict_proba(X).dtype == np.float64


def test_auto_is_float64_on_small_full_batches():
    X, y = _digits(300)
    kw = dict(n_hidden=8, max_iter=3, random_state=0)
    auto = _fit(GGNScoreClassifier(**kw), X, y)
    f64 = _fit(GGNScoreClassifier(compute_dtype="float64", **kw), X, y)
    np.testing.assert_array_equal(auto.hidden_weights_, f64.hidden_weights_)
    f32 = _fit(GGNScoreClassifier(compute_dtype="float32", **kw), X, y)
    np.testing.assert_array_equal(f32.hidden_weights_,
                                  f32.hidden_weights_.astype(np.float32))


def test_float32_data_with_float64_steps_gives_a_float32_model():
    X, y = _digits()
    X32 = X.astype(np.float32)
    kw = dict(n_hidden=8, batch_size=64, max_iter=2, random_state=0)
    est = _fit(GGNScoreClassifier(compute_dtype="float64", **kw), X32, y)
    assert est.hidden_weights_.dtype == np.float32
    assert est.predict_proba(X32).dtype == np.float32
    ref = _fit(GGNScoreClassifier(compute_dtype="float64", **kw),
               X32.astype(np.float64), y)
    np.testing.assert_allclose(est.hidden_weights_, ref.hidden_weights_,
                               rtol=0, atol=1e-6 * np.abs(ref.hidden_weights_).max())


def test_weights_that_float32_cannot_hold_get_a_clear_error():
    X, y = _digits()
    w = np.full(len(y), 1e-300)
    est = GGNScoreClassifier(n_hidden=4, batch_size=64, max_iter=1)
    with pytest.raises(ValueError, match="compute_dtype='float64'"):
        est.fit(X, y, sample_weight=w)
    assert not hasattr(est, "hidden_weights_")
    _fit(GGNScoreClassifier(n_hidden=4, batch_size=64, max_iter=1,
                            compute_dtype="float64"), X, y)
    # a common factor does not change the weighting: rescaled, they fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y, sample_weight=w * 1e300)


def test_unknown_compute_dtype_is_rejected():
    X, y = _digits(100)
    with pytest.raises(ValueError, match="compute_dtype"):
        GGNScoreRegressor(compute_dtype="float16").fit(X, y.astype(float))


def test_a_pickle_without_the_parameter_loads_as_auto():
    X, y = _digits(200)
    est = _fit(GGNScoreClassifier(n_hidden=4, max_iter=2), X, y)
    state = est.__getstate__()
    del state["compute_dtype"]
    old = GGNScoreClassifier.__new__(GGNScoreClassifier)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old.__setstate__(state)
    assert old.get_params()["compute_dtype"] == "auto"
    np.testing.assert_array_equal(old.predict(X), est.predict(X))
    pickle.loads(pickle.dumps(old))
