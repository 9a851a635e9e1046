"""Compare GGN-SCORE with scikit-learn's MLP on three small problems.

Run ``python -m sklearn_ggn`` (or ``python -m sklearn_ggn --quick``). Each
problem is fitted once with a GGN-SCORE estimator and once with the matching
:class:`~sklearn.neural_network.MLPClassifier` / ``MLPRegressor`` on the same
train/test split, and one aligned table is printed:

* ``digits``: :func:`~sklearn.datasets.load_digits`, 10 classes, inputs
  standardised in a pipeline; test accuracy.
* ``diabetes``: :func:`~sklearn.datasets.load_diabetes`, inputs and target
  standardised (``TransformedTargetRegressor``) so that both models solve the
  same scaled problem; test R² and ½·MSE in the original target units.
* ``teacher-student``: the paper's synthetic problem
  (:func:`sklearn_ggn.datasets.make_teacher_student`, m = 500, d = 5) with a
  500-unit student trained full batch; test R² and ½·MSE.

Every row names the settings in which its model differs from the
estimator's defaults (column "non-default settings"), and the lines under the
table say why they were chosen.

A first run compiles the package's numba kernels (cached on disk
afterwards; later runs load them); that happens in a warm-up fit outside the
timed fits, and the output says which of the two it was.

Run from the root of a source checkout, ``python -m sklearn_ggn`` imports the
``sklearn_ggn`` folder there (Python puts the current directory first on
the module path), not the installed copy; the first line printed names the
version and the folder it was imported from.

Fit times use one BLAS thread by default (``--blas-threads``): the problems
are small (linear systems of at most a few hundred unknowns), and on small
virtual machines a multi-threaded OpenBLAS can make such Cholesky solves and
GEMMs tens of times slower, which would measure thread contention rather
than either optimizer.
"""

import argparse
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.compose import TransformedTargetRegressor
from sklearn.datasets import load_diabetes, load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score, mean_squared_error, r2_score
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

import sklearn_ggn
from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor, __version__, _config
from sklearn_ggn.datasets import make_teacher_student

# The fixed split of the two real data sets (the teacher-student problem comes
# with its own independent test set).
SPLIT = {"test_size": 0.25, "random_state": 0}

# GGN-SCORE settings; everything not listed is the estimator's default
# (n_hidden=100, silu, NTK scaling, pseudo-Huber with mu="auto", tau="auto",
# damping="adaptive", batch_size="auto", curvature="auto", hessian="auto").
# * teacher-student: the paper's setting, n_hidden=500, full batch, tau=1e-4
#   on its noise-free target, X and y as given, the paper's H = tau g''
#   (diagonal; one output: the curvature is exact anyway).
GGN_SETTINGS = {
    "digits": {},
    "diabetes": {},
    "teacher-student": {"n_hidden": 500, "batch_size": None, "tau": 1e-4,
                        "standardize_target": False, "hessian": "diagonal",
                        "damping": "tau", "input_transform": None},
}
# Why, in one line each (printed under the table, for the rows that differ
# from the defaults).
GGN_REASONS = {
    "teacher-student": "the paper's setting (500 hidden units, full batch, "
                       "tau=1e-4 on its noise-free target, X as given, "
                       "H = tau g''); "
                       "the MLP gets the same width and lbfgs, its strongest "
                       "solver for this small smooth full-batch problem.",
}
# --quick caps the iterations (epochs for the mini-batch digits fit); the
# numbers are then only a smoke test, not a comparison.
QUICK_GGN_MAX_ITER = {"digits": 5, "diabetes": 20, "teacher-student": 10}
QUICK_MLP_MAX_ITER = 30


def _final_estimator(model):
    """The network inside the pipeline / target transformer (for ``n_iter_``)."""
    if isinstance(model, TransformedTargetRegressor):
        model = model.regressor_
    if isinstance(model, Pipeline):
        model = model[-1]
    return model


def _scaled_regressor(estimator):
    """Standardise the inputs and the target around ``estimator``."""
    return TransformedTargetRegressor(
        regressor=make_pipeline(StandardScaler(), estimator),
        transformer=StandardScaler(),
    )


def _settings(params):
    """``key=value, ...`` of the non-default parameters ("-" for none)."""
    params = {key: value for key, value in params.items() if key != "random_state"}
    return ", ".join(f"{key}={value!r}" for key, value in params.items()) or "-"


