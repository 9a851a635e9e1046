"""Panel benchmark (issue 8, "Practical strength"): the practitioner's test.

Swap ``MLPClassifier`` for ``GGNScoreClassifier`` in an existing pipeline,
keep the defaults, compare. Every model sits in
``make_pipeline(StandardScaler(), model)`` (the tasks of ``ENCODED_TASKS``,
given with numeric columns and categorical codes, in the
``make_pipeline(ColumnTransformer([StandardScaler, OneHotEncoder]), model)``
a user writes for them; its output is sparse); every regressor is also wrapped
in ``TransformedTargetRegressor(transformer=StandardScaler())`` (y
standardized). Models:

* ``ggn``: ``GGNScoreClassifier`` / ``GGNScoreRegressor`` with their defaults
  (``random_state=seed``), or with the overrides of ``--ggn-params`` (a JSON
  object of constructor parameters, to compare candidate defaults);
* ``mlp``: ``MLPClassifier`` / ``MLPRegressor`` defaults (``random_state=seed``);
* ``hgb``: ``HistGradientBoostingClassifier`` / ``...Regressor`` defaults, as
  a reference of what the data allow;
* ``realmlp`` (when a Python with torch and pytabkit is named by
  ``--realmlp-python PATH`` or ``SKLEARN_GGN_REALMLP_PYTHON``; then it is in
  the default list, else the column is skipped with a note): RealMLP-TD,
  pytabkit's ``RealMLP_TD_Classifier`` / ``RealMLP_TD_Regressor`` with its
  tuned defaults, given the raw columns (no StandardScaler: it median-centres,
  robust-scales and smooth-clips them itself; onehot_regression_ohe's codes
  named categorical, which it one-hot encodes or embeds) and y as it is (it
  standardizes the target itself); CPU, one torch thread,
  ``random_state=seed``. It runs in that other Python (:mod:`._realmlp`: one
  long-lived process for the run, arrays through a temporary ``.npz``); its
  fit time is measured inside that process, after untimed warm-up fits there.

Only the public API of the package is used (the estimators and the loaders of
:mod:`sklearn_ggn.datasets`), so the panel survives internal refactoring.

Tasks (``--tasks``):

===============  =============================================================
breast_cancer    bundled, 70/30 split stratified, split seed = run seed
digits           bundled, 70/30 stratified, split seed = run seed
diabetes         bundled, 70/30, score R² (regression)
pendigits        the given split (7494 / 3498)
avila            the given split (10430 / 10437)
mnist10k         the first 10 000 training images / 255, tested on the 10 000
                 test images
letter           the first 15 000 rows of ``letter-recognition.data`` for
                 training, the last 5 000 for testing; when only the LIBSVM
                 files are present, the loader's split (10 500 / 5 000), which
                 the table then says
===============  =============================================================

The real-data tasks read the folder of ``--data-home`` or of the
environment variable ``SKLEARN_GGN_DATA`` (never downloaded); a task whose
files are absent is skipped with a printed note.

Timing: everything runs under ``threadpool_limits(1)`` (one BLAS thread,
for every model alike) after an untimed numba warm-up of the package's
kernels. The time of a model is the wall time of its ``fit`` (scaling
included). Per seed, the GGN/MLP time ratio is taken within the same run;
the table reports per task the median over seeds of scores, fit times and
ratios, and the geometric mean over tasks of the median ratios. The
table's scores are means over seeds (the ggn−mlp gap a median); below it,
how many tasks have GGN-SCORE's mean score within 0.005 accuracy / 0.01 R²
of HistGradientBoosting's and of RealMLP-TD's (or above), and the geometric
mean of the GGN-SCORE / RealMLP-TD time ratios.

``--peer-results FILE.json`` (an earlier run's JSON, e.g. written with
``--json``) reuses its ``realmlp`` / ``hgb`` / ``mlp`` fits (``--reuse``
picks which) of the same task, seed and test split instead of refitting
them; the page then names that run's date and load (:mod:`._peers`).
Same-run timing is the default.

Flags: every warning of a fit is recorded; ``ConvergenceWarning`` s are
counted, a fit whose warning says it diverged is flagged ``diverged``, and a
fit that does not beat the trivial predictor (accuracy at most the majority
class rate + 0.01, or R² ≤ 0) is flagged ``no learning``.

Plot (matplotlib optional): test accuracy against training wall time for
letter and mnist10k on the first seed. GGN-SCORE: one ``fit`` with the
standardized test set as ``X_val`` (its ``history_`` records the validation
score and the training time after every epoch, validation excluded); MLP:
``partial_fit`` one epoch at a time (a ``RandomState`` continued across
calls) for as many epochs as its timed ``fit`` ran, timing only the calls.

Output: ``benchmarks/results/panel_<label>.md`` and ``.json`` (+ ``.png``),
with ``<label>`` from ``--label`` (default ``full``, or ``quick``); ``--json
PATH`` puts the JSON of every fit elsewhere.

``--quick``: the first seed only, at most 3 000 training and test rows per
task (random subsets), no plot.

Run from the repository root::

    python -m benchmarks.panel --data-home DATA
    python -m benchmarks.panel --tasks diabetes letter --seeds 0 1 2 3 4
    python -m benchmarks.panel --ggn-params '{"damping": 10}' --label damping10
    python -m benchmarks.panel --tasks breast_cancer digits diabetes \\
        --models ggn mlp hgb realmlp --realmlp-python PATH
"""

