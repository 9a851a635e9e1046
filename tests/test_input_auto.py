"""``input_transform="auto"``: the map chosen on the overfitting watch's
held-out rows, each candidate's phase the phase of its own option, or in a
full batch that climbs the evidence by each map's Laplace evidence."""

import pickle
import warnings

import numpy as np
import pytest

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor, _advice
from sklearn_ggn._base import TrainingData
from sklearn_ggn._inputs import AUTO_MAP_CANDIDATES, PiecewiseLinear, RobustClip
from sklearn_ggn._watch import _lower, nest, row_risks


def _steps(n, seed):
    """A target of thresholds and a bump in single columns: the encoding's
    case."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 6))
    y = (4.0 * (X[:, 0] > 0.6) + 3.0 * np.exp(-(X[:, 1] - 0.3) ** 2 / 0.005)
         + 2.0 * X[:, 2] + 0.25 * rng.standard_normal(n))
    return X, y


def _linear(n, seed):
    """A linear target under heavy noise: the plain map's case."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 8))
    return X, X @ rng.standard_normal(8) + 2.0 * rng.standard_normal(n)


# (rows: the encoding's case needs enough held-out rows for its margin)
CASES = [(_steps, "robust_clip+ple", 3000, 2), (_linear, "robust_clip", 1500, 0)]


