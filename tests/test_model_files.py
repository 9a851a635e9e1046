"""Model files the size of the model: a pickle or ``skops.io`` file holds the
Laplace posterior only with ``store_posterior=True`` and never the training
rows unless the posterior's dual form (which keeps them) was asked for; an
estimator loaded without its posterior says how to keep it."""

import copy
import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.spatial import cKDTree
from sklearn.base import clone
from sklearn.datasets import load_diabetes, load_digits
from sklearn.exceptions import ConvergenceWarning

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

sio = pytest.importorskip("skops.io")

TRUSTED = {GGNScoreClassifier: ["sklearn_ggn._estimators.GGNScoreClassifier"],
           GGNScoreRegressor: ["sklearn_ggn._estimators.GGNScoreRegressor"]}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def _pickled(est):
    return pickle.loads(pickle.dumps(est))


def _skopsed(est):
    data = sio.dumps(est)
    assert sio.get_untrusted_types(data=data) == TRUSTED[type(est)]
    return sio.loads(data, trusted=TRUSTED[type(est)])


# ------------------------------------------------------------ the sizes
def test_a_default_digits_classifier_file_is_at_most_twice_the_model():
    """The issue's measure: a default digits classifier (its posterior, the
    output layer's, asked for before saving) against the same fit with
    ``uncertainty=None``, as a pickle and as a skops file; with
    ``store_posterior=True`` the file holds the 8 MB posterior."""
    X, y = load_digits(return_X_y=True)
    default = GGNScoreClassifier(random_state=0).fit(X, y)
    assert default.uncertainty_ == "last_layer"  # (computed now)
    none = GGNScoreClassifier(random_state=0, uncertainty=None).fit(X, y)
    assert_array_equal(default.output_weights_, none.output_weights_)
    for dumps in (pickle.dumps, sio.dumps):
        size, model = len(dumps(default)), len(dumps(none))
        assert size <= 2 * model, (dumps, size, model)
        stored = len(dumps(default.set_params(store_posterior=True)))
        default.set_params(store_posterior=False)
        # ((n + 1) K)² float64 = 8.2 MB
        assert stored > 8e6 and stored > 20 * model, (dumps, stored, model)