def _problems(seed, quick):
    """Yield ``(name, task, (X_train, X_test, y_train, y_test), models)``.

    ``models`` is a list of ``(label, unfitted model, non-default settings)``:
    GGN-SCORE first, then the MLP with the same hidden width and otherwise
    default settings.
    """
    def ggn_params(name):
        params = dict(GGN_SETTINGS[name], random_state=seed)
        if quick:
            params["max_iter"] = QUICK_GGN_MAX_ITER[name]
        return params

    # MLP keeps its defaults except the width (and lbfgs on teacher-student,
    # MLP's strongest solver for a small full-batch smooth regression).
    mlp_quick = {"max_iter": QUICK_MLP_MAX_ITER} if quick else {}

    def mlp_params(width, **extra):
        params = dict(extra, random_state=seed, **mlp_quick)
        if width != 100:  # MLP's default hidden_layer_sizes=(100,)
            params["hidden_layer_sizes"] = (width,)
        return params

    X, y = load_digits(return_X_y=True)
    params = ggn_params("digits")
    width = params.get("n_hidden", 100)
    mlp = mlp_params(width)
    yield "digits", "classification", train_test_split(X, y, **SPLIT), [
        ("GGN-SCORE", make_pipeline(StandardScaler(), GGNScoreClassifier(**params)),
         _settings(params)),
        ("MLP (adam)", make_pipeline(StandardScaler(), MLPClassifier(**mlp)),
         _settings(mlp)),
    ]

    X, y = load_diabetes(return_X_y=True)
    params = ggn_params("diabetes")
    width = params.get("n_hidden", 100)
    mlp = mlp_params(width)
    yield "diabetes", "regression", train_test_split(X, y, **SPLIT), [
        ("GGN-SCORE", _scaled_regressor(GGNScoreRegressor(**params)),
         _settings(params)),
        ("MLP (adam)", _scaled_regressor(MLPRegressor(**mlp)), _settings(mlp)),
    ]

    # Inputs on the unit sphere and targets of variance ~0.26: used as they
    # come, like in the paper.
    X_train, y_train, X_test, y_test = make_teacher_student(
        n_train=500, n_test=1000, n_features=5, random_state=0)
    params = ggn_params("teacher-student")
    width = params["n_hidden"]
    # lbfgs runs to its own convergence: --quick leaves it uncapped.
    mlp = mlp_params(width, solver="lbfgs")
    mlp.pop("max_iter", None)
    yield "teacher-student", "regression", (X_train, X_test, y_train, y_test), [
        ("GGN-SCORE", GGNScoreRegressor(**params), _settings(params)),
        ("MLP (lbfgs)", MLPRegressor(**mlp), _settings(mlp)),
    ]


def _fit_and_score(model, task, data):
    """Fit, time and score one model; return a table row and the warnings."""
    X_train, X_test, y_train, y_test = data
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        model.fit(X_train, y_train)
        fit_time = time.perf_counter() - start
    # Only ConvergenceWarnings are silenced (they are summarised instead);
    # anything else is shown as usual.
    convergence = []
    for w in caught:
        if issubclass(w.category, ConvergenceWarning):
            convergence.append(str(w.message))
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)

    y_pred = model.predict(X_test)
    row = {"time": fit_time, "n_iter": _final_estimator(model).n_iter_,
           "flag": ""}
    if any("diverged" in message for message in convergence):
        row["flag"] = "!"
    elif convergence:
        row["flag"] = "*"
    if task == "classification":
        row["acc"] = accuracy_score(y_test, y_pred)
    else:
        row["r2"] = r2_score(y_test, y_pred)
        row["half_mse"] = 0.5 * mean_squared_error(y_test, y_pred)
    return row, convergence


def _warm_up():
    """Compile (or load from the cache) the numba kernels outside the timings.

    Tiny fits of both estimators go through the single-output and the
    multi-output Gram kernels, the activation and the Cholesky kernels, and
    one mini-batch fit through the compiled epoch.
    """
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        GGNScoreClassifier(n_hidden=8, max_iter=2, random_state=0).fit(
            X, np.arange(30) % 3)
        GGNScoreClassifier(n_hidden=8, max_iter=1, batch_size=10,
                           random_state=0).fit(X, np.arange(30) % 3)
        GGNScoreRegressor(n_hidden=8, max_iter=2, random_state=0).fit(X, X[:, 0])


def _format_row(dataset, label, row, settings):
    acc = f"{row['acc']:.4f}" if "acc" in row else "-"
    r2 = f"{row['r2']:.5f}" if "r2" in row else "-"
    half_mse = f"{row['half_mse']:.4g}" if "half_mse" in row else "-"
    n_iter = f"{row['n_iter']}{row['flag']}"
    return (f"{dataset:<16} {label:<12} {acc:>8} {r2:>9} {half_mse:>10} "
            f"{row['time']:>8.2f} {n_iter:>7}  {settings}")


