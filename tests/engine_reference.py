"""Fixed-seed configurations whose fitted weights pin the training engine.

``python tests/engine_reference.py`` (one BLAS thread) writes
``tests/data/engine_reference.npz`` from the current code: every
configuration's weights, intercepts, loss curve and iteration counts, and,
for information, the signature of the machine that wrote them (BLAS library
and kernel, the CPU numba compiles for).

``test_engine_regression.py`` refits every configuration and compares it
with the stored arrays, which come from another machine: the counts
exactly; every other array to within the round-off the configuration shows
on the machine running the test. That round-off is measured there, by
refits whose inputs are moved one unit in the last place of the dtype the
steps compute in (:func:`fit_config` with an integer ``perturbation``);
the test's docstring derives the allowance from their spread. Bit-for-bit
comparisons are between two fits in the same process only.
"""

import warnings
from pathlib import Path

import numpy as np
from sklearn.base import is_classifier
from sklearn.datasets import make_classification
from threadpoolctl import threadpool_info, threadpool_limits

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

PATH = Path(__file__).resolve().parent / "data" / "engine_reference.npz"


def _regression(dtype=np.float64):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((48, 3))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2]
    return X.astype(dtype), y.astype(dtype)


def _classification(n_classes, dtype=np.float64):
    X, y = make_classification(n_samples=60, n_features=4, n_informative=3,
                               n_redundant=0, n_classes=n_classes, random_state=0)
    return X.astype(dtype), y


