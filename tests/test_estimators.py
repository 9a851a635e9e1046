"""API conventions, bad input, and training behaviour of the estimators."""

import pickle
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor
from sklearn_ggn.datasets import make_teacher_student


def _held_out_split(estimator):
    # a weight-2 row and a repeated row fall into different validation splits
    # (MLPClassifier marks this check as failing for the same reason; the
    # default's overfitting watch holds out rows only from 500 rows on, more
    # than the checks fit)
    if estimator.early_stopping is not True:
        return {}
    why = "a weight-2 row and a repeated row fall into different splits"
    return {"check_sample_weight_equivalence_on_dense_data": why,
            "check_sample_weight_equivalence_on_sparse_data": why}


# the defaults, and early stopping with its default validation_fraction (a
# split too small for the checks' tiny data warns and trains on)
@parametrize_with_checks([GGNScoreRegressor(), GGNScoreClassifier(),
                          GGNScoreRegressor(early_stopping=True),
                          GGNScoreClassifier(early_stopping=True)],
                         expected_failed_checks=_held_out_split,
                         xfail_strict=True)
def test_sklearn_estimator_checks(estimator, check):
    # The checks fit tiny random data on purpose: "did not converge / did not
    # learn" warnings are expected there, and some use inputs near 100.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.filterwarnings("ignore", message="X has values up to")
        check(estimator)