def _origin():
    """Where ``sklearn_ggn`` was imported from: the source tree or an install."""
    folder = Path(sklearn_ggn.__file__).resolve().parent
    try:
        relative = folder.relative_to(Path.cwd().resolve())
    except ValueError:
        return str(folder)
    # (an environment inside this folder is an install, not the source tree)
    installed = any(part in ("site-packages", "dist-packages")
                    for part in relative.parts)
    return f"./{relative}" + ("" if installed else ", the source tree here")


def _parser():
    """The command line of ``python -m sklearn_ggn``."""
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_ggn",
        description="Train GGN-SCORE and scikit-learn's MLP side by side on "
                    "digits, diabetes and the paper's teacher-student problem "
                    "and print one table of test scores, fit times and "
                    "iteration counts; every row names its non-default "
                    "settings. Run from the root of a source checkout, this "
                    "imports the source tree there, not the installed package.",
    )
    parser.add_argument("--quick", action="store_true",
                        help="cap the iterations (GGN-SCORE: "
                             + ", ".join(f"{k} {v}" for k, v in
                                         QUICK_GGN_MAX_ITER.items())
                             + f"; MLP adam: {QUICK_MLP_MAX_ITER}) for a "
                             "smoke test of a few seconds, e.g. in CI; the "
                             "scores are then not a comparison")
    parser.add_argument("--seed", type=int, default=0,
                        help="random_state of every model (weight "
                             "initialization and shuffling); the data splits "
                             "stay fixed (default: 0)")
    parser.add_argument("--blas-threads", type=int, default=1, metavar="N",
                        help="number of threads the BLAS library (OpenBLAS, "
                             "MKL, ...) may use during the fits, set with "
                             "threadpoolctl for this run only; 0 keeps the "
                             "library's own default (often one per core). "
                             "The default 1 measures the optimizers rather "
                             "than thread contention: these problems are "
                             "small, and on small shared machines a "
                             "multi-threaded BLAS can make their solves many "
                             "times slower (default: 1)")
    return parser


def main(argv=None):
    """Run the comparison and print the table; returns the exit status."""
    args = _parser().parse_args(argv)

    total_start = time.perf_counter()
    print(f"sklearn_ggn {__version__} (imported from {_origin()}): "
          "GGN-SCORE vs scikit-learn MLP"
          f"{' (--quick: iterations capped, smoke test only)' if args.quick else ''}")
    cached = _config.kernels_cached()
    _config._first_compile_noted = True  # (said here instead)
    if not cached:
        print("Compiling the numba kernels (no on-disk cache yet: a few "
              "seconds, once for this copy of the package).", flush=True)
    limits = None
    if args.blas_threads > 0:
        limits = threadpool_limits(limits=args.blas_threads, user_api="blas")
    try:
        start = time.perf_counter()
        _warm_up()
        print(f"Kernels {'loaded from the on-disk cache' if cached else 'compiled'} "
              f"in {time.perf_counter() - start:.1f} s (not included in the fit "
              "times).")
        print(f"random_state={args.seed} for all models; BLAS threads: "
              f"{args.blas_threads or 'library default'}.")
        print()
        header = (f"{'dataset':<16} {'model':<12} {'accuracy':>8} {'R2':>9} "
                  f"{'0.5*MSE':>10} {'fit [s]':>8} {'n_iter':>7}  "
                  "non-default settings")
        print(header)
        print("-" * len(header))
        diverged = []
        for dataset, task, data, models in _problems(args.seed, args.quick):
            for label, model, settings in models:
                row, convergence = _fit_and_score(model, task, data)
                print(_format_row(dataset, label, row, settings), flush=True)
                diverged += [f"{dataset} / {label}: {message}"
                             for message in convergence if "diverged" in message]
    finally:
        if limits is not None:
            limits.restore_original_limits()

    print("-" * len(header))
    print("Test-set scores; 0.5*MSE in the original target units. "
          "ConvergenceWarnings suppressed: * = max_iter reached, ! = diverged.")
    for name, reason in GGN_REASONS.items():
        print(textwrap.fill(f"{name}: {reason}", width=len(header),
                            subsequent_indent="  "))
    for line in diverged:
        print(f"DIVERGED: {line}")
    print(f"Total wall time: {time.perf_counter() - total_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
