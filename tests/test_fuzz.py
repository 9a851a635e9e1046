"""Property-based fuzzing of fit/predict (issue 9, item 8).

Every fit on any shapes, dtypes, scales, degenerate columns, non-finite
values, zero weights and extreme but valid hyperparameters ends either as a
fitted model with finite predictions (possibly after a ConvergenceWarning) or
with a clear ValueError or MemoryError; never NaN weights, a numba error, a
LinAlgError, an IndexError or any other exception.

The default ("ci") hypothesis profile runs a few dozen examples (CI);
``--hypothesis-profile=long`` runs a thousand.
"""

import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, note  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor  # noqa: E402

# Rows × outputs bound the dual system (bK)² and rows × features the data:
# large shapes are drawn, but together with small other dimensions.
MAX_CELLS = 40_000


@st.composite
def problems(draw):
    classifier = draw(st.booleans())
    n_samples = draw(st.one_of(st.integers(1, 40), st.integers(41, 3000)))
    n_features = draw(st.one_of(st.integers(1, 8), st.integers(9, 300)))
    if n_samples * n_features > MAX_CELLS:
        n_features = max(1, MAX_CELLS // n_samples)
    n_outputs = draw(st.integers(1, 30))
    dtype = draw(st.sampled_from([np.float64, np.float32, np.int64]))
    scale = 10.0 ** draw(st.integers(-30, 30))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n_samples, n_features)) * scale
    if n_features > 1 and draw(st.booleans()):
        X[:, draw(st.integers(0, n_features - 1))] = draw(
            st.sampled_from([0.0, 1.0, scale]))  # constant column
    if n_features > 1 and draw(st.booleans()):
        X[:, -1] = X[:, 0]  # duplicate column
    if n_samples > 1 and draw(st.booleans()):
        X[-1] = X[0]  # duplicate row
    poison = draw(st.sampled_from([None, None, None, np.nan, np.inf, -np.inf]))
    if poison is not None:
        X[draw(st.integers(0, n_samples - 1)),
          draw(st.integers(0, n_features - 1))] = poison
    if dtype is np.int64:
        X = np.clip(np.round(X), -2**40, 2**40) if np.all(np.isfinite(X)) else X
        X = X.astype(np.int64) if np.all(np.isfinite(X)) else X
    else:
        with np.errstate(over="ignore"):
            X = X.astype(dtype)
    if classifier:
        n_classes = max(2, n_outputs)
        y = rng.randint(0, n_classes, n_samples)
        if draw(st.booleans()):
            y = np.array(["c%d" % v for v in y])
    else:
        y = rng.standard_normal((n_samples, n_outputs)) * 10.0 ** draw(
            st.integers(-30, 30))
        if n_outputs == 1 and draw(st.booleans()):
            y = y[:, 0]
        if draw(st.integers(0, 9)) == 0:
            y.flat[0] = draw(st.sampled_from([np.nan, np.inf]))
    sample_weight = None
    weights = draw(st.sampled_from([None, "zeros", "tiny", "huge", "all-zero"]))
    if weights is not None:
        sample_weight = rng.uniform(0, 2, n_samples)
        if weights == "zeros":
            sample_weight[rng.uniform(size=n_samples) < 0.5] = 0
        elif weights == "tiny":
            sample_weight *= 1e-300
        elif weights == "huge":
            sample_weight *= 1e300
        else:
            sample_weight[:] = 0
    batch = draw(st.sampled_from(["auto", None, 1, 2, 7, 64]))
    if batch is None and n_samples * n_outputs > 3000:
        batch = "auto"  # keep full-batch dual systems inside the CI budget
    params = dict(
        n_hidden=draw(st.sampled_from([1, 2, 5, 17])),
        max_iter=draw(st.integers(1, 4)),
        activation=draw(st.sampled_from(["silu", "relu", "tanh", "sigmoid",
                                         "softplus"])),
        scaling=draw(st.sampled_from(["ntk", "mean_field", 1e-8, 1e8])),
        fit_intercept=draw(st.booleans()),
        regularizer=draw(st.sampled_from(["pseudo_huber", "ostrovskii_bach", "l2"])),
        mu=draw(st.sampled_from(["auto", 1e-12, 1e12])),
        tau=draw(st.sampled_from([0.0, 1e-12, 1e-4, 1e6])),
        step_size=draw(st.sampled_from([1e-12, 0.5, 1.0])),
        damping=draw(st.sampled_from(["auto", "tau", 1e-12, 1.0, 1e12])),
        line_search=draw(st.booleans()),
        linear_solver=draw(st.sampled_from(["auto", "dual", "primal"])),
        solver=draw(st.sampled_from(["ggn", "ggn", "gd"])),
        learning_rate=draw(st.sampled_from([1e-12, 1.0, 1e12])),
        batch_size=batch,
        tol=draw(st.sampled_from([0.0, 1e-4, 1e12])),
        n_iter_no_change=draw(st.integers(1, 3)),
        early_stopping=draw(st.booleans()),
        validation_fraction=draw(st.sampled_from([1e-9, 0.1, 0.5, 0.999])),
        random_state=seed,
    )
    if classifier:
        params["loss"] = draw(st.sampled_from(["log_loss", "squared_error"]))
    return classifier, X, y, sample_weight, params


def _fit_outcome(classifier, X, y, sample_weight, params):
    Est = GGNScoreClassifier if classifier else GGNScoreRegressor
    est = Est(**params)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning and friends
            est.fit(X, y, sample_weight=sample_weight)
    except (ValueError, MemoryError) as exc:
        # a clear error, raised before a model exists
        assert str(exc)
        assert not hasattr(est, "hidden_weights_"), (
            f"{type(exc).__name__} left a partly fitted model: {exc}")
        return "error"
    for name in ("hidden_weights_", "output_weights_", "hidden_intercept_",
                 "output_intercept_"):
        if hasattr(est, name):
            assert np.all(np.isfinite(getattr(est, name))), f"non-finite {name}"
    X_test = np.asarray(X[: min(len(X), 50)], dtype=float)
    with np.errstate(all="ignore"):
        X_test = np.nan_to_num(X_test, nan=0.0, posinf=0.0, neginf=0.0)
    if classifier:
        scores = est.decision_function(X_test)
        assert np.all(np.isfinite(scores)), "non-finite decision_function"
        assert set(np.unique(est.predict(X_test))) <= set(est.classes_)
    else:
        assert np.all(np.isfinite(est.predict(X_test))), "non-finite predictions"
    return "fitted"


@pytest.mark.filterwarnings("ignore")
@given(problems())
def test_fit_ends_fitted_and_finite_or_with_a_clear_error(problem):
    classifier, X, y, sample_weight, params = problem
    note(f"{'classifier' if classifier else 'regressor'} X{X.shape} {X.dtype} "
         f"y{np.shape(y)} weights={None if sample_weight is None else 'given'} "
         f"params={params}")
    hypothesis.event(_fit_outcome(classifier, X, y, sample_weight, params))