def regression_data(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, np.sin(X[:, 0]) + 0.5 * X[:, 1]


def classification_data(n=60, d=4, n_classes=3, seed=0):
    X, y = make_classification(n_samples=n, n_features=d, n_informative=3,
                               n_redundant=0, n_classes=n_classes, random_state=seed)
    return X, y


# ------------------------------------------------------------------ bad input
X_OK, Y_OK = regression_data()

BAD_INPUT = [
    # (id, estimator, X, y, error type, message pattern)
    ("nan", GGNScoreRegressor(), np.where(X_OK > 1.5, np.nan, X_OK), Y_OK,
     ValueError, "NaN"),
    ("inf", GGNScoreRegressor(), np.where(X_OK > 1.5, np.inf, X_OK), Y_OK,
     ValueError, "infinity"),
    ("nan_y", GGNScoreRegressor(), X_OK, np.where(Y_OK > 1, np.nan, Y_OK),
     ValueError, "NaN"),
    ("empty", GGNScoreRegressor(), np.empty((0, 3)), np.empty(0),
     ValueError, "0 sample"),
    ("mismatched_lengths", GGNScoreRegressor(), X_OK, Y_OK[:-3],
     ValueError, "inconsistent numbers of samples"),
    ("one_class", GGNScoreClassifier(), X_OK, np.zeros(len(X_OK)),
     ValueError, r"only one class: 0\.0\.$"),
    ("one_string_class", GGNScoreClassifier(), X_OK, np.full(len(X_OK), "a"),
     ValueError, r"only one class: 'a'\.$"),
    ("multiclass_multioutput", GGNScoreClassifier(), X_OK,
     np.arange(2 * len(X_OK)).reshape(-1, 2) % 3,
     ValueError, "Multioutput target data is not supported.*2 columns"),
    ("3d_X", GGNScoreRegressor(), X_OK.reshape(-1, 3, 1), Y_OK,
     ValueError, "Found array with dim 3"),
    ("strings_in_X", GGNScoreRegressor(), np.array([["a", "b", "c"]] * 40), Y_OK,
     ValueError, "could not convert string to float"),
    ("continuous_labels", GGNScoreClassifier(), X_OK, Y_OK,
     ValueError, "Unknown label type"),
    ("negative_mu", GGNScoreRegressor(mu=-1.0), X_OK, Y_OK, ValueError, "'mu'"),
    ("zero_mu", GGNScoreRegressor(mu=0.0), X_OK, Y_OK, ValueError, "'mu'"),
    ("negative_tau", GGNScoreRegressor(tau=-1e-4), X_OK, Y_OK, ValueError, "'tau'"),
    ("zero_step_size", GGNScoreRegressor(step_size=0.0), X_OK, Y_OK,
     ValueError, "'step_size'"),
    ("step_size_above_one", GGNScoreRegressor(step_size=1.5), X_OK, Y_OK,
     ValueError, "'step_size'"),
    ("unknown_activation", GGNScoreRegressor(activation="gelu"), X_OK, Y_OK,
     ValueError, "'activation'"),
    ("zero_damping", GGNScoreRegressor(damping=0.0), X_OK, Y_OK,
     ValueError, "'damping'"),
    ("zero_hidden", GGNScoreRegressor(n_hidden=0), X_OK, Y_OK,
     ValueError, "'n_hidden'"),
    ("tau_zero_with_exact_damping", GGNScoreRegressor(tau=0.0, damping="tau"), X_OK,
     Y_OK, ValueError, "damping='tau' uses H = tau.*set tau > 0"),
    ("negative_sample_weight", GGNScoreRegressor(), X_OK, Y_OK,
     ValueError, "Negative values in data passed to `sample_weight`"),
    ("zero_sample_weights", GGNScoreRegressor(), X_OK, Y_OK,
     ValueError, "Sample weights must contain at least one non-zero number"),
]
SAMPLE_WEIGHTS = {"negative_sample_weight": -np.ones(len(Y_OK)),
                  "zero_sample_weights": np.zeros(len(Y_OK))}


@pytest.mark.parametrize("case", BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
def test_bad_input_gets_a_clear_error(case):
    name, est, X, y, error, pattern = case
    with pytest.raises(error, match=pattern):
        est.fit(X, y, sample_weight=SAMPLE_WEIGHTS.get(name))


def test_predict_input_is_validated():
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        reg = GGNScoreRegressor(n_hidden=8, max_iter=2).fit(X_OK, Y_OK)
    with pytest.raises(ValueError, match="3 features"):
        reg.predict(X_OK[:, :2])
    with pytest.raises(ValueError, match="NaN"):
        reg.predict(np.full((2, 3), np.nan))


def test_user_weights_of_wrong_shape_are_rejected():
    reg = GGNScoreRegressor(n_hidden=8, warm_start=True)
    reg.hidden_weights_ = np.zeros((5, 3))
    reg.output_weights_ = np.zeros((8, 1))
    reg.hidden_intercept_, reg.output_intercept_ = np.zeros(8), np.zeros(1)
    with pytest.raises(ValueError, match=re.escape("hidden_weights_ has shape (5, 3)")):
        reg.fit(X_OK, Y_OK)


def test_diverging_fit_keeps_finite_weights_and_warns():
    X, y, _, _ = make_teacher_student(n_train=100, random_state=0)
    reg = GGNScoreRegressor(n_hidden=50, damping=1e-12, step_size=1.0,
                            line_search=False, batch_size=None, max_iter=30,
                            random_state=0)
    with pytest.warns(ConvergenceWarning, match="diverged"):
        reg.fit(X, y)
    for name in ("hidden_weights_", "output_weights_", "hidden_intercept_",
                 "output_intercept_"):
        assert np.all(np.isfinite(getattr(reg, name)))
    assert np.all(np.isfinite(reg.predict(X)))
    assert all(np.isfinite(reg.loss_curve_))


@pytest.mark.parametrize("compute_dtype", ["auto", "float64"])
def test_diverging_mini_batch_fit_restores_the_epoch_start(compute_dtype):
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    clf = GGNScoreClassifier(damping=0.01, line_search=False, max_iter=3,
                             random_state=0, compute_dtype=compute_dtype)
    with pytest.warns(ConvergenceWarning, match="diverged after 0 iterations"):
        clf.fit(X, y)
    assert clf.t_ >= 1  # some steps were taken before the divergence was seen
    # ... and undone: the weights are the initial ones, not the diverged ones
    rng = np.random.RandomState(0)
    U0 = rng.standard_normal((100, X.shape[1])) / np.sqrt(X.shape[1])
    # (as the steps hold them: rounded to float32 when they compute in it)
    work = np.float32 if compute_dtype == "auto" else np.float64
    np.testing.assert_array_equal(clf.hidden_weights_, U0.astype(work))


# ------------------------------------------------------------------ conventions
def test_integer_sample_weights_equal_repeated_rows():
    X, y = classification_data()
    w = np.random.default_rng(0).integers(0, 4, len(y))
    # One step with the exact curvature, and eight steps with damping=1 (with
    # H = tau*g'' the system is ill-conditioned enough that round-off, which
    # differs between the two batch layouts, grows over many steps).
    for max_iter, damping in [(1, "tau"), (8, 1.0)]:
        kw = dict(n_hidden=12, batch_size=None, max_iter=max_iter, tol=0,
                  damping=damping, random_state=0)
        # (the regressor's tau="gcv": one solve at the criterion's τ; the
        # evidence path's many solves are the next test's)
        for Est, params in ((GGNScoreClassifier, {}), (GGNScoreRegressor,
                                                        {"tau": "gcv"})):
            target = y if Est is GGNScoreClassifier else y.astype(float)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                weighted = Est(**kw, **params).fit(X, target, sample_weight=w)
                repeated = Est(**kw, **params).fit(np.repeat(X, w, axis=0),
                                                   np.repeat(target, w))
            np.testing.assert_allclose(weighted.hidden_weights_,
                                       repeated.hidden_weights_, rtol=1e-9,
                                       atol=1e-11)
            np.testing.assert_allclose(weighted.loss_curve_, repeated.loss_curve_,
                                       rtol=1e-9)


def test_integer_sample_weights_make_the_evidence_choices_of_repeated_rows():
    # the regressor's default full batch: the evidence path and the map
    # chosen by the evidence see a row of weight 2 as the row twice
    X, y = classification_data()
    w = np.random.default_rng(0).integers(0, 4, len(y))
    kw = dict(n_hidden=12, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        weighted = GGNScoreRegressor(**kw).fit(X, y.astype(float), sample_weight=w)
        repeated = GGNScoreRegressor(**kw).fit(np.repeat(X, w, axis=0),
                                               np.repeat(y.astype(float), w))
    a, b = weighted.tau_path_, repeated.tau_path_
    assert a["input_transform"]["chosen"] == b["input_transform"]["chosen"]
    for name, value in a["input_transform"]["log_evidence"].items():
        np.testing.assert_allclose(value, b["input_transform"]["log_evidence"][name],
                                   rtol=1e-9)
    np.testing.assert_array_equal(a["evidence_path"]["tau"], b["evidence_path"]["tau"])
    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), rtol=1e-9,
                               atol=1e-11)


@pytest.mark.parametrize("batch_size", [None, 8])
def test_fixed_seed_is_reproducible_bit_for_bit(batch_size):
    X, y = classification_data()
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):  # 4 on purpose
        fits = [GGNScoreClassifier(n_hidden=10, batch_size=batch_size, max_iter=4,
                                   early_stopping=batch_size is not None,
                                   random_state=3).fit(X, y) for _ in range(2)]
    assert np.array_equal(fits[0].hidden_weights_, fits[1].hidden_weights_)
    assert fits[0].loss_curve_ == fits[1].loss_curve_


