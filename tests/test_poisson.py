"""The Poisson loss of the regressor (log link): estimator behaviour.

The numerical identities (residual and curvature against finite differences,
dual == primal == dense reference steps) are in ``test_numerics.py`` with the
other losses.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import PoissonRegressor
from sklearn.metrics import mean_poisson_deviance
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_ggn import GGNScoreRegressor
from sklearn_ggn._losses import PoissonLoss
from sklearn_ggn.datasets import make_teacher_student


def poisson_teacher_student(n_train=500, n_test=2000, seed=0):
    """Counts ``y ~ Poisson(exp(2 Φ*(x)))`` of the paper's teacher; returns the
    test inputs with their true means."""
    X, f, X_test, f_test = make_teacher_student(n_train, n_test, n_features=5,
                                                random_state=seed)
    rng = np.random.default_rng(seed)
    mean, mean_test = np.exp(2 * f), np.exp(2 * f_test)
    return X, rng.poisson(mean).astype(float), X_test, mean_test


# scikit-learn's multi-output check draws targets of both signs whatever the
# positive_only tag says; that data is invalid for the Poisson loss.
@parametrize_with_checks(
    [GGNScoreRegressor(loss="poisson")],
    expected_failed_checks=lambda est: {
        "check_regressor_multioutput": "negative targets (make_regression)"})
def test_sklearn_estimator_checks_poisson(estimator, check):
    # The checks fit tiny random data on purpose ("did not converge / did not
    # learn" warnings expected), and some use inputs near 100.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.filterwarnings("ignore", message="X has values up to")
        check(estimator)


def test_poisson_rejects_negative_targets_clearly():
    X = np.random.default_rng(0).standard_normal((20, 3))
    y = np.arange(20.0) - 1
    with pytest.raises(ValueError, match=r'loss="poisson" needs non-negative '
                                         r"targets.*1 negative value\(s\)"):
        GGNScoreRegressor(loss="poisson").fit(X, y)
    # zeros are valid counts (3 iterations on purpose)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        GGNScoreRegressor(loss="poisson", n_hidden=8, max_iter=3, tol=0).fit(
            X, np.zeros(20))


def test_poisson_predicts_the_mean_exp_phi():
    X, y, _, _ = poisson_teacher_student(n_train=60)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):  # 5 steps
        reg = GGNScoreRegressor(loss="poisson", n_hidden=16, max_iter=5,
                                random_state=0).fit(X, y)
    # (times the target scale: y is divided by its mean, see standardize_target)
    np.testing.assert_allclose(reg.predict(X), reg.target_scale_[0]
                               * np.exp(reg._raw_output(X)[:, 0]), rtol=1e-15)
    assert np.all(reg.predict(X) > 0)
    assert reg.score(X, y) == pytest.approx(
        1 - np.sum((y - reg.predict(X)) ** 2) / np.sum((y - y.mean()) ** 2))


def test_poisson_risk_is_half_mean_poisson_deviance():
    rng = np.random.default_rng(1)
    F = rng.standard_normal((50, 1))
    y = rng.poisson(2.0, 50).astype(float)
    s = np.full(50, 1 / 50)
    risk = PoissonLoss().risk(F, y[:, None], s)
    assert risk == pytest.approx(0.5 * mean_poisson_deviance(y, np.exp(F[:, 0])),
                                 rel=1e-12)
    # the constant baseline is the deviance of the mean prediction
    assert PoissonLoss().constant_risk(y[:, None], s) == pytest.approx(
        0.5 * mean_poisson_deviance(y, np.full(50, y.mean())), rel=1e-12)


def test_poisson_overflow_gives_inf_risk_without_warnings():
    F = np.array([[800.0], [0.0]])
    Y = np.array([[1.0], [0.0]])
    with np.errstate(all="raise"):
        assert PoissonLoss().risk(F, Y, np.array([0.5, 0.5])) == np.inf
        assert PoissonLoss().risk(F.astype(np.float32), Y.astype(np.float32),
                                  np.array([0.5, 0.5], np.float32)) == np.inf


def test_poisson_fit_beats_poisson_glm_on_a_poisson_teacher():
    """A Poisson teacher-student problem: the network's deviance from the
    true test means is below the log-linear GLM's, which cannot represent the
    teacher (measured: 0.038 against 0.100; MLPRegressor(loss="poisson")
    0.036 with its default 200 epochs)."""
    X, y, X_test, mean_test = poisson_teacher_student()
    reg = GGNScoreRegressor(loss="poisson", n_hidden=100, tau=1e-2,
                            random_state=0).fit(X, y)
    glm = PoissonRegressor(alpha=1e-4).fit(X, y)
    ours = mean_poisson_deviance(mean_test, reg.predict(X_test))
    theirs = mean_poisson_deviance(mean_test, glm.predict(X_test))
    assert ours < 0.6 * theirs
    assert reg.history_["risk"][-1] < 0.7 * reg.history_["risk"][0]


def test_poisson_multi_output_and_float32():
    X, y, _, _ = poisson_teacher_student(n_train=80)
    Y = np.column_stack([y, y[::-1]])
    reg = GGNScoreRegressor(loss="poisson", n_hidden=16, max_iter=5, tol=0,
                            random_state=0)
    with pytest.warns(Warning):  # max_iter budget
        reg.fit(X.astype(np.float32), Y)
    pred = reg.predict(X.astype(np.float32))
    assert pred.shape == (80, 2) and pred.dtype == np.float32
    assert np.all(np.isfinite(pred)) and np.all(pred > 0)
