"""Fixed-seed configurations whose fitted weights pin the training engine.

``python tests/engine_reference.py`` (one BLAS thread) writes
``tests/data/engine_reference.npz`` from the current code; the regression
test in ``test_engine.py`` refits every configuration and compares. The
file was first written from the 0.1 code, before the training loop moved
into the engine, so the test proved the refactor kept the numerics bit for
bit (on a machine with the same BLAS kernel; elsewhere to round-off). It was
rewritten once since, when the log loss replaced scipy's logsumexp/softmax by
NumPy's (all differences at round-off: ≤ 2.3e-16 relative in float64, 4.9e-8
in float32, measured before rewriting). It was rewritten a second time when
the structured curvature factor ``A_k = diag(a_k) − u_k w_kᵀ`` replaced the
dense one in the Gram and the Jacobian products, the gradient's hidden error
became one GEMM and systems of order ≤ 512 began calling LAPACK's potrf
directly (measured before rewriting, as the largest difference over the
largest stored value: float64 ≤ 2.1e-10 in the ill-conditioned full-batch
fits, ≤ 3.2e-15 in mini-batch ones; float32 3.5e-7 in mini-batch and 1.1e-4
in the six full-batch iterations, where the old and the new float32 fits
are both 2e-5 to 1.4e-4 from the same fit in float64); and once more when
float64 multi-output mini-batch epochs began running compiled (``engine/_compiled.py``:
≤ 7e-16 absolute from the Python epoch on these fits). Rewritten again (on an
AMD EPYC, OpenBLAS Haswell kernels) when every loss formula became one
per-row kernel (the risk summed in float64 in one loop instead of NumPy's
pairwise sum of float32 or float64 terms) and every regularizer formula one
element-wise function (``D = (q·sqrt q/μ²)/λ_H`` in another order of
rounding): measured on that machine against the previous code, as the
largest difference over the largest stored value, float64 ≤ 1.9e-11 in the
ill-conditioned full-batch binary fit and ≤ 5.2e-16 elsewhere, float32
4.7e-7 in mini-batch and 1.1e-4 in the full-batch fit (within the 2e-5 to
1.4e-4 that separate a float32 fit from its float64 twin). And once more when
the forward pass after X̂Ûᵀ, the products with the output weights, the
curvature factor's application and the backward pass but for X̂ᵀ(·) became
kernels shared by the NumPy route and the compiled step (the output bias's
gradient a loop sum instead of NumPy's pairwise one): against the previous
file on the same machine, float64 ≤ 4.5e-11 in the full-batch fits and
≤ 1.2e-15 in mini-batch ones, float32 9.3e-5 in the full-batch fit. Last
rewritten when the compiled step's Jacobian products became one pair for
both step structures, with the exact factor made dense: the compiled
multi-class mini-batch fit moved by 1.4e-15, nothing else changed. Rewritten
(same machine) when a full-batch fit on float32 data began computing in
float64 and returning float32 weights: ``reg_full_float32`` moved by 2.5e-5
of its largest value (it now differs from a float64 fit only by the
float32 rounding of X and of the returned weights); nothing else changed.
Rewritten (same machine) when float32 kernels began taking exponentials by
a SIMD polynomial (within 1 ulp) instead of libm's ``expf``:
``clf_float32_minibatch`` moved by 1.7e-7 of its largest value, nothing
else changed (float64 keeps libm's exp). The stored signature names the
CPU numba compiles for as well as the BLAS kernel since the passes over the
parameters became re-associated (SIMD partial sums, whose order depends on
the target's vector width); the values did not change.
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


def fit_config(name):
    """Fit configuration ``name`` with one BLAS thread; return its arrays."""
    cls, params, data, how = CONFIGS[name]
    if cls is GGNScoreRegressor:  # the stored fits trained on y as given
        params = {"standardize_target": False, **params}
    X, y = data()
    # the stored fits computed their steps in X's dtype
    params = {"compute_dtype": "float64" if X.dtype == np.float64 else "auto",
              **params}
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
    """The BLAS library and kernel that produced the numbers, and the CPU
    numba compiles for (its re-associated sums split by the target's SIMD
    width)."""
    import llvmlite.binding as llvm
    import numpy  # noqa: F401  (loads the BLAS threadpool_info reports)

    info = [i for i in threadpool_info() if i["user_api"] == "blas"]
    # sorted: threadpoolctl lists the libraries in the order they were loaded
    return ";".join(sorted(f"{i['internal_api']}-{i['version']}-"
                           f"{i.get('architecture')}" for i in info)
                    + [f"numba-{llvm.get_host_cpu_name()}"])


if __name__ == "__main__":
    arrays = {"blas": np.array(blas_signature())}
    for name in CONFIGS:
        for key, value in fit_config(name).items():
            arrays[f"{name}/{key}"] = value
    PATH.parent.mkdir(exist_ok=True)
    np.savez(PATH, **arrays)
    print(f"wrote {len(CONFIGS)} configurations to {PATH.name} ({arrays['blas']})")