# ------------------------------------------------- no training rows in a file
def _arrays(obj, seen=None):
    """Every ndarray reachable from ``obj`` (dicts, lists, tuples, the
    attributes of objects, object arrays)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        if obj.dtype == object:
            for item in obj.ravel():
                yield from _arrays(item, seen)
        else:
            yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from _arrays(value, seen)
    elif isinstance(obj, (list, tuple, set)):
        for value in obj:
            yield from _arrays(value, seen)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        yield from _arrays(vars(obj), seen)


def _rows_found(obj, rows):
    """The largest number of the rows ``rows`` (n, d) that one array
    reachable from ``obj`` holds, as its rows or its columns (the first d
    entries: the augmented form has one more), to a relative 1e-6 (the
    network's inputs may be stored in another float type)."""
    d = rows.shape[1]
    tree = cKDTree(rows)
    tol = 1e-6 * max(1.0, float(np.abs(rows).max()))
    most = 0
    for a in _arrays(obj):
        if a.dtype.kind not in "fiu" or a.ndim == 0:
            continue
        a = np.asarray(a, dtype=np.float64)
        views = []
        if a.shape[-1] in (d, d + 1):
            views.append(a.reshape(-1, a.shape[-1])[:, :d])
        if a.ndim == 2 and a.shape[0] in (d, d + 1):
            views.append(a.T[:, :d])
        for view in views:
            view = view[np.all(np.isfinite(view), axis=1)]
            if len(view):
                distance, _ = tree.query(view, distance_upper_bound=tol)
                most = max(most, int(np.count_nonzero(np.isfinite(distance))))
    return most


def _rows_in_bytes(data, rows):
    """How many of ``rows`` appear in ``data`` as the bytes of a float64 or
    float32 row (the first d entries of an augmented row too)."""
    return sum(1 for row in rows
               if any(np.ascontiguousarray(row, dtype=t).tobytes() in data
                      for t in (np.float64, np.float32)))


def _training_forms(est, X):
    """The training inputs as given and as the network sees them."""
    return [np.asarray(X, dtype=np.float64),
            np.asarray(est._network_inputs(X), dtype=np.float64)]


def _diabetes():
    return load_diabetes(return_X_y=True)


def _digits():
    return load_digits(return_X_y=True)


FITS = [
    pytest.param(GGNScoreRegressor, {}, _diabetes, id="regressor-dual"),
    pytest.param(GGNScoreRegressor, {"noise": "heteroscedastic", "n_hidden": 20},
                 _diabetes, id="regressor-heteroscedastic"),
    pytest.param(GGNScoreRegressor, {"early_stopping": True}, _diabetes,
                 id="regressor-early-stopping"),
    pytest.param(GGNScoreClassifier, {}, _digits, id="classifier-last-layer"),
]


@pytest.mark.parametrize("cls, params, data", FITS)
def test_no_default_model_file_holds_training_rows(cls, params, data):
    """A default file, of an estimator asked for its posterior before saving
    (the diabetes regressor's is the dual form, which keeps the mapped
    training inputs), holds no training row, neither as given nor as the
    network sees them: in no array of the loaded object, in no bytes of the
    pickle or skops file. The same search finds the fit's rows in the file
    of ``store_posterior=True`` with the dual form."""
    X, y = data()
    est = cls(random_state=0, **params).fit(X, y)
    if cls is GGNScoreRegressor:
        est.predict(X[:5], return_std=True)
    else:
        assert est.log_marginal_likelihood_ is not None
    forms = _training_forms(est, X)
    for dumps, loads in ((pickle.dumps, pickle.loads),
                         (sio.dumps, lambda b: sio.loads(b,
                                                         trusted=TRUSTED[cls]))):
        data_bytes = dumps(est)
        loaded = loads(data_bytes)
        for rows in forms:
            assert _rows_found(loaded, rows) == 0
            assert _rows_in_bytes(data_bytes, rows) == 0
    if est.uncertainty_ == "dual":
        # (all rows, or the early-stopping fit's training part: 397 of 442)
        stored = pickle.dumps(est.set_params(store_posterior=True))
        mapped = forms[1]
        assert _rows_found(pickle.loads(stored), mapped) > 0.85 * len(X)
        assert _rows_in_bytes(stored, mapped) > 0.85 * len(X)


@pytest.mark.parametrize("structure", ["primal", "last_layer"])
@pytest.mark.parametrize("noise", ["homoscedastic", "heteroscedastic"])
def test_a_stored_primal_or_last_layer_posterior_holds_no_training_rows(
        structure, noise):
    """What the docstring of ``store_posterior`` says: of the stored forms
    only the dual one keeps the training inputs (the noise model, fitted on
    them, keeps none either)."""
    X, y = _diabetes()
    reg = GGNScoreRegressor(n_hidden=20, uncertainty=structure, noise=noise,
                            store_posterior=True, random_state=0).fit(X, y)
    data = pickle.dumps(reg)
    loaded = pickle.loads(data)
    assert loaded.uncertainty_ == structure
    for rows in _training_forms(reg, X):
        assert _rows_found(loaded, rows) == 0
        assert _rows_in_bytes(data, rows) == 0


# ------------------------------------------------------ store_posterior=True
@pytest.mark.parametrize("when", ["constructor", "set_params"])
@pytest.mark.parametrize("noise", ["homoscedastic", "heteroscedastic"])
def test_a_stored_posterior_gives_the_same_intervals(when, noise):
    """``store_posterior=True``, given to the constructor or set on the
    fitted estimator before saving (the posterior not yet computed): the
    loaded estimator's ``predict(X, return_std=True)``, evidence and noise
    are the original's, through pickle and skops (one trusted type, the
    noise model being a regressor too)."""
    X, y = _diabetes()
    params = dict(noise=noise, n_hidden=20, random_state=0)
    if when == "constructor":
        reg = GGNScoreRegressor(store_posterior=True, **params).fit(X, y)
    else:
        reg = GGNScoreRegressor(**params).fit(X, y)
        reg.set_params(store_posterior=True)
    copies = [_pickled(reg), _skopsed(reg)]
    mean, std = reg.predict(X, return_std=True)
    for loaded in copies:
        got_mean, got_std = loaded.predict(X, return_std=True)
        assert_array_equal(got_mean, mean)
        assert_allclose(got_std, std, rtol=1e-12)
        assert loaded.log_marginal_likelihood_ == reg.log_marginal_likelihood_
        assert_array_equal(loaded.noise_variance_, reg.noise_variance_)
        assert loaded.store_posterior is True


def test_a_stored_probit_posterior_gives_the_same_probabilities():
    X, y = _digits()
    X, y = X[:500], y[:500]
    clf = GGNScoreClassifier(predictive="probit", store_posterior=True,
                             max_iter=5, random_state=0).fit(X, y)
    proba = clf.predict_proba(X)
    for loaded in (_pickled(clf), _skopsed(clf)):
        assert_allclose(loaded.predict_proba(X), proba, rtol=1e-12, atol=0)


# ------------------------------------------------ loaded without the posterior
def test_a_regressor_loaded_without_its_posterior_says_how_to_keep_it():
    X, y = _diabetes()
    reg = GGNScoreRegressor(noise="heteroscedastic", n_hidden=20,
                            random_state=0).fit(X, y)
    mean, std = reg.predict(X, return_std=True)
    for loaded in (_skopsed(reg), _pickled(reg)):
        assert_array_equal(loaded.predict(X), mean)
        assert loaded.score(X, y) == reg.score(X, y)
        with pytest.raises(ValueError, match=r"saved without its Laplace "
                           r"posterior .*set_params\(store_posterior=True\)"):
            loaded.predict(X, return_std=True)
        for name in ("uncertainty_", "log_marginal_likelihood_",
                     "noise_variance_", "noise_model_"):
            with pytest.raises(ValueError, match="store_posterior=True"):
                getattr(loaded, name)
            assert not hasattr(loaded, name)
    # a refit computes it again
    assert_allclose(loaded.fit(X, y).predict(X, return_std=True)[1], std,
                    rtol=1e-12)
    # copies are not files: they keep the posterior
    for twin in (copy.copy(reg), copy.deepcopy(reg)):
        assert_array_equal(twin.predict(X, return_std=True)[1], std)
    assert clone(reg).get_params() == reg.get_params()


def test_storing_a_posterior_that_was_not_loaded_warns():
    """``store_posterior=True`` on an estimator loaded without its posterior
    has nothing to store: saving it says so (its file loads as its own)."""
    X, y = _diabetes()
    reg = GGNScoreRegressor(max_iter=5, random_state=0).fit(X, y)
    loaded = _pickled(reg).set_params(store_posterior=True)
    with pytest.warns(UserWarning, match="no posterior to store"):
        again = _pickled(loaded)
    with pytest.raises(ValueError, match="store_posterior=True"):
        again.predict(X, return_std=True)


def test_a_probit_classifier_loaded_without_its_posterior_refuses_probabilities():
    """Its ``predict_proba`` raises instead of giving the ``"map"``
    probabilities in place of the probit ones; ``predict`` and the ``"map"``
    probabilities are the original's."""
    X, y = _digits()
    clf = GGNScoreClassifier(predictive="probit", max_iter=5,
                             random_state=0).fit(X, y)
    for loaded in (_pickled(clf), _skopsed(clf)):
        assert_array_equal(loaded.predict(X), clf.predict(X))
        with pytest.raises(ValueError, match="store_posterior=True"):
            loaded.predict_proba(X)
        assert_array_equal(loaded.set_params(predictive="map").predict_proba(X),
                           clf.set_params(predictive="map").predict_proba(X))
        clf.set_params(predictive="probit")


def test_a_fit_without_a_posterior_keeps_its_reason_in_a_file():
    """Nothing to store: the loaded estimator says why it has none, as the
    original does."""
    X, y = _diabetes()
    reg = GGNScoreRegressor(uncertainty=None, max_iter=5, random_state=0).fit(X, y)
    loaded = _pickled(reg)
    assert loaded.uncertainty_ is None and loaded.log_marginal_likelihood_ is None
    with pytest.raises(ValueError, match="uncertainty=None"):
        loaded.predict(X, return_std=True)


# ------------------------------------------------------------ older files
@pytest.mark.parametrize("uncertainty", ["auto", None])
def test_a_file_written_before_the_parameter_loads(uncertainty):
    """A file of 0.15 holds the posterior computed (``_posterior_cache``
    with its state, no pending rows) and no ``store_posterior``: it loads
    with its intervals, and with ``store_posterior=True`` when it holds a
    posterior, so that saving it again keeps what it held."""
    X, y = _diabetes()
    reg = GGNScoreRegressor(uncertainty=uncertainty, max_iter=5,
                            random_state=0, store_posterior=True).fit(X, y)
    state = reg.__getstate__()  # (0.15's state: this one, without the key)
    del state["store_posterior"]
    old = GGNScoreRegressor.__new__(GGNScoreRegressor)
    old.__setstate__(state)
    assert old.store_posterior is (uncertainty is not None)
    if uncertainty is None:
        assert old.uncertainty_ is None
        return
    std = reg.predict(X, return_std=True)[1]
    assert_array_equal(old.predict(X, return_std=True)[1], std)
    assert_array_equal(_pickled(old).predict(X, return_std=True)[1], std)