def test_partial_fit_and_warm_start():
    X, y = classification_data()
    clf = GGNScoreClassifier(n_hidden=10, batch_size=16, random_state=0)
    clf.partial_fit(X[:30], y[:30], classes=np.unique(y))
    first = clf.hidden_weights_.copy()
    clf.partial_fit(X[30:], y[30:])
    # n_iter_ counts the last call's epochs (as MLPClassifier); loss_curve_
    # the whole sequence's
    assert clf.n_iter_ == 1 and len(clf.loss_curve_) == 2
    assert not np.array_equal(first, clf.hidden_weights_)
    assert clf.t_ == 2 + 2  # two batches of 16 (14) per pass over 30 samples
    with pytest.raises(ValueError, match="labels not in classes_"):
        clf.partial_fit(X, y + 10)

    reg = GGNScoreRegressor(n_hidden=10, max_iter=3, warm_start=True, tol=0,
                            random_state=0)
    with pytest.warns(ConvergenceWarning):
        reg.fit(X_OK, Y_OK)
        start = reg.hidden_weights_.copy()
        reg.fit(X_OK, Y_OK)
    assert reg.n_iter_ == 3 and len(reg.loss_curve_) == 6
    assert not np.array_equal(start, reg.hidden_weights_)


def test_early_stopping_keeps_best_validation_weights():
    X, y = classification_data(n=200)
    kw = dict(n_hidden=16, batch_size=32, early_stopping=True, n_iter_no_change=3,
              random_state=0)
    clf = GGNScoreClassifier(max_iter=50, **kw).fit(X, y)
    assert len(clf.validation_scores_) == clf.n_iter_ < 50
    best_epoch = int(np.argmax(clf.validation_scores_)) + 1
    assert best_epoch < clf.n_iter_  # it went on past the best epoch ...
    # ... and came back to it: same seed, stopped right at the best epoch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        at_best = GGNScoreClassifier(max_iter=best_epoch, **kw).fit(X, y)
    np.testing.assert_array_equal(clf.hidden_weights_, at_best.hidden_weights_)
    assert clf.best_loss_ is None  # as MLPClassifier under early stopping


def test_validation_rows_without_weight_are_named():
    """A validation side of zero weight: an error naming it before the fit,
    not r2_score's after the first epoch."""
    rng = np.random.RandomState(0)
    X = rng.randn(200, 3)
    weights = np.zeros(200)
    weights[0] = 1.0  # (a training row of the split of random_state=0)
    with pytest.raises(ValueError, match="validation set have zero weight"):
        GGNScoreRegressor(early_stopping=True, random_state=0).fit(
            X, X[:, 0], sample_weight=weights)
    with pytest.raises(ValueError, match="sample_weight_val is zero"):
        GGNScoreRegressor(early_stopping=True).fit(
            X, X[:, 0], X_val=X[:10], y_val=X[:10, 0],
            sample_weight_val=np.zeros(10))


