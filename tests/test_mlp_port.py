"""scikit-learn's own MLP tests (sklearn/neural_network/tests/test_mlp.py),
ported test by test to the GGN-SCORE estimators.

Same data, same thresholds. Parameters are mapped: ``hidden_layer_sizes=(m,)``
→ ``n_hidden=m``, ``alpha`` → ``tau``, ``activation="logistic"`` →
``"sigmoid"``, ``solver="sgd"`` → ``solver="gd"`` where the test is about
divergence of plain gradient descent, and the solver-specific settings
(``solver``, ``learning_rate_init``, ``momentum``, ``max_fun``, ``power_t``)
are dropped. Where an MLP test sets no ``alpha``, MLP's default 1e-4 is
passed as ``tau`` only if the test says so below. The tests that check
solver internals only are not ported; the documentation's page on
scikit-learn compatibility lists them and says why.
"""

import re
import warnings

import joblib
import numpy as np
import pytest
from sklearn.datasets import (
    load_digits,
    load_iris,
    make_classification,
    make_multilabel_classification,
    make_regression,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import PoissonRegressor
from sklearn.metrics import roc_auc_score
from sklearn.preprocessing import LabelBinarizer, MinMaxScaler, scale
from sklearn.utils._testing import (
    assert_allclose,
    assert_array_equal,
    ignore_warnings,
)
from sklearn.utils.fixes import CSR_CONTAINERS

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor
from sklearn_ggn._losses import LOSSES
from sklearn_ggn._regularizers import REGULARIZERS
from sklearn_ggn.engine import Problem

# MLP's "logistic" is the sigmoid here
ACTIVATION_TYPES = ["identity", "sigmoid", "tanh", "relu"]

X_digits, y_digits = load_digits(n_class=3, return_X_y=True)

X_digits_multi = MinMaxScaler().fit_transform(X_digits[:200])
y_digits_multi = y_digits[:200]

X_digits, y_digits = load_digits(n_class=2, return_X_y=True)

X_digits_binary = MinMaxScaler().fit_transform(X_digits[:200])
y_digits_binary = y_digits[:200]

classification_datasets = [
    (X_digits_multi, y_digits_multi),
    (X_digits_binary, y_digits_binary),
]

X_reg, y_reg = make_regression(
    n_samples=200, n_features=10, bias=20.0, noise=100.0, random_state=7
)
y_reg = scale(y_reg)
regression_datasets = [(X_reg, y_reg)]

iris = load_iris()

X_iris = iris.data
y_iris = iris.target


def test_alpha():
    # Test that larger tau yields weights closer to zero
    X = X_digits_binary[:100]
    y = y_digits_binary[:100]

    tau_vectors = []
    tau_values = np.arange(2)
    absolute_sum = lambda x: np.sum(np.abs(x))  # noqa: E731

    for tau in tau_values:
        clf = GGNScoreClassifier(n_hidden=10, tau=float(tau), random_state=1)
        with ignore_warnings(category=ConvergenceWarning):
            clf.fit(X, y)
        tau_vectors.append(
            np.array([absolute_sum(clf.hidden_weights_),
                      absolute_sum(clf.output_weights_)])
        )

    for i in range(len(tau_values) - 1):
        assert (tau_vectors[i] > tau_vectors[i + 1]).all()


@pytest.mark.parametrize("activation", ACTIVATION_TYPES)
def test_gradient(activation):
    # The activation functions and their derivatives are right: the
    # analytical gradient of the training risk equals the numerical one.
    # (MLP calls its private _loss_grad_lbfgs; here the engine's Problem.)
    for n_labels in [2, 3]:
        n_samples = 5
        n_features = 10
        random_state = np.random.RandomState(seed=42)
        X = random_state.rand(n_samples, n_features)
        y = 1 + np.mod(np.arange(n_samples) + 1, n_labels)
        Y = LabelBinarizer().fit_transform(y).astype(float)

        clf = GGNScoreClassifier(activation=activation, n_hidden=10, tau=1e-5,
                                 max_iter=1, random_state=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(X, y)
        network = clf._network(n_features, clf.n_outputs_)
        theta = network.pack(clf.hidden_weights_, clf.output_weights_,
                             clf.hidden_intercept_, clf.output_intercept_)
        problem = Problem(network, LOSSES["log_loss"](),
                          REGULARIZERS["pseudo_huber"](1.0), 0.0, X, Y,
                          np.ones(n_samples))
        batch = problem.batch()

        def loss(t):
            return problem.evaluate(t, batch, with_deriv=False).risk

        grad = problem.risk_gradient(theta, batch, problem.evaluate(theta, batch))
        numgrad = np.zeros(np.size(theta))
        n = np.size(theta, 0)
        E = np.eye(n)
        epsilon = 1e-5
        for i in range(n):
            dtheta = E[:, i] * epsilon
            numgrad[i] = (loss(theta + dtheta) - loss(theta - dtheta)) / (
                epsilon * 2.0)
        np.testing.assert_almost_equal(numgrad, grad)


@pytest.mark.parametrize("X,y", classification_datasets)
def test_lbfgs_classification(X, y):
    # It should achieve a score higher than 0.95 for the binary and multi-class
    # versions of the digits dataset.
    X_train = X[:150]
    y_train = y[:150]
    X_test = X[150:]
    expected_shape_dtype = (X_test.shape[0], y_train.dtype.kind)

    for activation in ACTIVATION_TYPES:
        clf = GGNScoreClassifier(
            n_hidden=50,
            max_iter=150,
            shuffle=True,
            random_state=1,
            activation=activation,
        )
        clf.fit(X_train, y_train)
        y_predict = clf.predict(X_test)
        assert clf.score(X_train, y_train) > 0.95
        assert (y_predict.shape[0], y_predict.dtype.kind) == expected_shape_dtype


@pytest.mark.parametrize("X,y", regression_datasets)
@pytest.mark.parametrize("activation", ACTIVATION_TYPES)
def test_lbfgs_regression(X, y, activation):
    # (MLP loops over the activations; one case each here. The test measures
    # the training fit: MLP's alpha, its default 1e-4, is passed as tau, not
    # tau="auto", which regularizes a full-batch fit on 200 rows with 0.01.)
    reg = GGNScoreRegressor(
        n_hidden=50,
        max_iter=200,
        tol=1e-3,
        shuffle=True,
        random_state=1,
        activation=activation,
        tau=1e-4,
    )
    reg.fit(X, y)
    if activation == "identity":
        assert reg.score(X, y) > 0.80
    else:
        # Non linear models perform much better than linear bottleneck:
        assert reg.score(X, y) > 0.98


def test_multilabel_classification():
    # Test that multi-label classification works as expected.
    # test fit method
    X, y = make_multilabel_classification(
        n_samples=50, random_state=0, return_indicator=True
    )
    clf = GGNScoreClassifier(
        n_hidden=50,
        tau=1e-5,
        max_iter=150,
        random_state=0,
        activation="sigmoid",
    )
    clf.fit(X, y)
    assert clf.score(X, y) > 0.97

    # test partial fit method
    clf = GGNScoreClassifier(
        n_hidden=50,
        max_iter=150,
        random_state=0,
        activation="sigmoid",
        tau=1e-5,
    )
    for i in range(100):
        clf.partial_fit(X, y, classes=[0, 1, 2, 3, 4])
    assert clf.score(X, y) > 0.9

    # Make sure early stopping still work now that splitting is stratified by
    # default (it is disabled for multilabel classification)
    clf = GGNScoreClassifier(early_stopping=True)
    clf.fit(X, y).predict(X)


def test_multioutput_regression():
    # Test that multi-output regression works as expected
    X, y = make_regression(n_samples=200, n_targets=5, random_state=11)
    reg = GGNScoreRegressor(n_hidden=50, max_iter=200, tol=1e-2, random_state=1)
    reg.fit(X, y)
    assert reg.score(X, y) > 0.9


def test_partial_fit_classes_error():
    # Tests that passing different classes to partial_fit raises an error
    X = [[3, 2]]
    y = [0]
    clf = GGNScoreClassifier()
    clf.partial_fit(X, y, classes=[0, 1])
    with pytest.raises(ValueError):
        clf.partial_fit(X, y, classes=[1, 2])


def test_partial_fit_classification():
    # `partial_fit` should yield the same results as 'fit' for binary and
    # multi-class classification.
    for X, y in classification_datasets:
        clf = GGNScoreClassifier(max_iter=100, random_state=1, tol=0, tau=1e-5)

        with ignore_warnings(category=ConvergenceWarning):
            clf.fit(X, y)
        pred1 = clf.predict(X)
        clf = GGNScoreClassifier(random_state=1, tau=1e-5)
        for i in range(100):
            clf.partial_fit(X, y, classes=np.unique(y))
        pred2 = clf.predict(X)
        assert_array_equal(pred1, pred2)
        assert clf.score(X, y) > 0.95


def test_partial_fit_unseen_classes():
    # Non regression test for scikit-learn's bug 6994
    # Tests for labeling errors in partial fit

    clf = GGNScoreClassifier(random_state=0)
    clf.partial_fit([[1], [2], [3]], ["a", "b", "c"], classes=["a", "b", "c", "d"])
    clf.partial_fit([[4]], ["d"])
    assert clf.score([[1], [2], [3], [4]], ["a", "b", "c", "d"]) > 0


def test_partial_fit_regression():
    # `partial_fit` should yield the same results as 'fit' for regression.
    # (MLP loops over momentum 0 and 0.9, a setting of its sgd solver. The
    # fit is full batch, batch_size=X.shape[0], as in MLP's test; partial_fit
    # takes mini-batches of a stream unless the damping is fixed, so both use
    # damping="tau", the full-batch fit's rule, and MLP's default
    # alpha=1e-4 as tau. The fit has tol=0 so that its stopping rule lets it
    # run the 100 iterations of the 100 partial_fit calls, as MLP's
    # test_partial_fit_classification does. line_search=True on both:
    # "auto" backtracks in a full-batch fit but not on the mini-batches of a
    # stream, and partial_fit is a stream. compute_dtype="float64" on both:
    # by default the full-batch fit of 200 rows computes in float64 and a
    # stream in float32.)
    X = X_reg
    y = y_reg

    reg = GGNScoreRegressor(
        max_iter=100,
        tol=0,
        activation="relu",
        random_state=1,
        batch_size=X.shape[0],
        tau=1e-4,
        damping="tau",
        line_search=True,  # as partial_fit's below (a stream: mini-batch rules)
        compute_dtype="float64",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reg.fit(X, y)
    pred1 = reg.predict(X)
    reg = GGNScoreRegressor(
        activation="relu",
        random_state=1,
        batch_size=X.shape[0],
        tau=1e-4,
        damping="tau",
        line_search=True,
        compute_dtype="float64",
    )
    for i in range(100):
        reg.partial_fit(X, y)

    pred2 = reg.predict(X)
    assert_allclose(pred1, pred2)
    score = reg.score(X, y)
    assert score > 0.65


def test_partial_fit_errors():
    # Test partial_fit error handling.
    X = [[3, 2], [1, 6]]
    y = [1, 0]

    # classes that do not contain y's labels
    with pytest.raises(ValueError):
        GGNScoreClassifier().partial_fit(X, y, classes=[2])
    # (MLP's second assertion, that solver="lbfgs" has no partial_fit, is
    # about its solvers: every configuration here has partial_fit.)


def test_nonfinite_params():
    # Check that the regressor throws ValueError when dealing with
    # non-finite parameter values
    rng = np.random.RandomState(0)
    n_samples = 10
    fmax = np.finfo(np.float64).max
    X = fmax * rng.uniform(size=(n_samples, 2))
    y = rng.standard_normal(size=n_samples)

    # (input_transform=None: the default robust scaling brings these inputs
    # to unit scale and the fit succeeds, see test_inputs.py)
    reg = GGNScoreRegressor(input_transform=None)
    msg = (
        "Solver produced non-finite parameter weights. The input data may contain large"
        " values and need to be preprocessed."
    )
    with pytest.raises(ValueError, match=msg):
        with warnings.catch_warnings():
            # RuntimeWarning: overflow encountered in square
            warnings.simplefilter("ignore")
            reg.fit(X, y)


def test_predict_proba_binary():
    # Test that predict_proba works as expected for binary class.
    X = X_digits_binary[:50]
    y = y_digits_binary[:50]

    clf = GGNScoreClassifier(n_hidden=5, activation="sigmoid", random_state=1)
    with ignore_warnings(category=ConvergenceWarning):
        clf.fit(X, y)
    y_proba = clf.predict_proba(X)
    y_log_proba = clf.predict_log_proba(X)

    (n_samples, n_classes) = y.shape[0], 2

    proba_max = y_proba.argmax(axis=1)
    proba_log_max = y_log_proba.argmax(axis=1)

    assert y_proba.shape == (n_samples, n_classes)
    assert_array_equal(proba_max, proba_log_max)
    assert_allclose(y_log_proba, np.log(y_proba))

    assert roc_auc_score(y, y_proba[:, 1]) == 1.0


def test_predict_proba_multiclass():
    # Test that predict_proba works as expected for multi class.
    X = X_digits_multi[:10]
    y = y_digits_multi[:10]

    clf = GGNScoreClassifier(n_hidden=5)
    with ignore_warnings(category=ConvergenceWarning):
        clf.fit(X, y)
    y_proba = clf.predict_proba(X)
    y_log_proba = clf.predict_log_proba(X)

    (n_samples, n_classes) = y.shape[0], np.unique(y).size

    proba_max = y_proba.argmax(axis=1)
    proba_log_max = y_log_proba.argmax(axis=1)

    assert y_proba.shape == (n_samples, n_classes)
    assert_array_equal(proba_max, proba_log_max)
    assert_allclose(y_log_proba, np.log(y_proba))


def test_predict_proba_multilabel():
    # Multilabel should not use softmax which makes probabilities sum to 1
    X, Y = make_multilabel_classification(
        n_samples=50, random_state=0, return_indicator=True
    )
    n_samples, n_classes = Y.shape

    clf = GGNScoreClassifier(n_hidden=30, random_state=0)
    clf.fit(X, Y)
    y_proba = clf.predict_proba(X)

    assert y_proba.shape == (n_samples, n_classes)
    assert_array_equal(y_proba > 0.5, Y)

    y_log_proba = clf.predict_log_proba(X)
    proba_max = y_proba.argmax(axis=1)
    proba_log_max = y_log_proba.argmax(axis=1)

    assert (y_proba.sum(1) - 1).dot(y_proba.sum(1) - 1) > 1e-10
    assert_array_equal(proba_max, proba_log_max)
    assert_allclose(y_log_proba, np.log(y_proba))


def test_shuffle():
    # Test that the shuffle parameter affects the training process (it should)
    X, y = make_regression(n_samples=50, n_features=5, n_targets=1, random_state=0)

    # The coefficients will be identical if both do or do not shuffle
    for shuffle in [True, False]:
        reg1 = GGNScoreRegressor(
            n_hidden=1, max_iter=1, batch_size=1, random_state=0, shuffle=shuffle,
        )
        reg2 = GGNScoreRegressor(
            n_hidden=1, max_iter=1, batch_size=1, random_state=0, shuffle=shuffle,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            reg1.fit(X, y)
            reg2.fit(X, y)

        assert np.array_equal(reg1.hidden_weights_, reg2.hidden_weights_)

    # The coefficients will be slightly different if shuffle=True
    reg1 = GGNScoreRegressor(
        n_hidden=1, max_iter=1, batch_size=1, random_state=0, shuffle=True
    )
    reg2 = GGNScoreRegressor(
        n_hidden=1, max_iter=1, batch_size=1, random_state=0, shuffle=False
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reg1.fit(X, y)
        reg2.fit(X, y)

    assert not np.array_equal(reg1.hidden_weights_, reg2.hidden_weights_)


@pytest.mark.parametrize("csr_container", CSR_CONTAINERS)
def test_sparse_matrices(csr_container):
    # Test that sparse and dense input matrices output the same results.
    X = X_digits_binary[:50]
    y = y_digits_binary[:50]
    X_sparse = csr_container(X)
    clf = GGNScoreClassifier(n_hidden=15, random_state=1)
    clf.fit(X, y)
    pred1 = clf.predict(X)
    clf.fit(X_sparse, y)
    pred2 = clf.predict(X_sparse)
    np.testing.assert_almost_equal(pred1, pred2)
    pred1 = clf.predict(X)
    pred2 = clf.predict(X_sparse)
    assert_array_equal(pred1, pred2)


def test_tolerance():
    # It should force the solver to exit the loop when it converges.
    X = [[3, 2], [1, 6]]
    y = [1, 0]
    clf = GGNScoreClassifier(tol=0.5, max_iter=3000)
    clf.fit(X, y)
    assert clf.max_iter > clf.n_iter_


def test_verbose_sgd(capsys):
    # Test verbose.
    X = [[3, 2], [1, 6]]
    y = [1, 0]
    clf = GGNScoreClassifier(max_iter=2, verbose=10, n_hidden=2)

    with ignore_warnings(category=ConvergenceWarning):
        clf.fit(X, y)
    clf.partial_fit(X, y)

    out, _ = capsys.readouterr()
    assert "Iteration" in out


@pytest.mark.parametrize("Estimator", [GGNScoreClassifier, GGNScoreRegressor])
def test_early_stopping(Estimator):
    X = X_digits_binary[:100]
    y = y_digits_binary[:100]
    tol = 0.2
    est = Estimator(tol=tol, max_iter=3000, early_stopping=True)
    est.fit(X, y)
    assert est.max_iter > est.n_iter_

    assert est.best_loss_ is None
    assert isinstance(est.validation_scores_, list)

    valid_scores = est.validation_scores_
    best_valid_score = est.best_validation_score_
    assert max(valid_scores) == best_valid_score
    assert best_valid_score + tol > valid_scores[-2]
    assert best_valid_score + tol > valid_scores[-1]

    # check that the attributes `validation_scores_` and `best_validation_score_`
    # are set to None when `early_stopping=False`
    est = Estimator(tol=tol, max_iter=3000, early_stopping=False)
    est.fit(X, y)
    assert est.validation_scores_ is None
    assert est.best_validation_score_ is None
    assert est.best_loss_ is not None


def test_warm_start():
    X = X_iris
    y = y_iris

    y_2classes = np.array([0] * 75 + [1] * 75)
    y_3classes = np.array([0] * 40 + [1] * 40 + [2] * 70)
    y_3classes_alt = np.array([0] * 50 + [1] * 50 + [3] * 50)
    y_4classes = np.array([0] * 37 + [1] * 37 + [2] * 38 + [3] * 38)
    y_5classes = np.array([0] * 30 + [1] * 30 + [2] * 30 + [3] * 30 + [4] * 30)

    # No error raised
    clf = GGNScoreClassifier(
        n_hidden=2, warm_start=True, random_state=42, tol=1e-2
    ).fit(X, y)
    clf.fit(X, y)
    clf.fit(X, y_3classes)

    for y_i in (y_2classes, y_3classes_alt, y_4classes, y_5classes):
        clf = GGNScoreClassifier(
            n_hidden=2,
            warm_start=True,
            random_state=42,
            tol=1e-2,
        ).fit(X, y)
        message = (
            "warm_start can only be used where `y` has the same "
            "classes as in the previous call to fit."
            " Previously got [0 1 2], `y` has %s" % np.unique(y_i)
        )
        with pytest.raises(ValueError, match=re.escape(message)):
            clf.fit(X, y_i)


@pytest.mark.parametrize("Estimator", [GGNScoreClassifier, GGNScoreRegressor])
def test_warm_start_full_iteration(Estimator):
    # Non-regression test for scikit-learn's issue 16812: a warm-started
    # estimator runs `max_iter` iterations.
    X, y = X_iris, y_iris
    max_iter = 3
    clf = Estimator(n_hidden=2, warm_start=True, max_iter=max_iter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
        assert max_iter == clf.n_iter_
        clf.fit(X, y)
        assert max_iter == clf.n_iter_


def test_n_iter_no_change():
    # test n_iter_no_change using binary data set
    # the classifying fitting process is not prone to loss curve fluctuations
    X = X_digits_binary[:100]
    y = y_digits_binary[:100]
    tol = 0.01
    max_iter = 3000

    # test multiple n_iter_no_change
    for n_iter_no_change in [2, 5, 10, 50, 100]:
        clf = GGNScoreClassifier(
            tol=tol, max_iter=max_iter, n_iter_no_change=n_iter_no_change
        )
        clf.fit(X, y)

        # validate n_iter_no_change: MLP asserts its private counter equals
        # n_iter_no_change + 1; the same from loss_curve_: the last
        # n_iter_no_change + 1 iterations each failed to improve on the best
        # before them by tol
        curve = np.asarray(clf.loss_curve_)
        assert len(curve) == clf.n_iter_ > n_iter_no_change
        best = np.minimum.accumulate(curve)
        last = np.arange(len(curve) - n_iter_no_change - 1, len(curve))
        assert np.all(curve[last] > best[last - 1] - tol)
        assert max_iter > clf.n_iter_


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_n_iter_no_change_inf():
    # the fitting process should go to max_iter iterations
    X = X_digits_binary[:100]
    y = y_digits_binary[:100]

    # set a ridiculous tolerance
    # this should always trigger the no-improvement count
    tol = 1e9

    # fit
    n_iter_no_change = np.inf
    max_iter = 3000
    clf = GGNScoreClassifier(tol=tol, max_iter=max_iter,
                             n_iter_no_change=n_iter_no_change)
    clf.fit(X, y)

    # validate n_iter_no_change doesn't cause early stopping
    assert clf.n_iter_ == max_iter
    # (MLP's private _no_improvement_count == n_iter_ - 1: every iteration
    # after the first fails to improve by 1e9)
    assert len(clf.loss_curve_) == max_iter


def test_early_stopping_stratified():
    # Make sure data splitting for early stopping is stratified
    X = [[1, 2], [2, 3], [3, 4], [4, 5]]
    y = [0, 0, 0, 1]

    clf = GGNScoreClassifier(early_stopping=True)
    # (MLP's message names the class of its binarized y, 'True'; here the
    # class label, 1)
    with pytest.raises(
        ValueError,
        match=(
            r"The least populated classes in y have only 1 member.*Classes with "
            r"too few members are: \[1\]"
        ),
    ):
        clf.fit(X, y)


def test_mlp_early_stopping_string_labels():
    """Check that labels can be strings when `early_stopping=True`.

    Non-regression test for scikit-learn's issue 33760.
    """
    X, y = make_classification(
        n_samples=200,
        n_features=10,
        n_classes=3,
        n_informative=5,
        random_state=42,
    )
    labels = np.array(["class_a", "class_b", "class_c"], dtype=object)
    y = labels[y]

    clf = GGNScoreClassifier(early_stopping=True, max_iter=50, random_state=42)
    clf.fit(X, y)

    assert clf.validation_scores_ is not None
    assert len(clf.validation_scores_) == clf.n_iter_
    assert np.isfinite(clf.validation_scores_).all()


def test_mlp_classifier_dtypes_casting():
    # Compare predictions for different dtypes (MLP's two hidden layers
    # (5, 3): one of 5 units here)
    clf_64 = GGNScoreClassifier(
        tau=1e-5, n_hidden=5, random_state=1, max_iter=100, tol=1e-1
    )
    clf_64.fit(X_digits[:300], y_digits[:300])
    pred_64 = clf_64.predict(X_digits[300:])
    proba_64 = clf_64.predict_proba(X_digits[300:])

    clf_32 = GGNScoreClassifier(
        tau=1e-5, n_hidden=5, random_state=1, max_iter=100, tol=1e-1
    )
    clf_32.fit(X_digits[:300].astype(np.float32), y_digits[:300])
    pred_32 = clf_32.predict(X_digits[300:].astype(np.float32))
    proba_32 = clf_32.predict_proba(X_digits[300:].astype(np.float32))

    assert_array_equal(pred_64, pred_32)
    assert_allclose(proba_64, proba_32, rtol=1e-02)


def test_mlp_regressor_dtypes_casting():
    reg_64 = GGNScoreRegressor(
        tau=1e-5, n_hidden=5, random_state=1, max_iter=150, tol=1e-3
    )
    reg_64.fit(X_digits[:300], y_digits[:300])
    pred_64 = reg_64.predict(X_digits[300:])

    reg_32 = GGNScoreRegressor(
        tau=1e-5, n_hidden=5, random_state=1, max_iter=150, tol=1e-3
    )
    reg_32.fit(X_digits[:300].astype(np.float32), y_digits[:300])
    pred_32 = reg_32.predict(X_digits[300:].astype(np.float32))

    # (the targets are 0 and 1: a prediction of -4e-5 for a 0 row differs by
    # 7e-8, 0.2 % of itself; near zero the two are compared on the scale of
    # the predictions, 1e-5 of it, twenty times the float32 rounding)
    assert_allclose(pred_64, pred_32, rtol=5e-04,
                    atol=1e-5 * np.abs(pred_64).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("Estimator", [GGNScoreClassifier, GGNScoreRegressor])
def test_mlp_param_dtypes(dtype, Estimator):
    # Checks if input dtype is used for network parameters
    # and predictions
    X, y = X_digits.astype(dtype), y_digits
    est = Estimator(tau=1e-5, n_hidden=5, random_state=1, max_iter=50, tol=1e-1)
    est.fit(X[:300], y[:300])
    pred = est.predict(X[300:])

    assert all(intercept.dtype == dtype for intercept in
               (est.hidden_intercept_, est.output_intercept_))

    assert all(coef.dtype == dtype for coef in
               (est.hidden_weights_, est.output_weights_))

    if Estimator == GGNScoreRegressor:
        assert pred.dtype == dtype


def test_mlp_loading_from_joblib_partial_fit(tmp_path):
    """Loading from a pickle and partial fitting updates weights.
    Non-regression test for scikit-learn's issue 19626."""
    pre_trained_estimator = GGNScoreRegressor(
        n_hidden=42, random_state=42, max_iter=200
    )
    features, target = [[2]], [4]

    # Fit on x=2, y=4
    pre_trained_estimator.fit(features, target)

    # dump and load model
    pickled_file = tmp_path / "mlp.pkl"
    joblib.dump(pre_trained_estimator, pickled_file)
    load_estimator = joblib.load(pickled_file)

    # Train for a more epochs on point x=2, y=1
    fine_tune_features, fine_tune_target = [[2]], [1]

    for _ in range(200):
        load_estimator.partial_fit(fine_tune_features, fine_tune_target)

    # finetuned model learned the new target
    predicted_value = load_estimator.predict(fine_tune_features)
    assert_allclose(predicted_value, fine_tune_target, rtol=1e-4)


@pytest.mark.parametrize("Estimator", [
    pytest.param(GGNScoreClassifier, marks=pytest.mark.xfail(
        strict=True, raises=ValueError,
        reason="a y of one class raises (as most scikit-learn classifiers "
               "do); MLPClassifier fits it")),
    GGNScoreRegressor])
def test_preserve_feature_names(Estimator):
    """Check that feature names are preserved when early stopping is enabled.

    Feature names are required for consistency checks during scoring.

    Non-regression test for scikit-learn's issue 24846.
    """
    pd = pytest.importorskip("pandas")
    rng = np.random.RandomState(0)

    X = pd.DataFrame(data=rng.randn(10, 2), columns=["colname_a", "colname_b"])
    y = pd.Series(data=np.full(10, 1), name="colname_y")

    model = Estimator(early_stopping=True, validation_fraction=0.2)

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        model.fit(X, y)


@pytest.mark.parametrize("Estimator", [GGNScoreClassifier, GGNScoreRegressor])
def test_mlp_warm_start_with_early_stopping(Estimator):
    """Check that early stopping works with warm start."""
    est = Estimator(max_iter=10, random_state=0, warm_start=True, early_stopping=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X_iris, y_iris)
        n_validation_scores = len(est.validation_scores_)
        est.set_params(max_iter=20)
        est.fit(X_iris, y_iris)
    assert len(est.validation_scores_) > n_validation_scores


@pytest.mark.parametrize("Estimator", [GGNScoreClassifier, GGNScoreRegressor])
@pytest.mark.parametrize("solver", ["ggn", "gd"])
def test_mlp_warm_start_no_convergence(Estimator, solver):
    """Check that we stop the number of iteration at `max_iter` when warm starting.

    Non-regression test for scikit-learn's issue 24764.
    """
    # (MLP loops over its solvers; here over both, gradient descent with
    # MLP's default learning rate 1e-3 on these raw features)
    model = Estimator(
        solver=solver,
        learning_rate=1e-3,
        warm_start=True,
        early_stopping=False,
        max_iter=10,
        n_iter_no_change=np.inf,
        random_state=0,
    )

    with pytest.warns(ConvergenceWarning):
        model.fit(X_iris, y_iris)
    assert model.n_iter_ == 10

    model.set_params(max_iter=20)
    with pytest.warns(ConvergenceWarning):
        model.fit(X_iris, y_iris)
    assert model.n_iter_ == 20


def test_mlp_diverging_loss():
    """A diverging model does not raise errors when early stopping is enabled.

    Non-regression test for scikit-learn's issue 29504 (MLP's sgd with a
    learning rate of 1 is solver="gd", learning_rate=1 here).
    """
    reg = GGNScoreRegressor(
        n_hidden=100,
        activation="identity",
        solver="gd",
        tau=0.0001,
        learning_rate=1.0,
        shuffle=True,
        max_iter=20,
        early_stopping=True,
        n_iter_no_change=10,
        random_state=0,
    )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        reg.fit(X_iris, y_iris)

    # MLP records the NaN score of the diverged iterate; GGN-SCORE stops at
    # the first exploding step and keeps the last finite parameters, so its
    # scores are those of finite iterates: the last one is a float and the
    # attributes agree with each other.
    assert isinstance(reg.validation_scores_[-1], float)
    assert len(reg.validation_scores_) == reg.n_iter_
    assert reg.best_validation_score_ == max(reg.validation_scores_)


def test_mlp_sample_weight_with_early_stopping():
    # Test code path for inner validation set splitting.
    X, y = make_regression(
        n_samples=100,
        n_features=2,
        n_informative=2,
        random_state=42,
    )
    sw = np.ones_like(y)
    params = dict(
        n_hidden=10,
        early_stopping=True,
        tol=1e-2,
        batch_size=10,
        random_state=42,
    )
    m1 = GGNScoreRegressor(**params)
    m1.fit(X, y, sample_weight=sw)

    m2 = GGNScoreRegressor(**params).fit(X, y, sample_weight=None)
    assert_allclose(m1.predict(X), m2.predict(X))


@pytest.mark.parametrize("global_random_seed", [0, 42])
def test_mlp_vs_poisson_glm_equivalent(global_random_seed):
    """Test the network with Poisson loss and one identity unit equals a GLM."""
    n = 100
    rng = np.random.default_rng(global_random_seed)
    X = np.linspace(0, 1, n)
    y = rng.poisson(np.exp(X + 1))
    X = X.reshape(n, -1)
    glm = PoissonRegressor(alpha=0, tol=1e-7).fit(X, y)
    # One hidden unit with the identity activation: the coefficients differ
    # but the predictions are the same.
    reg = GGNScoreRegressor(
        loss="poisson",
        n_hidden=1,
        activation="identity",
        tau=0,
        tol=1e-7,
        random_state=np.random.RandomState(global_random_seed + 1),
        input_transform=None,  # (a GLM of X, not of the mapped X)
    ).fit(X, y)

    assert_allclose(reg.predict(X), glm.predict(X), rtol=1e-4)

    # The same does not work with the squared error because the output
    # activation is the identity instead of the exponential.
    reg = GGNScoreRegressor(
        loss="squared_error",
        n_hidden=1,
        activation="identity",
        tau=0,
        tol=1e-7,
        random_state=np.random.RandomState(global_random_seed + 1),
        input_transform=None,  # (a GLM of X, not of the mapped X)
    ).fit(X, y)
    assert not np.allclose(reg.predict(X), glm.predict(X), rtol=1e-4)


def test_minimum_input_sample_size():
    """A validation set that is too small is named. (MLP raises; here the
    fit warns and trains on all samples without early stopping, so that
    the estimator checks pass with early_stopping=True.)"""
    X, y = make_regression(n_samples=2, n_features=5, random_state=0)
    model = GGNScoreRegressor(early_stopping=True, random_state=0)
    with pytest.warns(UserWarning, match="The validation set is too small"):
        model.fit(X, y)
    assert model.validation_scores_ is None