import argparse
import json
import math
import os
import statistics
import sys
import time
import warnings
from functools import partial

import numpy as np
import scipy.sparse as sp

from . import _peers
from ._common import (
    LoadMonitor,
    _jsonable,
    fmt,
    machine_stamp,
    md_table,
    new_figure,
    result_path,
    save_figure,
    stamp_markdown,
)

# generated tasks: shapes no default was chosen on (wide one-hot data, many
# classes, tall data, noisy and strongly non-linear low-dimensional tasks)
GENERATED_TASKS = ("onehot_binary", "onehot_regression", "wide_5class",
                   "classes_30", "tall_3class", "friedman1", "nonlinear_binary",
                   "mixed_binary", "heavy_friedman", "tall_noisy",
                   "onehot_regression_ohe")
TASKS = ("breast_cancer", "digits", "diabetes", "pendigits", "avila", "mnist10k",
         "letter") + GENERATED_TASKS
REGRESSION_TASKS = ("diabetes", "onehot_regression", "friedman1", "heavy_friedman",
                    "tall_noisy", "onehot_regression_ohe")
# tasks given as a user encodes them, with their numeric and categorical
# columns: make_pipeline(ColumnTransformer([StandardScaler on the numeric
# ones, OneHotEncoder on the codes]), model) instead of a StandardScaler on
# everything (the transformer's output is sparse where it is thin, as
# scikit-learn's default sparse_threshold=0.3 decides)
ENCODED_TASKS = {"onehot_regression_ohe": (list(range(9)), list(range(9, 14)))}
REAL_TASKS = ("pendigits", "avila", "mnist10k", "letter")
MODELS = ("ggn", "mlp", "hgb", "realmlp")
DEFAULT_MODELS = ("ggn", "mlp", "hgb")
PLOT_TASKS = ("letter", "mnist10k", "wide_5class")
QUICK_ROWS = 3000
DATA_ENV_VAR = "SKLEARN_GGN_DATA"


class Skip(Exception):
    """A task whose data are not available."""


# -------------------------------------------------------------------- data
def _data_home(args):
    return args.data_home or os.environ.get(DATA_ENV_VAR) or None


def _bundled(name, seed):
    from sklearn import datasets
    from sklearn.model_selection import train_test_split

    loader = {"breast_cancer": datasets.load_breast_cancer,
              "digits": datasets.load_digits,
              "diabetes": datasets.load_diabetes}[name]
    X, y = loader(return_X_y=True)
    stratify = None if name == "diabetes" else y
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3,
                                              random_state=seed, stratify=stratify)
    return X_tr, y_tr, X_te, y_te, "70/30 split, seed = run seed"


def _one_hot_columns(rng, n_rows, levels):
    """Random categorical columns with the given numbers of levels: their
    codes (n_rows × len(levels)) and the one-hot matrix."""
    codes = np.column_stack([rng.integers(0, m, n_rows) for m in levels])
    blocks = [np.eye(m)[codes[:, j]] for j, m in enumerate(levels)]
    return codes, np.hstack(blocks)