def test_warm_start_may_switch_on_early_stopping():
    X, y = classification_data(n=100)
    clf = GGNScoreClassifier(n_hidden=8, batch_size=32, max_iter=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
        clf.set_params(warm_start=True, early_stopping=True).fit(X, y)
    assert len(clf.validation_scores_) == 2


def test_failed_partial_fit_leaves_no_classes_behind():
    X, y = classification_data(n=40, n_classes=2)
    clf = GGNScoreClassifier(n_hidden=8)
    with pytest.raises(ValueError, match="NaN"):
        clf.partial_fit(np.full_like(X, np.nan), y, classes=[0, 1, 2])
    clf.fit(X, y)
    np.testing.assert_array_equal(clf.classes_, [0, 1])


def test_auto_damping_is_mini_batch_damping_for_partial_fit():
    """A stream of small chunks must not get the exact (tiny) curvature."""
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    scores = {}
    for damping in ("auto", 1.0):
        clf = GGNScoreClassifier(damping=damping, random_state=0)
        for start in range(0, len(y_train), 16):
            clf.partial_fit(X_train[start:start + 16], y_train[start:start + 16],
                            classes=np.arange(10))
        scores[damping] = clf.score(X_test, y_test)
    assert scores["auto"] == scores[1.0] > 0.8


def test_tau_zero_uses_unit_damping_with_auto():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reg = GGNScoreRegressor(tau=0.0, n_hidden=8, max_iter=5).fit(X_OK, Y_OK)
    assert np.isfinite(reg.loss_curve_[-1])


def test_verbose_prints_one_line_per_iteration(capsys):
    with pytest.warns(ConvergenceWarning):
        # (a given τ: one solve; the evidence path prints a line per solve)
        GGNScoreRegressor(n_hidden=6, max_iter=3, tol=0, tau=1e-2,
                          verbose=True).fit(X_OK, Y_OK)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("It")]
    assert len(lines) == 3
    for key in ("objective", "risk", "step size", "time"):
        assert key in lines[0]


def test_gradient_descent_solver_follows_the_risk_gradient():
    X, y, _, _ = make_teacher_student(n_train=100, random_state=1)
    reg = GGNScoreRegressor(solver="gd", n_hidden=50, batch_size=None, max_iter=50,
                            tol=0, random_state=0)
    with pytest.warns(ConvergenceWarning):
        reg.fit(X, y)
    assert reg.loss_curve_[-1] < reg.loss_curve_[0]
    assert np.all(np.diff(reg.loss_curve_) <= 0)  # lr=1 is stable here


def test_binary_and_squared_error_classifiers():
    X, y = classification_data(n_classes=2, n=80)
    for loss in ("log_loss", "squared_error"):
        # τ pinned: this tests the two losses' machinery on 80 noise-free
        # rows, where tau="auto" (0.01) trades training fit for smoothness
        clf = GGNScoreClassifier(loss=loss, n_hidden=16, tau=1e-4,
                                 random_state=0).fit(X, y)
        scores = clf.decision_function(X)
        assert scores.shape == (80,)
        np.testing.assert_array_equal(clf.predict(X), clf.classes_[(scores > 0) * 1])
        assert clf.score(X, y) > 0.9
    assert clf.n_outputs_ == 2 and not hasattr(clf, "predict_proba")


@pytest.mark.parametrize("linear_solver", ["dual", "primal"])
def test_multi_output_regression(linear_solver):
    X, _ = regression_data(n=60)
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 1] * X[:, 2]])
    reg = GGNScoreRegressor(n_hidden=20, linear_solver=linear_solver,
                            random_state=0).fit(X, Y)
    assert reg.predict(X).shape == (60, 2) and reg.score(X, Y) > 0.9


# ------------------------------------------------------------------ behaviour
@pytest.mark.parametrize("tau,bound", [(1e-4, 1e-4), (1e-6, 1e-6)])
def test_teacher_student_reaches_the_regularized_floor(tau, bound):
    """SPEC section 4: m=500, d=5, n=500, SiLU, μ=√n, exact damping, line search."""
    X, y, _, _ = make_teacher_student(n_train=500, n_features=5, random_state=0)
    reg = GGNScoreRegressor(n_hidden=500, activation="silu", mu=np.sqrt(500),
                            tau=tau, damping="tau", line_search=True,
                            batch_size=None, max_iter=30, tol=0, random_state=0,
                            standardize_target=False)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        reg.fit(X, y)
    risk = 0.5 * np.mean((reg.predict(X) - y) ** 2)
    assert risk < bound
    assert np.all(np.diff(reg.loss_curve_) <= 0)  # never increases