def _fit(est, X, y, how="fit"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if how == "fit":
            est.fit(X, y)
        elif how == "partial_fit":
            kwargs = {"classes": np.unique(y)} if is_classifier(est) else {}
            for chunk in np.array_split(np.arange(len(y)), 3):
                est.partial_fit(X[chunk], y[chunk], **kwargs)
        elif how == "warm_start":
            est.set_params(warm_start=True).fit(X, y)
            est.fit(X[::-1], y[::-1])
    return est


# Every hyperparameter whose default may change is pinned (the 0.1 defaults),
# so that the stored fits keep measuring the engine, not the defaults.
COMMON = {"n_hidden": 16, "random_state": 0, "damping": "auto", "tau": 1e-4,
          "batch_size": None, "tol": 1e-4, "n_iter_no_change": 10,
          "step_size": 0.95, "line_search": True, "mu": "auto",
          # the stored fits are of the exact step (the 0.2 defaults)
          "curvature": "exact", "hessian": "diagonal",
          # ... on X as given (the 0.7 default maps it first)
          "input_transform": None}
CONFIGS = {
    "reg_full_dual": (GGNScoreRegressor, dict(max_iter=6, linear_solver="dual"),
                      _regression, "fit"),
    "reg_full_primal": (GGNScoreRegressor, dict(max_iter=6, linear_solver="primal"),
                        _regression, "fit"),
    "reg_full_float32": (GGNScoreRegressor, dict(max_iter=6),
                         lambda: _regression(np.float32), "fit"),
    "reg_minibatch": (GGNScoreRegressor, dict(max_iter=3, batch_size=10),
                      _regression, "fit"),
    "reg_gd": (GGNScoreRegressor, dict(max_iter=20, solver="gd"), _regression, "fit"),
    "reg_no_line_search_ob": (GGNScoreRegressor,
                              dict(max_iter=4, line_search=False,
                                   regularizer="ostrovskii_bach", damping=2.0,
                                   tau=1e-3), _regression, "fit"),
    "reg_l2_mean_field": (GGNScoreRegressor,
                          dict(max_iter=4, regularizer="l2", scaling="mean_field",
                               tau=1e-2), _regression, "fit"),
    "reg_partial_fit": (GGNScoreRegressor, dict(batch_size=8), _regression,
                        "partial_fit"),
    "reg_warm_start": (GGNScoreRegressor, dict(max_iter=3), _regression,
                       "warm_start"),
    "clf_binary_full": (GGNScoreClassifier, dict(max_iter=5),
                        lambda: _classification(2), "fit"),
    "clf_softmax_minibatch": (GGNScoreClassifier, dict(max_iter=3, batch_size=12),
                              lambda: _classification(3), "fit"),
    "clf_softmax_full_primal": (GGNScoreClassifier,
                                dict(max_iter=4, batch_size=None,
                                     linear_solver="primal", n_hidden=6),
                                lambda: _classification(3), "fit"),
    "clf_squared_error_full": (GGNScoreClassifier,
                               dict(max_iter=5, loss="squared_error",
                                    batch_size=None, activation="tanh"),
                               lambda: _classification(3), "fit"),
    "clf_float32_minibatch": (GGNScoreClassifier,
                              dict(max_iter=3, batch_size=16, activation="relu"),
                              lambda: _classification(3, np.float32), "fit"),
    "clf_early_stopping": (GGNScoreClassifier,
                           dict(max_iter=8, early_stopping=True,
                                n_iter_no_change=2, validation_fraction=0.2),
                           lambda: _classification(3), "fit"),
    "clf_gd_minibatch": (GGNScoreClassifier,
                         dict(max_iter=4, solver="gd", batch_size=20,
                              learning_rate=0.5),
                         lambda: _classification(3), "fit"),
}


def work_dtype(name):
    """The dtype the steps of configuration ``name`` compute in.

    ``compute_dtype`` as :func:`fit_config` sets it: float64 on float64
    data; ``"auto"`` on float32 data, which computes a full batch of up to
    1024 rows in float64 (the weights returned in float32) and mini-batches
    in float32.
    """
    cls, params, data, how = CONFIGS[name]
    X, _ = data()
    if X.dtype == np.float64 or {**COMMON, **params}["batch_size"] is None:
        return np.float64
    return np.float32


def perturbed(a, rng):
    """``a`` with each entry moved one unit in the last place of its dtype
    up, down, or not at all, each with probability 1/3: a moved entry
    changes by between ``u`` and ``2u`` of its value, ``u = eps / 2`` the
    dtype's unit round-off."""
    step = rng.integers(-1, 2, a.shape)
    moved = np.nextafter(a, np.where(step > 0, np.inf, -np.inf).astype(a.dtype))
    return np.where(step == 0, a, moved)


def fit_config(name, perturbation=None):
    """Fit configuration ``name`` with one BLAS thread; return its arrays.

    Parameters
    ----------
    name : str
        A key of ``CONFIGS``.
    perturbation : int, "none" or None, default=None
        None: the configuration as stored. Otherwise the inputs are cast to
        the dtype the steps compute in (:func:`work_dtype`), so that the
        returned weights are that computation's, before any rounding to the
        data's dtype; an integer then seeds a :func:`perturbed` copy of
        ``X`` (and of a regressor's ``y``), ``"none"`` keeps them.

    Returns
    -------
    arrays : dict of ndarray
        The fitted weights and intercepts, the loss curve, and the counts
        of iterations.
    """
    cls, params, data, how = CONFIGS[name]
    if cls is GGNScoreRegressor:  # the stored fits trained on y as given
        params = {"standardize_target": False, **params}
    X, y = data()
    # float64 steps on float64 data; on float32 data "auto" (float64 steps
    # for the full batch, float32 for mini-batches: work_dtype)
    params = {"compute_dtype": "float64" if X.dtype == np.float64 else "auto",
              **params}
    if perturbation is not None:
        work = work_dtype(name)
        params["compute_dtype"] = np.dtype(work).name
        X = X.astype(work)
        if cls is GGNScoreRegressor:
            y = y.astype(work)
        if perturbation != "none":
            rng = np.random.default_rng(perturbation)
            X = perturbed(X, rng)
            if cls is GGNScoreRegressor:
                y = perturbed(y, rng)
    with threadpool_limits(1):
        est = _fit(cls(**{**COMMON, **params}), X, y, how)
    out = {"hidden_weights": est.hidden_weights_,
           "output_weights": est.output_weights_,
           "loss_curve": np.asarray(est.loss_curve_),
           # iterations of the whole warm-started / partial_fit sequence
           "counts": np.array([len(est.loss_curve_), est.t_])}
    if est.fit_intercept:
        out["hidden_intercept"] = est.hidden_intercept_
        out["output_intercept"] = est.output_intercept_
    return out


def blas_signature():
    """The BLAS libraries and kernels that produce the numbers here, and the
    CPU numba compiles for (``NUMBA_CPU_NAME`` when set, else the host's)."""
    import llvmlite.binding as llvm
    import numpy  # noqa: F401  (loads the BLAS threadpool_info reports)
    from numba.core import config

    info = [i for i in threadpool_info() if i["user_api"] == "blas"]
    # sorted: threadpoolctl lists the libraries in the order they were loaded
    return ";".join(sorted(f"{i['internal_api']}-{i['version']}-"
                           f"{i.get('architecture')}" for i in info)
                    + [f"numba-{config.CPU_NAME or llvm.get_host_cpu_name()}"])


if __name__ == "__main__":
    arrays = {"blas": np.array(blas_signature())}
    for name in CONFIGS:
        for key, value in fit_config(name).items():
            arrays[f"{name}/{key}"] = value
    PATH.parent.mkdir(exist_ok=True)
    np.savez(PATH, **arrays)
    print(f"wrote {len(CONFIGS)} configurations to {PATH.name} ({arrays['blas']})")