def _generated(name, seed):
    """A generated task: the data are fixed (random_state 0), the 70/30
    split follows the run seed."""
    from sklearn import datasets
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng(0)
    stratify = True
    if name == "onehot_binary":
        # 1 000 rows, 8 categorical columns one-hot encoded (61 columns), a
        # label from additive effects, one interaction and noise
        levels = (3, 4, 5, 6, 8, 10, 12, 13)
        codes, X = _one_hot_columns(rng, 1000, levels)
        effects = [rng.normal(0, 1, m) for m in levels]
        score = sum(e[codes[:, j]] for j, e in enumerate(effects))
        score += 1.5 * (codes[:, 0] == codes[:, 1] % 3)
        y = (score + rng.normal(0, 1.0, 1000) > np.median(score)).astype(int)
    elif name in ("onehot_regression", "onehot_regression_ohe"):
        # 2 930 rows: 300 one-hot columns of 5 categoricals and 9 numeric ones
        # (the _ohe task: the same rows with the categoricals as codes, for
        # the OneHotEncoder of its pipeline)
        levels = (120, 80, 50, 30, 20)
        codes, onehot = _one_hot_columns(rng, 2930, levels)
        numeric = rng.normal(0, 1, (2930, 9))
        X = np.hstack([numeric, onehot if name == "onehot_regression" else codes])
        y = (np.sin(numeric[:, 0]) * 2 + numeric[:, 1] * numeric[:, 2]
             + sum(rng.normal(0, 0.7, m)[codes[:, j]] for j, m in enumerate(levels))
             + rng.normal(0, 0.5, 2930))
        stratify = False
    elif name == "wide_5class":
        X, y = datasets.make_classification(
            4000, 500, n_informative=40, n_redundant=20, n_classes=5,
            flip_y=0.03, random_state=0)
    elif name == "classes_30":
        X, y = datasets.make_classification(
            20000, 20, n_informative=15, n_classes=30, n_clusters_per_class=1,
            flip_y=0.05, random_state=0)
    elif name == "tall_3class":
        X, y = datasets.make_classification(
            50000, 12, n_informative=8, n_classes=3, flip_y=0.05,
            random_state=0)
    elif name == "friedman1":
        X, y = datasets.make_friedman1(2000, noise=1.0, random_state=0)
        stratify = False
    elif name == "nonlinear_binary":
        X = rng.uniform(-2, 2, (3000, 5))
        f = (np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + X[:, 2] * X[:, 3]
             - 0.5 * X[:, 4] ** 2 + 0.3)
        y = (f > 0).astype(int)
        flip = rng.random(3000) < 0.05
        y[flip] = 1 - y[flip]
    elif name == "mixed_binary":
        # 5 000 rows, 40 columns: 10 Gaussian, 8 heavy-tailed (log-normal,
        # Pareto, counts) and 7 uniform numeric columns, 3 categoricals
        # one-hot encoded (15 columns); a label from non-linear additive
        # effects, two interactions and noise
        n = 5000
        gauss = rng.normal(0, 1, (n, 10))
        heavy = np.column_stack(
            [rng.lognormal(0, 1.5, n) for _ in range(3)]
            + [rng.pareto(1.5, n) for _ in range(2)]
            + [rng.negative_binomial(1, 0.05, n).astype(float) for _ in range(3)])
        unif = rng.uniform(0, 1, (n, 7))
        levels = (5, 4, 6)
        codes, onehot = _one_hot_columns(rng, n, levels)
        score = (np.sin(2 * gauss[:, 0]) + gauss[:, 1] * gauss[:, 2]
                 + 0.5 * gauss[:, 3] - 0.7 * np.abs(gauss[:, 4])
                 + np.log1p(heavy[:, 0]) - 0.8 * np.log1p(heavy[:, 3])
                 + 0.6 * np.tanh(heavy[:, 5] / 20) + 1.5 * unif[:, 0] * unif[:, 1]
                 + sum(rng.normal(0, 0.6, m)[codes[:, j]]
                       for j, m in enumerate(levels))
                 + 0.8 * (codes[:, 0] == 2) * gauss[:, 5])
        score += rng.normal(0, 0.8, n)
        y = (score > np.median(score)).astype(int)
        X = np.hstack([gauss, heavy, unif, onehot])
    elif name == "heavy_friedman":
        # 40 000 rows of friedman1 (noise 6, R² ≈ 0.4 at best) with three
        # columns made heavy-tailed by monotone maps: after StandardScaler a
        # few values sit tens of standard deviations out
        X, y = datasets.make_friedman1(40000, noise=6.0, random_state=0)
        X[:, 0] = np.exp(8 * X[:, 0])
        X[:, 1] = np.exp(10 * X[:, 1])
        X[:, 3] = X[:, 3] ** 6
        stratify = False
    elif name == "tall_noisy":
        # 40 000 rows, 10 columns like a tabular record of amounts and counts
        # (log-normal money, Pareto, negative-binomial and Poisson counts, an
        # ordinal, Student-t and Gaussian columns); a weak non-linear signal
        # (R² ≈ 0.35 at best)
        n = 40000
        cols = [rng.lognormal(3, 1.2, n), rng.lognormal(1, 1.5, n),
                rng.negative_binomial(1, 0.05, n).astype(float),
                rng.poisson(3, n).astype(float), rng.normal(0, 1, n),
                rng.uniform(0, 1, n), rng.pareto(2.5, n),
                rng.normal(0, 1, n), rng.integers(0, 5, n).astype(float),
                rng.standard_t(3, n)]
        X = np.column_stack(cols)
        f = (np.log1p(X[:, 0]) + 0.8 * np.tanh(X[:, 2] / 20)
             + 0.5 * np.sin(2 * X[:, 4]) + 0.8 * X[:, 5] * X[:, 7]
             + 0.4 * np.log1p(X[:, 6]) + 0.2 * X[:, 8] - 0.4 * (X[:, 3] > 5)
             + 0.3 * np.clip(X[:, 9], -3, 3) - 0.3 * np.log1p(X[:, 1]))
        y = f + rng.normal(0, np.std(f) * np.sqrt(1 / 0.35 - 1), n)
        stratify = False
    else:
        raise ValueError(name)
    X_tr, X_te, y_tr, y_te = train_test_split(
        X, y, test_size=0.3, random_state=seed,
        stratify=y if stratify else None)
    return X_tr, y_tr, X_te, y_te, "generated, 70/30 split, seed = run seed"