def test_digits_pipeline_accuracy():
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25,
                                                        random_state=0, stratify=y)
    model = make_pipeline(StandardScaler(), GGNScoreClassifier(random_state=0))
    model.fit(X_train, y_train)
    assert model.score(X_test, y_test) >= 0.95


def test_grid_search_over_mu_and_tau_in_parallel_is_picklable():
    X, y = load_digits(n_class=4, return_X_y=True)
    pipe = make_pipeline(StandardScaler(), GGNScoreClassifier(n_hidden=16,
                                                              max_iter=5,
                                                              random_state=0))
    grid = {"ggnscoreclassifier__mu": [0.5, "auto"],
            "ggnscoreclassifier__tau": [1e-5, 1e-3]}
    with warnings.catch_warnings():
        # 5 iterations per fit on purpose (the workers' warnings do not reach
        # pytest.warns; the refit's do)
        warnings.simplefilter("ignore", ConvergenceWarning)
        search = GridSearchCV(pipe, grid, cv=2, n_jobs=2).fit(X, y)
    assert search.best_score_ > 0.8
    restored = pickle.loads(pickle.dumps(search))
    np.testing.assert_array_equal(restored.predict(X), search.predict(X))
    fresh = pickle.loads(pickle.dumps(clone(search)))
    assert fresh.get_params()["estimator__ggnscoreclassifier__n_hidden"] == 16


def test_squared_error_classifier_says_why_it_has_no_probabilities():
    X, y = classification_data()
    clf = GGNScoreClassifier(loss="squared_error", n_hidden=8, max_iter=3,
                             random_state=0)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        clf.fit(X, y)
    assert not hasattr(clf, "predict_proba")
    with pytest.raises(AttributeError) as info:
        clf.predict_proba(X)
    assert "loss='log_loss'" in str(info.value.__cause__)


def test_multilabel_mini_batches_early_stopping_and_partial_fit():
    """Indicator targets on the Python mini-batch loop (the compiled epoch
    has no multilabel loss), with early stopping and partial_fit."""
    from sklearn.datasets import make_multilabel_classification

    X, Y = make_multilabel_classification(n_samples=300, n_classes=4,
                                          random_state=0)
    X = StandardScaler().fit_transform(X)
    clf = GGNScoreClassifier(n_hidden=16, batch_size=32, early_stopping=True,
                             max_iter=30, random_state=0).fit(X, Y)
    assert clf.predict(X).shape == Y.shape
    assert set(np.unique(clf.predict(X))) <= {0, 1}
    proba = clf.predict_proba(X)
    assert proba.shape == Y.shape and np.all((proba > 0) & (proba < 1))
    assert not np.allclose(proba.sum(axis=1), 1.0)  # independent labels
    np.testing.assert_array_equal(clf.classes_, np.arange(4))
    assert clf.score(X, Y) > 0.4 and clf.batch_size_ == 32
    # a sparse indicator matrix is the same targets (it crashed the split)
    sparse = GGNScoreClassifier(n_hidden=16, batch_size=32, early_stopping=True,
                                max_iter=30, random_state=0).fit(
        X, sp.csr_matrix(Y))
    np.testing.assert_array_equal(sparse.predict_proba(X), proba)
    assert sparse.validation_scores_ == clf.validation_scores_
    stream = GGNScoreClassifier(n_hidden=16, random_state=0)
    for start in range(0, 300, 100):
        stream.partial_fit(X[start:start + 100], Y[start:start + 100])
    assert stream.predict(X).shape == Y.shape
    with pytest.raises(ValueError, match="labels"):
        stream.partial_fit(X, Y[:, :3])


def test_new_label_in_partial_fit_is_named():
    X, y = classification_data()
    clf = GGNScoreClassifier(n_hidden=8, random_state=0)
    clf.partial_fit(X, y, classes=np.unique(y))
    y_new = y.copy()
    y_new[:2] = 99
    with pytest.raises(ValueError, match=r"not in classes_.*\[99\]"):
        clf.partial_fit(X, y_new)
    with pytest.raises(ValueError, match="is not the same as on last call"):
        clf.partial_fit(X, y, classes=np.append(np.unique(y), 99))


