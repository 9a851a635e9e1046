"""The held-out loss per iteration (``validation_loss_curve_``) and the
early-stopping criterion of ``scoring`` (None, "loss", a scorer name or a
callable), each recomputed from the held-out rows."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import get_scorer, log_loss, roc_auc_score
from sklearn.model_selection import train_test_split

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def classification(seed=0):
    X, y = make_classification(n_samples=300, n_features=6, n_informative=4,
                               n_classes=3, random_state=seed)
    return train_test_split(X, y, test_size=0.3, random_state=0)


class Recorder:
    """A scorer that records the held-out log loss and R² of the estimator
    it is called with (the weights of that iteration)."""

    def __init__(self):
        self.log_losses, self.calls = [], 0

    def __call__(self, estimator, X, y):
        self.calls += 1
        self.log_losses.append(log_loss(y, estimator.predict_proba(X),
                                        labels=estimator.classes_))
        return -self.log_losses[-1]


def test_validation_loss_is_the_held_out_risk_of_each_iterate():
    """With X_val given, each entry of validation_loss_curve_ is the log loss
    of that iteration's model on X_val (recomputed by a scorer that sees the
    estimator at every iteration)."""
    X, X_val, y, y_val = classification()
    recorder = Recorder()
    clf = GGNScoreClassifier(n_hidden=8, max_iter=12, random_state=0,
                             scoring=recorder, n_iter_no_change=np.inf)
    clf.fit(X, y, X_val=X_val, y_val=y_val)
    assert len(clf.validation_loss_curve_) == len(clf.loss_curve_) == 12
    assert recorder.calls == 12
    assert_allclose(clf.validation_loss_curve_, recorder.log_losses, rtol=1e-9)
    assert_allclose(clf.history_["validation_score"],
                    -np.array(recorder.log_losses))
    # the last entry from the fitted model itself
    assert_allclose(clf.validation_loss_curve_[-1],
                    log_loss(y_val, clf.predict_proba(X_val)), rtol=1e-9)
    assert clf.validation_scores_ is None  # without early stopping


def test_early_stopping_split_loss_recomputed():
    """With early stopping on the held-out split, the final model is the
    best-scoring iterate; recomputed from the held-out rows (the split of
    the same random_state), its loss is the curve's entry at that iterate."""
    X, y = make_regression(n_samples=200, n_features=5, noise=5.0, random_state=0)
    reg = GGNScoreRegressor(n_hidden=16, early_stopping=True, random_state=0,
                            scoring="loss", max_iter=40, tol=0.0,
                            n_iter_no_change=5)
    reg.fit(X, y)
    curve = np.array(reg.validation_loss_curve_)
    assert_allclose(reg.validation_scores_, -curve)
    best = int(np.argmax(reg.validation_scores_))
    assert_allclose(reg.best_validation_score_, -curve[best])
    rng = np.random.RandomState(0)
    rng.standard_normal((16, 5)), rng.standard_normal((16, 1))  # θ0's draws
    _, idx_val = train_test_split(np.arange(200), test_size=0.1, random_state=rng)
    pred = (reg.predict(X[idx_val]) - reg.target_mean_[0]) / reg.target_scale_[0]
    truth = (y[idx_val] - reg.target_mean_[0]) / reg.target_scale_[0]
    assert_allclose(0.5 * np.mean((pred - truth) ** 2), curve[best], rtol=1e-6)


def test_no_validation_no_curve():
    X, _, y, _ = classification()
    clf = GGNScoreClassifier(n_hidden=8, max_iter=3, random_state=0).fit(X, y)
    assert clf.validation_loss_curve_ is None


def test_default_scoring_is_score():
    """scoring=None keeps the behaviour before the parameter: the validation
    scores are the estimator's score (accuracy) of each iterate."""
    X, X_val, y, y_val = classification()
    params = dict(n_hidden=8, max_iter=30, random_state=0, early_stopping=True)
    clf = GGNScoreClassifier(**params).fit(X, y, X_val=X_val, y_val=y_val)
    accuracy = GGNScoreClassifier(scoring="accuracy", **params).fit(
        X, y, X_val=X_val, y_val=y_val)
    assert_allclose(clf.validation_scores_, accuracy.validation_scores_)
    assert_allclose(clf.best_validation_score_, clf.score(X_val, y_val))
    assert_allclose(clf.output_weights_, accuracy.output_weights_)


def test_scorer_name_decides_early_stopping():
    X, y = make_classification(n_samples=400, n_features=8, weights=[0.8, 0.2],
                               random_state=1)
    X, X_val, y, y_val = train_test_split(X, y, test_size=0.3, random_state=0)
    clf = GGNScoreClassifier(n_hidden=16, max_iter=40, random_state=0,
                             early_stopping=True, scoring="roc_auc")
    clf.fit(X, y, X_val=X_val, y_val=y_val)
    assert_allclose(clf.best_validation_score_, max(clf.validation_scores_))
    # the kept model is the best iterate by that scorer
    assert_allclose(roc_auc_score(y_val, clf.predict_proba(X_val)[:, 1]),
                    clf.best_validation_score_)
    assert_allclose(get_scorer("roc_auc")(clf, X_val, y_val),
                    clf.best_validation_score_)


def test_weighted_validation_rows_reach_the_scorer():
    X, X_val, y, y_val = classification()
    sw_val = np.random.RandomState(0).uniform(0.1, 3.0, size=len(y_val))
    clf = GGNScoreClassifier(n_hidden=8, max_iter=5, random_state=0,
                             scoring="neg_log_loss")
    clf.fit(X, y, X_val=X_val, y_val=y_val, sample_weight_val=sw_val)
    assert_allclose(clf.history_["validation_score"][-1],
                    -log_loss(y_val, clf.predict_proba(X_val), sample_weight=sw_val))
    assert_allclose(clf.validation_loss_curve_[-1],
                    log_loss(y_val, clf.predict_proba(X_val), sample_weight=sw_val),
                    rtol=1e-9)


def test_regressor_scorer_in_units_of_y():
    X, y = make_regression(n_samples=200, n_features=5, noise=5.0, random_state=0)
    y = 100.0 * y + 1e4  # far from standardized units
    X, X_val, y, y_val = train_test_split(X, y, test_size=0.3, random_state=0)
    reg = GGNScoreRegressor(n_hidden=16, max_iter=5, random_state=0,
                            scoring="neg_mean_absolute_error")
    reg.fit(X, y, X_val=X_val, y_val=y_val)
    assert_allclose(reg.history_["validation_score"][-1],
                    -np.mean(np.abs(reg.predict(X_val) - y_val)))


def test_warm_start_continues_the_curve():
    X, X_val, y, y_val = classification()
    clf = GGNScoreClassifier(n_hidden=8, max_iter=4, random_state=0,
                             warm_start=True, n_iter_no_change=np.inf)
    clf.fit(X, y, X_val=X_val, y_val=y_val)
    clf.fit(X, y, X_val=X_val, y_val=y_val)
    assert len(clf.validation_loss_curve_) == 8


def test_unknown_scorer_name():
    X, _, y, _ = classification()
    with pytest.raises(ValueError, match="not a valid scoring value"):
        GGNScoreClassifier(scoring="no_such_score", max_iter=2).fit(X, y)