def _letter(home):
    """First 15 000 / last 5 000 rows of the raw UCI file when present."""
    import gzip
    from pathlib import Path

    folder = Path(home).expanduser() / "letter"
    for name in ("letter-recognition.data", "letter-recognition.data.gz"):
        path = folder / name
        if path.is_file():
            opener = gzip.open if name.endswith(".gz") else open
            with opener(path, "rt") as fh:
                rows = [line.strip().split(",") for line in fh if line.strip()]
            y = np.array([r[0] for r in rows])
            X = np.array([[float(v) for v in r[1:]] for r in rows])
            return (X[:15000], y[:15000], X[15000:], y[15000:],
                    "first 15 000 rows / last 5 000 of letter-recognition.data")
    from sklearn_ggn.datasets import load_uci

    X_tr, y_tr, X_te, y_te = load_uci("letter", data_home=home,
                                      download_if_missing=False)
    return X_tr, y_tr, X_te, y_te, (f"loader split {len(y_tr)} / {len(y_te)} "
                                    "(raw file absent)")


def load_task(name, seed, home):
    """``(X_train, y_train, X_test, y_test, split note)``; raises Skip."""
    if name in GENERATED_TASKS:
        return _generated(name, seed)
    if name not in REAL_TASKS:
        return _bundled(name, seed)
    if home is None:
        raise Skip(f"{name}: no data folder (--data-home or {DATA_ENV_VAR})")
    from sklearn_ggn.datasets import load_mnist, load_uci

    try:
        if name == "letter":
            return _letter(home)
        if name == "mnist10k":
            X_tr, y_tr, X_te, y_te = load_mnist(data_home=home,
                                                download_if_missing=False)
            return (X_tr[:10000] / 255.0, y_tr[:10000], X_te / 255.0, y_te,
                    "first 10 000 training images / 255; 10 000 test images")
        X_tr, y_tr, X_te, y_te = load_uci(name, data_home=home,
                                          download_if_missing=False)
        return X_tr, y_tr, X_te, y_te, f"given split {len(y_tr)} / {len(y_te)}"
    except (FileNotFoundError, OSError) as exc:
        raise Skip(f"{name}: data not found ({exc})") from exc


def _subsample(X, y, rows, seed):
    if rows is None or len(y) <= rows:
        return X, y
    idx = np.random.default_rng(seed).choice(len(y), rows, replace=False)
    return X[idx], y[idx]


# ------------------------------------------------------------------ models
def is_regression(task):
    return task in REGRESSION_TASKS