def test_binary_probabilities_keep_precision_near_one():
    # the first class's probability is sigma(-z), not 1 - sigma(z), which
    # cancels to zero (float64) or to a few ulps (float32) when sigma(z) ~ 1
    from scipy.special import expit

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    for dtype in (np.float64, np.float32):
        clf = GGNScoreClassifier(random_state=0).fit(X.astype(dtype), y)
        clf.output_weights_ = clf.output_weights_ * 40  # extreme margins
        z = clf.decision_function(X.astype(dtype))
        proba = clf.predict_proba(X.astype(dtype))
        assert np.abs(z).max() > 40
        np.testing.assert_array_equal(proba[:, 0], expit(-z))
        np.testing.assert_array_equal(proba[:, 1], expit(z))
        # 1 - sigma(z) is exactly 0 there; sigma(-z) is not (until float32
        # underflows past z ~ 88)
        near_one = (z > 20) & (z < 80)
        assert near_one.any() and np.all(proba[near_one, 0] > 0)


@pytest.mark.parametrize("chunk", [1, 8])
def test_partial_fit_learns_from_small_chunks(chunk):
    """A chunk of one batch is an epoch of one step whose rows judge the last
    call's step (the adaptive damping's test on the next batch): streams of
    8-row chunks diverged on 119 of 125 calls and stayed at chance, as did
    one-row streams."""
    X, y = make_classification(2000, 5, n_informative=4, n_redundant=0,
                               n_classes=3, random_state=0)
    X = StandardScaler().fit_transform(X)
    clf = GGNScoreClassifier(n_hidden=16, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for start in range(0, 1000, chunk):
            clf.partial_fit(X[start:start + chunk], y[start:start + chunk],
                            classes=[0, 1, 2])
    assert not [w for w in caught if "diverged" in str(w.message)]
    assert clf.score(X[1000:], y[1000:]) > 0.7


@pytest.mark.parametrize("Est", [GGNScoreClassifier, GGNScoreRegressor])
def test_partial_fit_starts_on_sparse_chunks(Est):
    """A stream's first chunk may be sparse: it sets the input map (its
    columns' medians are 0 here: the chunks stay sparse)."""
    X, y = make_classification(300, 20, random_state=0)
    S = sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0))
    est = Est(n_hidden=8, random_state=0)
    for start in range(0, 300, 100):
        chunk = slice(start, start + 100)
        if Est is GGNScoreClassifier:
            est.partial_fit(S[chunk], y[chunk], classes=[0, 1])
        else:
            est.partial_fit(S[chunk], y[chunk].astype(float))
    assert np.all(est.input_center_ == 0) and np.all(np.isfinite(est.predict(S)))