def _fit(Est, X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Est(random_state=0, max_iter=30, **params).fit(X, y)


@pytest.mark.parametrize("Est", [GGNScoreRegressor, GGNScoreClassifier])
@pytest.mark.parametrize("make, expected, n, seed", CASES)
def test_auto_is_the_fit_of_the_map_it_chose_bit_for_bit(Est, make, expected, n,
                                                         seed):
    # whichever candidate wins, and whichever ran last, the fitted model is
    # the fit of input_transform=<the chosen map>: same watch, same weights
    X, y = make(n, seed)
    if Est is GGNScoreClassifier:
        y = (y > np.median(y)).astype(int)
    auto = _fit(Est, X, y, input_transform="auto")
    assert auto.input_transform_ == expected
    given = _fit(Est, X, y, input_transform=expected)
    for name in ("hidden_weights_", "output_weights_"):
        np.testing.assert_array_equal(getattr(auto, name), getattr(given, name))
    assert auto.n_iter_ == given.n_iter_
    assert auto.loss_curve_ == given.loss_curve_
    assert type(auto.input_map_) is type(given.input_map_)
    report = auto.overfitting_watch_
    assert {k: v for k, v in report.items() if k != "input_transform"} == \
        given.overfitting_watch_
    # the risks compared: the plain map's at the end of its own watch, and
    # the richer network's after AUTO_MAP_EPOCHS more epochs from it; the
    # encoding won by a clear margin
    risks = report["input_transform"]["validation_risk"]
    assert list(risks) == list(AUTO_MAP_CANDIDATES)
    assert report["input_transform"]["chosen"] == expected
    plain = _fit(Est, X, y, input_transform="robust_clip")
    assert risks["robust_clip"] == plain.overfitting_watch_["validation_loss_curve"][-1]
    if expected == "robust_clip+ple":
        assert risks[expected] < 0.8 * risks["robust_clip"]


@pytest.mark.parametrize("Est", [GGNScoreRegressor, GGNScoreClassifier])
def test_the_richer_network_starts_as_the_plain_fit(Est):
    # the encoded network that "auto" tries starts from the plain fit: its
    # first columns are the plain map's, their weights the fitted ones, the
    # encodings' weights zero; it predicts what the plain fit predicts
    X, y = _steps(1500, 5)
    if Est is GGNScoreClassifier:
        y = np.digitize(y, np.quantile(y, [0.3, 0.7]))
    plain = _fit(Est, X, y, early_stopping=False)
    nested = pickle.loads(pickle.dumps(plain))
    nest(nested, PiecewiseLinear()._fit(X, None))
    assert nested.hidden_weights_.shape[1] > X.shape[1]
    np.testing.assert_array_equal(nested.input_map_.transform(X)[:, :X.shape[1]],
                                  plain.input_map_.transform(X))
    F, G = nested._raw_output(X), plain._raw_output(X)
    # (the same terms, with exact zeros added: only the order of the sums
    # of the first layer's d + 1 terms may differ)
    scale = np.abs(plain.hidden_weights_).sum(axis=1).max() * np.abs(
        plain.input_map_.transform(X)).max()
    tol = 4 * (X.shape[1] + 1) * np.finfo(np.float64).eps * scale * np.abs(
        plain.output_weights_).sum() * plain.n_hidden
    np.testing.assert_allclose(F, G, rtol=0, atol=tol)


@pytest.mark.parametrize("Est", [GGNScoreRegressor, GGNScoreClassifier])
def test_row_risks_average_to_the_recorded_held_out_risk(Est):
    # the paired test's row risks are the terms of the monitor's risk
    X, y = _steps(600, 3)
    if Est is GGNScoreClassifier:
        y = np.digitize(y, np.quantile(y, [0.3, 0.7]))
    Xv, yv = _steps(200, 4)
    if Est is GGNScoreClassifier:
        yv = np.digitize(yv, np.quantile(y, [0.3, 0.7]))
    est = Est(random_state=0, max_iter=5, compute_dtype="float64",
              batch_size=100, early_stopping=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y, X_val=Xv, y_val=yv)
    Xc, Yc = est._validate_input(Xv, yv, reset=False)
    rows = row_risks(est, TrainingData(Xc, Yc, yv, np.ones(len(yv))))
    # (both in float64, in another order of the same ≤200 terms)
    np.testing.assert_allclose(rows.mean(), est.validation_loss_curve_[-1],
                               rtol=200 * np.finfo(np.float64).eps)


def test_the_paired_test_takes_a_later_map_only_for_a_clear_difference():
    rng = np.random.default_rng(0)
    best = rng.exponential(size=400)
    noise = 0.2 * rng.standard_normal(400)
    w = np.ones(400)
    assert not _lower(best + noise, best, w)  # no better, just other
    assert not _lower(best - 0.005 + noise, best, w)  # ~0.5 SE better
    assert _lower(best - 0.05 + noise, best, w)  # ~5 SE better
    assert not _lower(np.full(400, np.inf), best, w)  # a diverged phase
    # weights: rows of zero weight do not count
    w0 = np.r_[np.ones(200), np.zeros(200)]
    worse = best + np.r_[-0.05 + noise[:200], np.full(200, 10.0)]
    assert _lower(worse, best, w0) and not _lower(worse, best, w)


@pytest.mark.parametrize("make, expected", [(_steps, "robust_clip+ple"),
                                            (_linear, "robust_clip")])
def test_a_full_batch_regressor_chooses_the_map_by_the_evidence(make, expected):
    # no rows held out, but each map's fit climbs its Laplace evidence: the
    # map of the higher one is kept, bit for bit the fit of that map
    X, y = make(300, 1)
    auto = _fit(GGNScoreRegressor, X, y)
    assert auto.overfitting_watch_ is None
    fits = {name: _fit(GGNScoreRegressor, X, y, input_transform=name)
            for name in AUTO_MAP_CANDIDATES}
    record = auto.tau_path_["input_transform"]
    for name, fit in fits.items():
        climb = fit.tau_path_["evidence_path"]
        assert record["log_evidence"][name] == climb["log_evidence"][climb["chosen"]]
    assert auto.input_transform_ == record["chosen"] == expected
    assert record["log_evidence"][expected] == max(record["log_evidence"].values())
    given = fits[expected]
    for name in ("hidden_weights_", "output_weights_"):
        np.testing.assert_array_equal(getattr(auto, name), getattr(given, name))
    assert auto.tau_ == given.tau_ and auto.loss_curve_ == given.loss_curve_
    np.testing.assert_array_equal(auto.predict(X, return_std=True),
                                  given.predict(X, return_std=True))


def test_auto_without_a_watch_or_an_evidence_is_the_robust_clip():
    # full-batch fits that climb no evidence (a classifier, a given tau,
    # GCV's alone) map as "robust_clip" does
    X, y = _steps(300, 1)
    for Est, params in ((GGNScoreClassifier, {}), (GGNScoreRegressor, {"tau": 1e-3}),
                        (GGNScoreRegressor, {"tau": "gcv"})):
        target = (y > np.median(y)).astype(int) if Est is GGNScoreClassifier else y
        auto = _fit(Est, X, target, **params)
        plain = _fit(Est, X, target, input_transform="robust_clip", **params)
        assert auto.overfitting_watch_ is None
        assert auto.input_transform_ == "robust_clip"
        assert "input_transform" not in (auto.tau_path_ or {})
        np.testing.assert_array_equal(auto.hidden_weights_, plain.hidden_weights_)
    # nor does early_stopping=False or partial_fit's stream
    X, y = _steps(1500, 1)
    off = _fit(GGNScoreRegressor, X, y, input_transform="auto", early_stopping=False)
    assert type(off.input_map_) is RobustClip and off.input_transform_ == "robust_clip"
    stream = GGNScoreRegressor(input_transform="auto", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stream.partial_fit(X[:500], y[:500]).partial_fit(X[500:], y[500:])
    assert stream.input_transform_ == "robust_clip"


def test_auto_choice_is_kept_by_warm_starts_and_files():
    X, y = _steps(1500, 2)
    est = _fit(GGNScoreRegressor, X, y, input_transform="auto")
    assert isinstance(est.input_map_, PiecewiseLinear)
    loaded = pickle.loads(pickle.dumps(est))
    assert loaded.input_transform_ == "robust_clip+ple"
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    # a warm start continues the chosen map and its width
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.set_params(warm_start=True, max_iter=3).fit(X, y)
    assert est.input_transform_ == "robust_clip+ple"
    assert est.hidden_weights_.shape[1] == est.input_map_.n_features_out_
    assert np.isfinite(est.predict(X)).all()


def test_input_transform_is_the_given_value_without_auto():
    X, y = _linear(200, 0)
    assert _fit(GGNScoreRegressor, X, y).input_transform_ == "robust_clip"
    assert _fit(GGNScoreRegressor, X, y, input_transform=None).input_transform_ is None
    assert not hasattr(GGNScoreRegressor(), "input_transform_")
    with pytest.raises(ValueError, match="input_transform"):
        GGNScoreRegressor(input_transform="ple").fit(X, y)


def _screened(est):
    return est.overfitting_watch_["input_transform"]["validation_risk"]


def _weighed(est):
    return est.tau_path_["input_transform"]["log_evidence"]


# (the held-out rows choose on 1500 rows, the evidence on 300)
@pytest.mark.parametrize("n, seed, record", [(1500, 0, _screened), (300, 1, _weighed)])
def test_the_rejected_encodings_warn_nothing(monkeypatch, n, seed, record):
    # the width advice (its thresholds lowered so that the encoded network
    # gets it and the plain one does not): a fit that keeps the plain map
    # warns as the plain map's fit does, whatever the encoded one heard
    monkeypatch.setattr(_advice, "ABSURD_PARAMS_PER_SAMPLE", 5)
    monkeypatch.setattr(_advice, "ABSURD_FIT_FLOPS", 0)
    X, y = _linear(n, seed)

    def messages(**params):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = GGNScoreRegressor(random_state=0, max_iter=30, **params).fit(X, y)
        return est, sorted(str(w.message) for w in caught)

    auto, heard = messages()
    assert auto.input_transform_ == "robust_clip"
    assert "robust_clip+ple" in record(auto)  # (the encoded map was tried)
    assert heard == messages(input_transform="robust_clip")[1]
    # the encoded network does get the advice when it is the fit's
    assert any("parameters for" in m
               for m in messages(input_transform="robust_clip+ple")[1])


def test_the_choices_warnings_obey_filters_by_module():
    # a warning raised again after the choice names its module as
    # warnings.warn does: a filter on the package silences it
    from sklearn.exceptions import ConvergenceWarning

    for n in (300, 1500):  # (the evidence's choice, the held-out rows')
        X, y = _steps(n, 1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.filterwarnings("ignore", category=ConvergenceWarning,
                                    module="sklearn_ggn")
            GGNScoreRegressor(random_state=0, max_iter=3).fit(X, y)
        assert not [w for w in caught if issubclass(w.category, ConvergenceWarning)]


def test_ctrl_c_in_the_second_fit_leaves_the_estimator_and_warns_nothing(monkeypatch):
    from sklearn_ggn import _base

    X, y = _steps(300, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # (max_iter=3: the plain fit warns that it reached max_iter)
        fitted = GGNScoreRegressor(random_state=0, max_iter=3).fit(X, y)
    before = dict(fitted.__dict__)
    original = _base.BaseGGNScore._fit_phase

    def interrupted(self, *args, **kwargs):
        if self.__dict__.get("_map_candidate") == "robust_clip+ple":
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    monkeypatch.setattr(_base.BaseGGNScore, "_fit_phase", interrupted)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("error")  # (a warning would replace the interrupt)
        with pytest.raises(KeyboardInterrupt):
            fitted.fit(X, y)
    assert not caught
    assert fitted.__dict__.keys() == before.keys()
    assert all(fitted.__dict__[k] is before[k] for k in before)


def test_a_fit_with_callbacks_chooses_nothing_by_the_evidence():
    callback = pytest.importorskip("sklearn.callback")
    X, y = _steps(300, 1)
    est = GGNScoreRegressor(random_state=0, max_iter=30).set_callbacks(
        callback.ScoringMonitor(scoring="r2"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    assert est.input_transform_ == "robust_clip"
    assert "input_transform" not in est.tau_path_