def _preprocessor(task, kind):
    """The pipeline's first step: StandardScaler, or for an encoded task the
    ColumnTransformer a user writes (dense for HistGradientBoosting, which
    takes no sparse X)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    if task not in ENCODED_TASKS:
        return StandardScaler()
    numeric, categorical = ENCODED_TASKS[task]
    return ColumnTransformer(
        [("numeric", StandardScaler(), numeric),
         ("categorical", OneHotEncoder(handle_unknown="ignore"), categorical)],
        sparse_threshold=0.0 if kind == "hgb" else 0.3)


def make_model(kind, regression, seed, ggn_params, task=None, preprocessor=None):
    """The model ``kind`` in its pipeline: ``preprocessor`` (default: the
    task's, :func:`_preprocessor`) first, y standardized for regressors."""
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.ensemble import (
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
    )
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

    if kind == "ggn":
        cls = GGNScoreRegressor if regression else GGNScoreClassifier
        est = cls(**{"random_state": seed, **ggn_params})
    elif kind == "mlp":
        est = (MLPRegressor if regression else MLPClassifier)(random_state=seed)
    else:
        est = (HistGradientBoostingRegressor if regression
               else HistGradientBoostingClassifier)(random_state=seed)
    pipe = make_pipeline(_preprocessor(task, kind) if preprocessor is None
                         else preprocessor, est)
    if regression:
        return TransformedTargetRegressor(regressor=pipe,
                                          transformer=StandardScaler())
    return pipe


def _final_estimator(model):
    pipe = getattr(model, "regressor_", model)
    return pipe[-1]


def fit_and_score(kind, task, seed, data, ggn_params):
    """One timed fit: dict with score, time, warnings and flags."""
    from sklearn.exceptions import ConvergenceWarning

    from threadpoolctl import threadpool_limits

    X_tr, y_tr, X_te, y_te = data
    regression = is_regression(task)
    model = make_model(kind, regression, seed, ggn_params, task)
    # (limits again: a library loaded since the run's limits were set, as
    # HistGradientBoosting's OpenMP runtime, would else take every core)
    with threadpool_limits(limits=1), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        model.fit(X_tr, y_tr)
        elapsed = time.perf_counter() - t0
    score = float(model.score(X_te, y_te))
    conv = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    diverged = any("diverge" in str(w.message) for w in caught)
    if regression:
        no_learning = not score > 0.0
    else:
        _, counts = np.unique(y_te, return_counts=True)
        no_learning = score <= counts.max() / counts.sum() + 0.01
    est = _final_estimator(model)
    return {"score": score, "time": elapsed,
            "n_iter": int(getattr(est, "n_iter_", -1)),
            "convergence_warnings": len(conv),
            "max_iter_reached": any("Maximum iter" in str(w.message) for w in conv),
            "diverged": bool(diverged), "no_learning": bool(no_learning),
            "warnings": sorted({str(w.message)[:160] for w in caught})}


def warm_up(ggn_params):
    """Untimed fits that compile the package's numba kernels on every path
    the panel uses (binary / multiclass / regression, full and mini-batch,
    dual and primal)."""
    from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 6))
    y3 = rng.integers(0, 3, 300)
    params = {k: v for k, v in ggn_params.items() if k not in ("max_iter",)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for bs in (None, 32):
            for solver in ("dual", "primal"):
                common = dict(params, n_hidden=8, max_iter=2, batch_size=bs,
                              linear_solver=solver, random_state=0)
                GGNScoreClassifier(**common).fit(X, y3)
                GGNScoreClassifier(**common).fit(X, y3 % 2)
                GGNScoreRegressor(**common).fit(X, X[:, 0])
        GGNScoreClassifier(**dict(params, n_hidden=8, max_iter=2,
                                  random_state=0)).fit(X, y3)
        # the sparse kernels (a one-hot encoder's output), both X̂Wᵀ routes
        Xs = sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0))
        for bs in (32, 2):
            GGNScoreRegressor(**dict(params, n_hidden=8, max_iter=2,
                                     batch_size=bs, random_state=0)).fit(
                Xs, X[:, 0])


# ------------------------------------------------------------------- curves
def curves(task, seed, data, ggn_params):
    """Test accuracy against training time, GGN-SCORE and MLP (first seed).

    GGN-SCORE's curve is its validation score with the test rows given as
    ``X_val``, which turns ``early_stopping="auto"``'s watch off: the
    curve follows the fit on all rows without it (where the watch refits,
    the default fit is its first ``overfitting_watch_["best_epoch"]``
    epochs of it, computed on its own held-out rows)."""
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    from sklearn_ggn import GGNScoreClassifier

    X_tr, y_tr, X_te, y_te = data
    scaler = StandardScaler().fit(X_tr)
    Xs_tr, Xs_te = scaler.transform(X_tr), scaler.transform(X_te)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ggn = GGNScoreClassifier(**{"random_state": seed, **ggn_params})
        ggn.fit(Xs_tr, y_tr, X_val=Xs_te, y_val=y_te)
        out["ggn"] = {"time": list(ggn.history_["time"]),
                      "score": list(ggn.history_["validation_score"])}
        mlp_epochs = MLPClassifier(random_state=seed).fit(Xs_tr, y_tr).n_iter_
        mlp = MLPClassifier(random_state=np.random.RandomState(seed))
        classes = np.unique(y_tr)
        total, times, scores = 0.0, [], []
        for _ in range(mlp_epochs):
            t0 = time.perf_counter()
            mlp.partial_fit(Xs_tr, y_tr, classes=classes)
            total += time.perf_counter() - t0
            times.append(total)
            scores.append(float(mlp.score(Xs_te, y_te)))
        out["mlp"] = {"time": times, "score": scores}
    return out