def test_weights_set_between_partial_fits_are_not_undone():
    """The next partial_fit judges the last call's step only if it starts
    where that step led: weights set in between (by hand, or by a warm fit)
    are not compared with the θ before that step (a rejection reverted them,
    and a 30-epoch warm fit with them)."""
    X, y = make_classification(2000, 8, n_informative=5, random_state=0)
    clf = GGNScoreClassifier(n_hidden=16, random_state=0)
    for start in range(0, 1000, 50):
        clf.partial_fit(X[start:start + 50], y[start:start + 50], classes=[0, 1])
    assert clf._solver_state.step_from is not None
    rejected = clf._solver_state.damping.n_rejected
    clf.output_weights_ = clf.output_weights_ * 30.0  # far worse on any rows
    clf.partial_fit(X[1000:1050], y[1000:1050])
    assert clf._solver_state.damping.n_rejected == rejected
    # a fit in between carries no step to judge
    clf.set_params(warm_start=True, max_iter=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    assert clf._solver_state.step_from is None


# ---------------------------------------------------------------------------
# What a fit keeps is its own: the caller's arrays, the parameters changed
# after it, and the fits before it do not change its predictions.


def _smooth_regression(n=200, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 3)
    return X, X[:, 0] + np.sin(X[:, 1]) + 0.3 * rng.randn(n)


@pytest.mark.parametrize("params", [
    {"input_transform": None, "standardize_target": False},  # X, y kept as given
    {},  # the input map and the target scale copy them; the weights are kept
])
def test_the_posterior_does_not_read_the_callers_arrays_after_fit(params):
    X, y = _smooth_regression()
    w = np.ones(len(y))
    make = lambda: GGNScoreRegressor(n_hidden=8, random_state=0, **params)  # noqa: E731
    expected = make().fit(X.copy(), y.copy(), sample_weight=w.copy())
    Xc, yc, wc = X.copy(), y.copy(), w.copy()
    reg = make().fit(Xc, yc, sample_weight=wc)
    # the caller reuses its buffers before the first return_std
    Xc *= 10.0
    yc *= 3.0
    wc[:190] = 0.0
    np.testing.assert_array_equal(reg.predict(X[:5], return_std=True)[1],
                                  expected.predict(X[:5], return_std=True)[1])
    assert reg.noise_variance_ == expected.noise_variance_


def test_the_probit_posterior_does_not_read_the_callers_inputs_after_fit():
    X, y = _smooth_regression()
    labels = (y > 0.5).astype(int)
    make = lambda: GGNScoreClassifier(n_hidden=8, random_state=0,  # noqa: E731
                                      input_transform=None, predictive="probit")
    expected = make().fit(X.copy(), labels).predict_proba(X[:5])
    Xc = X.copy()
    clf = make().fit(Xc, labels)
    Xc[:] = 0.0
    np.testing.assert_array_equal(clf.predict_proba(X[:5]), expected)


@pytest.mark.parametrize("change", [{"n_hidden": 4}, {"fit_intercept": False},
                                    {"scaling": "mean_field"},
                                    {"activation": "relu"}])
def test_predictions_come_from_the_fit_not_from_parameters_changed_since(change):
    X, y = _smooth_regression(100)
    reg = GGNScoreRegressor(n_hidden=8, random_state=0).fit(X, y)
    mean, std = reg.predict(X[:5], return_std=True)
    reg.set_params(**change)
    changed_mean, changed_std = reg.predict(X[:5], return_std=True)
    np.testing.assert_array_equal(changed_mean, mean)
    np.testing.assert_array_equal(changed_std, std)
    # and the refit takes the new parameters
    reg.fit(X, y)
    assert not np.array_equal(reg.predict(X[:5]), mean)


def test_a_fit_without_intercepts_keeps_none_of_an_earlier_fit():
    X, y = _smooth_regression(100)
    reg = GGNScoreRegressor(n_hidden=8, random_state=0).fit(X, y)
    assert hasattr(reg, "hidden_intercept_")
    reg.set_params(fit_intercept=False).fit(X, y)
    assert not hasattr(reg, "hidden_intercept_")
    assert not hasattr(reg, "output_intercept_")


def test_a_warm_start_checks_the_fitted_feature_names():
    pd = pytest.importorskip("pandas")
    X, y = _smooth_regression(100)
    frame = pd.DataFrame(X * [1.0, 100.0, 1e4], columns=["a", "b", "c"])
    reg = GGNScoreRegressor(n_hidden=8, random_state=0, warm_start=True,
                            max_iter=5).fit(frame, y)
    with pytest.raises(ValueError, match="feature names should match"):
        reg.fit(frame[["c", "b", "a"]], y)
    with pytest.raises(ValueError, match="X has 2 features, but "
                                         "GGNScoreRegressor is expecting 3"):
        reg.fit(X[:, :2], y)
    # an array warns as predict does, and the fitted names stay
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        reg.fit(frame.to_numpy(), y)
    np.testing.assert_array_equal(reg.feature_names_in_, ["a", "b", "c"])


@pytest.mark.parametrize("value", [5.0, 1e6, 0.0])
def test_a_constant_target_is_learned_without_a_warning(value):
    X, _ = _smooth_regression(200)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reg = GGNScoreRegressor(random_state=0).fit(X, np.full(200, value))
    np.testing.assert_allclose(reg.predict(X[:3]), value, atol=1e-9)


def test_the_posterior_does_not_read_the_callers_sparse_inputs_after_fit():
    X, y = _smooth_regression()
    X[np.abs(X) < 0.5] = 0.0
    make = lambda: GGNScoreRegressor(n_hidden=8, random_state=0,  # noqa: E731
                                     input_transform=None)
    expected = make().fit(sp.csr_matrix(X), y)
    given = sp.csr_matrix(X)
    reg = make().fit(given, y)
    given.data *= 10.0  # the caller reuses the matrix's buffer
    np.testing.assert_array_equal(
        reg.predict(sp.csr_matrix(X[:5]), return_std=True)[1],
        expected.predict(sp.csr_matrix(X[:5]), return_std=True)[1])


def _positive_regression(n=80):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 4))
    return X, np.abs(X @ np.array([1.0, -2.0, 0.5, 1.0])) + 1.0