def time_to_mlp_accuracy(cur):
    """``(MLP's final test accuracy, MLP's time, GGN-SCORE's time to reach
    that accuracy or None, the ratio)`` from the curves of one task."""
    target, t_mlp = cur["mlp"]["score"][-1], cur["mlp"]["time"][-1]
    reached = [t for t, sc in zip(cur["ggn"]["time"], cur["ggn"]["score"])
               if sc >= target]
    t_ggn = reached[0] if reached else None
    return target, t_mlp, t_ggn, (t_ggn / t_mlp if reached else None)


def plot_curves(all_curves, label, stamp):
    try:
        fig, axes = new_figure(ncols=len(all_curves))
    except ImportError:
        print("matplotlib not installed: no plot", flush=True)
        return None
    for ax, (task, cur) in zip(axes, all_curves.items()):
        for kind, style in (("ggn", "o-"), ("mlp", "s-")):
            c = cur[kind]
            ax.plot(c["time"], c["score"], style, ms=3,
                    label="GGN-SCORE" if kind == "ggn" else "MLPClassifier")
        ax.set_xscale("log")
        ax.set_xlabel("training wall time (s, one BLAS thread)")
        ax.set_ylabel("test accuracy")
        ax.set_title(task)
        ax.grid(alpha=0.3)
        ax.legend()
    return save_figure(fig, "panel", label, stamp)


# ------------------------------------------------------------------ summary
def _median(values):
    values = [v for v in values if v is not None and np.isfinite(v)]
    return statistics.median(values) if values else float("nan")


def summarize(results, models):
    """Per task: medians over seeds (and the mean score); the GGN/MLP ratio
    per seed then median; the peers' comparison (:func:`_peers.task_summary`)."""
    per_task = {}
    for task, runs in results.items():
        entry = {}
        for kind in models:
            fits = [r[kind] for r in runs.values() if kind in r]
            entry[kind] = {
                "score": _median([f["score"] for f in fits]),
                "score_mean": float(np.mean([f["score"] for f in fits])),
                "time": _median([f["time"] for f in fits]),
                "n_iter": _median([f["n_iter"] for f in fits]),
                "convergence_warnings": sum(f["convergence_warnings"] for f in fits),
                "max_iter_reached": sum(f["max_iter_reached"] for f in fits),
                "diverged": sum(f["diverged"] for f in fits),
                "no_learning": sum(f["no_learning"] for f in fits),
            }
        if "ggn" in models and "mlp" in models:
            ratios = [r["ggn"]["time"] / r["mlp"]["time"] for r in runs.values()]
            entry["time_ratio"] = _median(ratios)
            entry["time_ratios"] = ratios
            entry["score_gap"] = _median([r["ggn"]["score"] - r["mlp"]["score"]
                                          for r in runs.values()])
        entry["peers"] = _peers.task_summary(runs, models)
        per_task[task] = entry
    ratios = [e["time_ratio"] for e in per_task.values() if "time_ratio" in e]
    geo = (math.exp(sum(math.log(r) for r in ratios) / len(ratios))
           if ratios else float("nan"))
    return per_task, geo


def markdown_tables(per_task, geo, models, notes, n_train):
    headers = ["task", "train rows"]
    for kind in models:
        headers += [f"{kind} score (mean)", f"{kind} fit s"]
    if "ggn" in models and "mlp" in models:
        headers += ["ggn−mlp score (median)", "time ratio ggn/mlp"]
    if "ggn" in models and "realmlp" in models:
        headers += ["time ratio ggn/realmlp"]
    headers += ["ggn epochs/iters", "flags"]
    rows = []
    for task, e in per_task.items():
        row = [task + (" (R²)" if is_regression(task) else ""), n_train[task]]
        for kind in models:
            row += [e[kind]["score_mean"], e[kind]["time"]]
        if "time_ratio" in e:
            row += [e["score_gap"], e["time_ratio"]]
        if "ggn" in models and "realmlp" in models:
            row += [e["peers"]["ratio"].get("realmlp", float("nan"))]
        flags = []
        for kind in models:
            k = e[kind]
            for key, word in (("diverged", "diverged"), ("no_learning", "no learning"),
                              ("max_iter_reached", "max_iter")):
                if k[key]:
                    flags.append(f"{kind} {word} ×{k[key]}")
            other = k["convergence_warnings"] - k["max_iter_reached"]
            if other > 0:
                flags.append(f"{kind} {other} other ConvergenceWarning")
        ggn_iter = e["ggn"]["n_iter"] if "ggn" in e else float("nan")
        row += [ggn_iter, "; ".join(flags) or "-"]
        rows.append(row)
    text = [md_table(headers, rows), ""]
    if np.isfinite(geo):
        text.append(f"Geometric mean of the per-task median time ratios "
                    f"(GGN-SCORE / MLP): **{fmt(geo, 3)}**.")
        text.append("")
    for line in _peers.comparison_lines(
            {t: e["peers"] for t, e in per_task.items()}, is_regression,
            models):
        if "/ MLP" not in line:
            text += [line, ""]
    if notes:
        text += ["Splits and notes:", ""] + [f"* {n}" for n in notes] + [""]
    return "\n".join(text)


# --------------------------------------------------------------------- main
def _arguments(argv):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.panel",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-home", default=None,
                        help=f"folder of the real data sets (else ${DATA_ENV_VAR})")
    parser.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    parser.add_argument("--models", nargs="+", choices=MODELS, default=None)
    parser.add_argument("--seeds", nargs="+", type=int, default=None,
                        help="run seeds (default 0 1 2; --quick: 0)")
    parser.add_argument("--ggn-params", default="{}",
                        help="JSON object of GGN-SCORE parameters overriding the "
                             "defaults, e.g. '{\"damping\": 10}'")
    parser.add_argument("--quick", action="store_true",
                        help=f"first seed, at most {QUICK_ROWS} train/test rows, "
                             "no plot")
    parser.add_argument("--max-train", type=int, default=None,
                        help="random subset of at most this many training rows")
    parser.add_argument("--max-test", type=int, default=None,
                        help="random subset of at most this many test rows")
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--label", default=None,
                        help="output name panel_<label> (default full / quick)")
    _peers.add_arguments(parser)
    args = parser.parse_args(argv)
    args.ggn_params = json.loads(args.ggn_params)
    if not isinstance(args.ggn_params, dict):
        parser.error("--ggn-params must be a JSON object")
    args.python = _peers.realmlp_python(args.realmlp_python)
    args.models = _peers.resolve_models(args.models or DEFAULT_MODELS,
                                        args.models is not None, args.python)
    return args


def _fit(kind, task, seed, data, args, peers):
    """One model's fit of a split: RealMLP-TD through the worker, the others
    here; a peer's fit reused from ``--peer-results`` when it has it."""
    reuse, realmlp = peers
    if kind == "realmlp":
        categorical = ENCODED_TASKS[task][1] if task in ENCODED_TASKS else ()
        fit = partial(_peers.realmlp_fit, realmlp, is_regression(task), seed,
                      data, categorical)
    else:
        fit = partial(fit_and_score, kind, task, seed, data, args.ggn_params)
    return _peers.fit_peer(kind, fit, reuse, task, seed,
                           _peers.split_hash(data[2], data[3]))


def run_task(task, args, rows, peers, out):
    """``{seed: {model: fit}}`` of one task (empty when its data are
    absent); notes, training rows, skips and curves go to ``out``."""
    seeds, max_train, max_test, home, plot = rows
    runs = {}
    for seed in seeds:
        try:
            X_tr, y_tr, X_te, y_te, note = load_task(task, seed, home)
        except Skip as exc:
            print(f"skipped {exc}", flush=True)
            out["skipped"].append(str(exc))
            break
        X_tr, y_tr = _subsample(X_tr, y_tr, max_train, seed)
        X_te, y_te = _subsample(X_te, y_te, max_test, seed + 1)
        data = (X_tr, y_tr, X_te, y_te)
        out["n_train"][task] = len(y_tr)
        if seed == seeds[0]:
            out["notes"].append(f"{task}: {note}; {len(y_tr)} train / "
                                f"{len(y_te)} test rows")
        runs[seed] = {}
        for kind in args.models:
            res = runs[seed][kind] = _fit(kind, task, seed, data, args, peers)
            print(f"{task:14s} seed {seed} {kind}: score "
                  f"{res['score']:.4f}, fit {res['time']:.2f} s, "
                  f"iters {res['n_iter']}"
                  + (" (reused)" if res.get("reused") else "")
                  + (" DIVERGED" if res["diverged"] else "")
                  + (" NO-LEARNING" if res["no_learning"] else ""), flush=True)
        if "ggn" in runs[seed] and "mlp" in runs[seed]:
            print(f"{task:14s} seed {seed} time ratio ggn/mlp "
                  f"{runs[seed]['ggn']['time'] / runs[seed]['mlp']['time']:.2f}",
                  flush=True)
        if plot and task in PLOT_TASKS and seed == seeds[0]:
            out["curves"][task] = curves(task, seed, data, args.ggn_params)
    return runs