@pytest.mark.parametrize("how", ["warm_start", "partial_fit"])
def test_continuing_with_another_loss_is_refused(how):
    """The targets' encoding, the outputs and the predictions belong to the
    loss the weights were fitted with: a fit that continues them with
    another loss raises (a squared-error fit continued as Poisson trained
    on centred, partly negative targets and scored R² −1e4)."""
    X, y = _positive_regression()
    reg = GGNScoreRegressor(n_hidden=8, max_iter=5, random_state=0,
                            warm_start=how == "warm_start")
    getattr(reg, "fit" if how == "warm_start" else "partial_fit")(X, y)
    before = reg.predict(X)
    reg.set_params(loss="poisson")
    with pytest.raises(ValueError, match="fitted with loss='squared_error'"):
        getattr(reg, "fit" if how == "warm_start" else "partial_fit")(X, y)
    # refused without a change, and the predictions stay the fitted loss's
    np.testing.assert_array_equal(reg.predict(X), before)
    reg.set_params(warm_start=False).fit(X, y)  # a fit from scratch trains it
    assert reg.predict(X).min() > 0


def test_classifier_predictions_keep_the_fitted_loss():
    """predict_proba and the multilabel threshold follow the loss of the
    fit, not one set since."""
    X, y = make_classification(120, 6, random_state=0)
    clf = GGNScoreClassifier(n_hidden=8, max_iter=5, random_state=0).fit(X, y)
    proba = clf.predict_proba(X)
    clf.set_params(loss="squared_error")
    np.testing.assert_array_equal(clf.predict_proba(X), proba)
    with pytest.raises(ValueError, match="fitted with loss='log_loss'"):
        clf.partial_fit(X, y)
    square = GGNScoreClassifier(loss="squared_error", n_hidden=8, max_iter=5,
                                random_state=0).fit(X, y)
    square.set_params(loss="log_loss")
    assert not hasattr(square, "predict_proba")


@pytest.mark.parametrize("Est", [GGNScoreClassifier, GGNScoreRegressor])
def test_sparse_duplicate_entries_are_their_sum(Est):
    """SciPy reads a value stored twice as the sum of both: the input map
    (non-linear) sees the sum, so the fit and the predictions are those of
    the summed matrix; the caller's matrix keeps its duplicates."""
    X = sp.random(150, 20, density=0.2, format="csr", random_state=0)
    y = (np.asarray(X.sum(axis=1)).ravel() > 0.5 * 20 * 0.2).astype(int)
    first = X.indices[0]
    duplicated = sp.csr_matrix(
        (np.r_[X.data[:1], 2.0, X.data[1:]],
         np.r_[X.indices[:1], first, X.indices[1:]],
         np.r_[0, X.indptr[1:] + 1]), shape=X.shape)
    summed = duplicated.copy()
    summed.sum_duplicates()
    out = "predict_proba" if Est is GGNScoreClassifier else "predict"
    params = dict(n_hidden=8, max_iter=5, random_state=0)
    on_summed = Est(**params).fit(summed, y)
    np.testing.assert_allclose(getattr(on_summed, out)(duplicated),
                               getattr(on_summed, out)(summed.toarray()),
                               rtol=0, atol=1e-12)
    on_duplicated = Est(**params).fit(duplicated, y)
    np.testing.assert_allclose(getattr(on_duplicated, out)(summed),
                               getattr(on_summed, out)(summed), rtol=0, atol=1e-12)
    assert not duplicated.has_canonical_format and duplicated.nnz == X.nnz + 1


def test_sample_weight_val_without_validation_rows_is_an_error():
    X, y = _positive_regression()
    with pytest.raises(ValueError, match="sample_weight_val"):
        GGNScoreRegressor(max_iter=2).fit(X, y, sample_weight_val=np.ones(3))


@pytest.mark.parametrize("classes", [[0, 1], ["x", "y", "z"]])
def test_multilabel_classes_must_be_the_label_columns(classes):
    from sklearn.datasets import make_multilabel_classification

    X, Y = make_multilabel_classification(100, 5, n_classes=3, random_state=0)
    with pytest.raises(ValueError, match="column indices"):
        GGNScoreClassifier(max_iter=2).partial_fit(X, Y, classes=classes)
    clf = GGNScoreClassifier(max_iter=2).partial_fit(X, Y, classes=[0, 1, 2])
    np.testing.assert_array_equal(clf.classes_, [0, 1, 2])


def test_a_tau_chosen_too_large_by_gcv_is_named_as_the_cause():
    """A weak signal for which GCV (and the evidence after it) picks a large
    τ: the weights collapse and the warning names the criterion's choice,
    not the step."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 1))
    y = 0.3 * x[:, 0] + rng.standard_normal(200)
    with pytest.warns(ConvergenceWarning, match="generalized "
                      "cross-validation") as caught:
        reg = GGNScoreRegressor(random_state=0).fit(x, y)
    assert reg.tau_path_ is not None and reg.tau_ > 0.1
    assert not any("larger damping" in str(w.message) for w in caught)