def main(argv=None):
    args = _arguments(argv)
    ggn_params, models = args.ggn_params, args.models
    seeds = args.seeds or ([0] if args.quick else [0, 1, 2])
    max_train = args.max_train or (QUICK_ROWS if args.quick else None)
    max_test = args.max_test or (QUICK_ROWS if args.quick else None)
    label = args.label or ("quick" if args.quick else "full")
    plot = not (args.quick or args.no_plot) and "ggn" in models and "mlp" in models
    reuse = (_peers.Reuse(args.peer_results, "panel", args.reuse)
             if args.peer_results else None)
    rows = (seeds, max_train, max_test, _data_home(args), plot)

    from threadpoolctl import threadpool_limits

    results = {}
    out = {"notes": [], "n_train": {}, "curves": {}, "skipped": []}
    with threadpool_limits(limits=1), LoadMonitor() as monitor:
        stamp = machine_stamp()
        print(f"panel on {stamp['CPU']}; BLAS {stamp['BLAS']}; "
              f"ggn params {ggn_params}; seeds {seeds}", flush=True)
        warm_up(ggn_params)
        with _peers.worker(models, args.python) as realmlp:
            for task in args.tasks:
                runs = run_task(task, args, rows, (reuse, realmlp), out)
                if runs:
                    results[task] = runs
        versions = getattr(realmlp, "versions", None) or getattr(
            reuse, "versions", None)
    per_task, geo = summarize(results, models)
    notes = out["notes"] + [f"skipped {s}" for s in out["skipped"]]
    body = markdown_tables(per_task, geo, models, notes, out["n_train"])
    all_curves = out["curves"]
    figure = plot_curves(all_curves, label, stamp) if all_curves else None
    if all_curves:
        body += "\n\n" + _time_to_accuracy(all_curves)
    _write(label, (seeds, ggn_params, models, versions),
           (monitor, stamp, reuse), body, figure,
           {"summary": per_task, "geometric_mean_time_ratio": geo,
            "runs": results, "curves": all_curves, "notes": notes}, args.json)
    print(body)
    return 0


def _time_to_accuracy(all_curves):
    rows = [(task,) + time_to_mlp_accuracy(cur) for task, cur in all_curves.items()]
    return "\n".join([
        "Time to the MLP's accuracy (first seed, from the curves: "
        "GGN-SCORE's training time until its test accuracy first reaches "
        "the MLP's final one, against the MLP's whole fit):", "",
        md_table(["task", "MLP final accuracy", "MLP time [s]",
                  "GGN-SCORE time to it [s]", "ratio"], rows)])


def _write(label, setup, context, body, figure, raw, json_path):
    seeds, ggn_params, models, versions = setup
    monitor, stamp, reuse = context
    realmlp = ""
    if "realmlp" in models:
        realmlp = (" RealMLP-TD: pytabkit's `RealMLP_TD_Classifier` / "
                   "`RealMLP_TD_Regressor` with its tuned defaults on the raw "
                   "columns (its own robust scaling and smooth clipping; "
                   "onehot_regression_ohe's codes named categorical), y as it "
                   "is, CPU, one torch thread, in a separate Python; its fit "
                   "time measured inside that process after an untimed warm-up "
                   f"fit; versions {versions or 'of the reused run'}.")
    parts = ["# Panel: GGN-SCORE defaults vs scikit-learn's MLP", "",
             f"Seeds {seeds}; scores are means over seeds (the ggn−mlp gap a "
             "median), times medians; every fit with one BLAS "
             "thread, each model but RealMLP-TD in "
             "make_pipeline(StandardScaler(), model) "
             "(onehot_regression_ohe: a ColumnTransformer with StandardScaler "
             "on its 9 numeric columns and OneHotEncoder on its 5 categorical "
             "ones, sparse output; dense for HistGradientBoosting) "
             "(regressors also standardize y)." + realmlp + " GGN-SCORE "
             f"parameters: `{json.dumps(ggn_params)}` over the defaults. Warm "
             "fits: every timed fit follows untimed warm-up fits in its "
             "process.", "", monitor.markdown(), ""]
    if reuse is not None:
        parts += [reuse.note(), ""]
    parts += [body]
    if figure is not None:
        parts += [f"![{figure.stem}]({figure.name})", ""]
    parts += ["## Machine", "", stamp_markdown(stamp), ""]
    md = result_path("panel", label, ".md")
    md.write_text("\n".join(parts))
    payload = {"benchmark": "panel", "label": label, "seeds": seeds,
               "ggn_params": ggn_params, "machine": stamp,
               "load": monitor.summary(), "realmlp": versions, **raw}
    with open(json_path or result_path("panel", label, ".json"), "w") as fh:
        json.dump(_jsonable(payload), fh, indent=1, allow_nan=True)
    print(f"wrote {md.name}")


if __name__ == "__main__":
    sys.exit(main())
