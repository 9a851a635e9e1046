"""The paper at full scale: every figure and table of Adeoye, Petersen and
Bemporad, *Regularized Gauss-Newton for Optimizing Overparameterized Neural
Networks* (arXiv:2404.14875), run as a list of independent, resumable runs.

Usage (from the repository root; one BLAS thread is what the results use)::

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.paper --full --data-home DATA
    python -m benchmarks.paper --full --only mnist_mu table2 --max-hours 2
    python -m benchmarks.paper --full --plan     # the runs, done or pending
    python -m benchmarks.paper --full --report   # tables and figures only

Two processes share the pending runs: each writes its own ``--out`` (a copy
of the results file), one with ``--reverse`` (from the last run), and
``--merge`` adds their runs to the results file::

    python -m benchmarks.paper --full --out a.jsonl &
    python -m benchmarks.paper --full --out b.jsonl --reverse &
    python -m benchmarks.paper --full --merge a.jsonl b.jsonl

Every finished run is appended as one JSON line to
``results/paper_<mode>.jsonl``; a new invocation skips the runs already there,
so an interrupted run resumes where it stopped. ``--report`` (also run at the
end of every invocation) computes ``paper_<mode>.json`` (the tables, the
wall times, the pending runs and their projected cost), ``paper_<mode>.md``
and the figures ``paper_<mode>.png`` and ``paper_<mode>.curves.png`` from the
JSON lines alone; with ``--full`` (and the default ``--out``) it also writes
the tables of ``docs/reproducing.rst`` as reStructuredText fragments in
``docs/_paper/``, which the page includes (``--rst-dir`` writes them
elsewhere). ``--quick`` runs every experiment on tiny sizes (seconds; a
smoke test, its numbers mean nothing).

What ``--full`` runs. The published setting of each experiment is
``sklearn_ggn.paper_params(convention, experiment=...)``; each run's
``variant`` names what it changes, and ``DEVIATIONS`` below says why.

* ``fig1_mu`` (Figure 1, left): teacher-student data
  (``make_teacher_student``: d = 5, m = 500 / 1000 test points), a 500-unit
  SiLU student, τ = 1e-4, 41 values of μ log-spaced in [1e-3, 10] (the
  authors' code: ``10.0 .^ (-3:0.1:1)``), 10 runs per value (teacher, data and
  initialization redrawn from the run's seed), 1600 full-batch iterations.
  Variant ``paper`` (the paper's step ``damping="tau"``) over the whole grid;
  ``authors`` (the authors' curvature scale ``damping=1.0``) on every fifth
  value, runs 0-1.
* ``fig1_tau`` (Figure 1, right): as above with τ in 41 values log-spaced in
  [1e-8, 1] and μ = √n (the authors' code's μ = 1/κ(n)); variants ``paper``
  (whole grid), ``authors`` and ``mu_literal`` (μ = 1/√n ≈ 0.045, the caption
  read literally; both every fifth value, runs 0-1).
* ``fig2`` (Figure 2): d = 20, m = 1000 / 2000, GD (learning rate 1,
  unregularized, 10000 iterations) against GGN-SCORE (4000 iterations,
  τ = 1e-4, μ = √n): variants ``paper``, ``authors``, ``mu_literal``; loss
  curves against iteration and time.
* ``mnist_mu`` / ``mnist_tau`` (Figures 3-4): MNIST 60000 / 10000, pixels
  / 255, n = 512, ReLU, squared loss on one-hot targets, batches of 16, one
  epoch (3750 steps); μ in 10^-3..10^3 at τ = 1e-4 and τ in 10^-6..10^0 at
  μ = √n. Variants ``authors`` and ``paper`` over both grids;
  ``mu_literal`` (μ = 1/√n) over the τ grid's ends and middle. Reported:
  test loss, number of zeros, train and test accuracy, T-I with and without
  the a = 0 convention (and the authors' code's "incl. # zeros" column).
* ``mnist_ts_mu`` / ``mnist_ts_tau`` (appendix, teacher-student MNIST): a
  16-unit SiLU teacher without biases trained with the log-loss on a
  class-balanced 2610 of the first 3000 training images (the first 261 of
  each class) followed by the 10000 test images (12610 in all), a 1024-unit SiLU student regressed on the teacher's
  softmax outputs for one epoch of batches of 16, tested on the 10000 test
  images' labels (as the paper does, they are part of its training inputs);
  the grids of MNIST, variant ``authors`` over both and ``paper`` at the
  grids' ends and middle.
* ``table2`` (appendix: Table 2 and the UCI figure): pendigits, letter,
  avila, n = 128, ReLU, τ = 1e-4; GGN-SCORE 50 epochs against GD 2000 epochs
  (learning rate 1, unregularized) from the same initial weights. Variant
  ``table``: the table's batch sizes (8 / 64 / 64) and μ = c·√n, the authors'
  curvature scale, seeds 0-2; ``paper_step``: ``damping="tau"``;
  ``mu_literal``: μ = c/√n; ``code_batch``: the authors' code's batch
  sizes (64 / 8 / 64); ``raw_features``: pendigits on its raw 0-100
  features; ``mu_large``: pendigits with letter's and avila's μ = 10·√n. Reported per run: T-I (sign agreement of the hidden
  pre-activations on the training inputs, the authors' code's measure),
  T-I counting a final a = 0 as unchanged (the paper's appendix), the
  authors' code's "incl." column, the same sign test on the entries of U,
  test accuracy and ½·MSE per epoch.

Runs are ordered for evidence per hour: tier 0 gives every figure its ends
and middle and Table 2 its pendigits and avila cells, tier 1 the ambiguity
runs, pendigits' and avila's other seeds, the teacher-student MNIST grids'
ends and middle, letter and Figure 2, tier 2 the MNIST grids, tier 3 the coarse synthetic grids and letter's other seeds,
tier 4 the rest of the 41 × 10 synthetic grids. ``--max-hours`` stops starting runs after that long, so a
job ends before a deadline; the next invocation continues with the next run.
"""

import argparse
import json
import math
import os
import sys
import textwrap
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ._common import (
    REPO_DIR,
    RESULTS_DIR,
    loadavg,
    machine_stamp,
    md_table,
    stamp_markdown,
)

# Where the runs differ from the published setting, and why.
DEVIATIONS = {
    "tol": "tol=0 and n_iter_no_change=max_iter: every run takes its whole "
           "budget (the authors' code stops early only if the training risk "
           "falls to 1e-8)",
    "divergence": "the package ends a fit whose objective grows 1e4-fold "
                  "(a diverging run records fewer iterations or epochs than "
                  "its budget; the authors' code runs on)",
    "init": "the package's initialization (U ~ N(0, 1/d), V ~ N(0, 1)), not "
            "Flux's",
    "pendigits": "pendigits features divided by 100 (to [0, 1]): on the raw "
                 "0-100 values GD with learning rate 1 diverges",
    "avila_dim": "avila has 10 features (the table says 11)",
    "mnist_ts_teacher": "the teacher is GGNScoreClassifier(n_hidden=16, "
                        "activation='silu', fit_intercept=False, "
                        "compute_dtype='float64') with its default log-loss "
                        "fit (100 epochs at most), not Flux's Adam for 250 "
                        "epochs",
    "grid_spacing": "'evenly spaced' grids read as log-spaced, as the authors' "
                    "code does",
}

PAPER = {  # the paper's reported numbers, for the report's side-by-side
    "table2": {  # T-I GD, T-I GGN, incl. a=0 GD, incl. a=0 GGN (%)
        "pendigits": (50.066, 52.7331, 50.1041, 52.7331),
        "letter": (55.9237, 55.2016, 55.925, 55.2112),
        "avila": (73.318, 71.4815, 73.3189, 71.4833),
    },
    "wall_hours": {"fig1": 21.03, "mnist": 23.08, "mnist_ts": 8.65},
}

UCI = ("pendigits", "letter", "avila")
CODE_BATCH = {"pendigits": 64, "letter": 8, "avila": 64}

SCALES = {
    "full": dict(syn_m=(500, 1000), syn_d=5, fig2_m=(1000, 2000), fig2_d=20,
                 syn_n=None, syn_iter=None, fig2_iter=None, grid=41, runs=10,
                 mnist_rows=None, mnist_n=None, mnist_grid=7, ts_n=None,
                 teacher_rows=3000, uci_subset=None, uci_epochs=None,
                 seeds=3),
    "quick": dict(syn_m=(40, 60), syn_d=5, fig2_m=(40, 60), fig2_d=5,
                  syn_n=30, syn_iter=4, fig2_iter=(3, 6), grid=3, runs=2,
                  mnist_rows=(160, 100), mnist_n=24, mnist_grid=2, ts_n=24,
                  teacher_rows=300, uci_subset=(200, 100), uci_epochs=(1, 2),
                  seeds=1),
}


# --------------------------------------------------------------------- plan
def _level(i, size):
    """Coarse-to-fine level of grid index i: ends and middle 0, then finer."""
    last = size - 1
    for level, parts in enumerate((2, 4, 8)):
        if last % parts == 0 and i % (last // parts) == 0:
            return level
    return 3


def _grid(low, high, size):
    return [float(v) for v in np.logspace(low, high, size)]


def plan(mode):
    """Every run of ``mode`` as a dict with ``id``, ``exp``, ``kind``, ``tier``
    and its parameters, ordered by tier (stable within a tier)."""
    s = SCALES[mode]
    runs = []

    def add(exp, kind, tier, variant, **params):
        key = ",".join(f"{k}={_key(v)}" for k, v in sorted(params.items()))
        runs.append({"id": f"{exp}/{variant}/{key}", "exp": exp, "kind": kind,
                     "tier": tier, "variant": variant, **params})

    # Table 2 / UCI: ggn and gd per dataset.
    for name in UCI:
        first = 0 if name != "letter" else 1
        for seed in range(s["seeds"]):
            tier = first if seed == 0 else first + 1 if name != "letter" else 3
            for method in ("ggn", "gd"):
                add("table2", "uci", tier, "table", data=name, method=method,
                    seed=seed)
        add("table2", "uci", first + 1, "paper_step", data=name, method="ggn",
            seed=0)
        add("table2", "uci", 1 if name == "pendigits" else 2, "mu_literal",
            data=name, method="ggn", seed=0)
        for method in ("ggn", "gd"):
            add("table2", "uci", 1 if name == "pendigits" else 2, "code_batch",
                data=name, method=method, seed=0)
    for method in ("ggn", "gd"):
        add("table2", "uci", 1, "raw_features", data="pendigits", method=method,
            seed=0)
    add("table2", "uci", 1, "mu_large", data="pendigits", method="ggn", seed=0)

    # MNIST and teacher-student MNIST.
    g = s["mnist_grid"]
    grids = {"mu": _grid(-3, 3, g), "tau": _grid(-6, 0, g)}
    for exp_prefix in ("mnist", "mnist_ts"):
        for sweep, values in grids.items():
            for i, value in enumerate(values):
                # the grid's ends and middle, and the default point τ = 1e-4
                coarse = _level(i, len(values)) == 0 or (
                    sweep == "tau" and math.isclose(value, 1e-4))
                for variant in ("authors", "paper"):
                    if exp_prefix == "mnist_ts" and variant == "paper" and not coarse:
                        continue
                    tier = {("mnist", "authors"): 0 if coarse else 2,
                            ("mnist", "paper"): 1 if coarse else 2,
                            ("mnist_ts", "authors"): 1 if coarse else 3,
                            ("mnist_ts", "paper"): 3}[exp_prefix, variant]
                    add(f"{exp_prefix}_{sweep}", exp_prefix, tier, variant,
                        **{sweep: value})
                if sweep == "tau" and exp_prefix == "mnist" and coarse:
                    add("mnist_tau", "mnist", 1, "mu_literal", tau=value)

    # Figure 2.
    add("fig2", "fig2", 1, "gd", method="gd")
    for variant in ("paper", "authors", "mu_literal"):
        add("fig2", "fig2", 1 if variant == "paper" else 2, variant,
            method="ggn")

    # Figure 1: 41 values x 10 runs, coarse to fine.
    for exp, low, high, variants in (("fig1_mu", -3, 1, ("paper", "authors")),
                                     ("fig1_tau", -8, 0, ("paper", "authors",
                                                          "mu_literal"))):
        values = _grid(low, high, s["grid"])
        for run in range(s["runs"]):
            for i, value in enumerate(values):
                level = _level(i, len(values))
                for variant in variants:
                    if variant != "paper" and (level > 2 or run > 1):
                        continue
                    if level == 0 and run == 0:
                        tier = 0 if variant == "paper" else 1
                    elif level <= 2 and run <= 1:
                        tier = 3
                    else:
                        tier = 4
                    add(exp, "synthetic", tier, variant, run=run,
                        **{exp[5:]: value})
    # Within a tier the cheap runs first: UCI sets but letter, synthetic
    # sweeps, MNIST, the GD runs of letter and Figure 2, then their
    # GGN-SCORE runs (the longest).
    def rank(run):
        if run.get("data") == "letter" or run["kind"] == "fig2":
            return 3 if run["method"] == "gd" else 4
        return {"uci": 0, "synthetic": 1, "mnist": 2, "mnist_ts": 2}[run["kind"]]

    return sorted(runs, key=lambda r: (r["tier"], rank(r)))


def _key(value):
    return f"{value:.6g}" if isinstance(value, float) else str(value)


# ------------------------------------------------------------------ helpers
def _cpu_seconds():
    times = os.times()
    return times.user + times.system


def _half_mse(pred, target):
    pred = np.asarray(pred).reshape(len(target), -1)
    return 0.5 * float(np.mean((pred - np.asarray(target).reshape(len(target), -1))
                               ** 2))


def _onehot(y, classes):
    return (np.asarray(y)[:, None] == np.asarray(classes)[None, :]).astype(float)


def _params(convention, experiment, **overrides):
    from sklearn_ggn import paper_params

    solver = overrides.pop("solver", "ggn")
    params = paper_params(convention, experiment=experiment, solver=solver)
    params.update(overrides)
    return params


def _mu(variant, n_hidden):
    """μ of the figures with c = 1: the literal "1/√n", else c/κ(n) = √n."""
    return 1.0 / math.sqrt(n_hidden) if variant == "mu_literal" else math.sqrt(n_hidden)


def _stability(est, X):
    """T-I (%), T-I with final a = 0 unchanged, the authors' "incl." column."""
    from sklearn_ggn.diagnostics import cardcal, time_invariance

    ti = time_invariance(est, X)
    ti_zero = time_invariance(est, X, zero_as_unchanged=True)
    # The authors' code adds the growth of the zeros of U (by cardcal, out of
    # n·d entries) as a percentage of the m·n pre-activations.
    U0, U = est.initial_weights_["hidden_weights"], est.hidden_weights_
    zeros0 = U0.size - cardcal(U0.ravel())
    zeros = U.size - cardcal(U.ravel())
    extra = 100.0 * max(zeros - zeros0, 0) / (X.shape[0] * U.shape[0])
    # The paper's text gives a_l the shape n × n0 of U: the same sign test
    # on the entries of U itself, for comparison.
    ti_weights = 100.0 * float(np.mean(np.sign(U0) == np.sign(U)))
    return {"ti": ti, "ti_zero": ti_zero, "ti_authors": ti + extra,
            "ti_weights": ti_weights}


def _thin(values, points=120):
    """About ``points`` log-spaced entries of a curve (first and last kept)."""
    values = list(values)
    if len(values) <= points:
        return list(range(len(values))), values
    idx = sorted(set(np.unique(np.geomspace(1, len(values), points).astype(int)
                               - 1).tolist()) | {0, len(values) - 1})
    return idx, [values[i] for i in idx]


# --------------------------------------------------------------------- data
class _Data:
    """Data loaded once per process (the runs of one invocation share it)."""

    def __init__(self, mode):
        self.mode, self.scale, self._memo = mode, SCALES[mode], {}

    def get(self, name):
        if name not in self._memo:
            self._memo[name] = getattr(self, "_" + name)()
        return self._memo[name]

    def _mnist(self):
        from sklearn_ggn.datasets import load_mnist

        X, y, X_test, y_test = load_mnist(None, download_if_missing=False)
        rows = self.scale["mnist_rows"]
        if rows is not None:
            X, y, X_test, y_test = X[:rows[0]], y[:rows[0]], X_test[:rows[1]], \
                y_test[:rows[1]]
        return X / 255.0, y.astype(int), X_test / 255.0, y_test.astype(int)

    def _mnist_ts(self):
        from sklearn_ggn import GGNScoreClassifier

        X, y, X_test, y_test = self.get("mnist")
        first = self.scale["teacher_rows"]
        per_class = np.bincount(y[:first], minlength=10).min()
        balanced = np.concatenate([np.flatnonzero(y[:first] == k)[:per_class]
                                   for k in range(10)])
        # the balanced rows first, then the test images, as the authors' code
        inputs = np.vstack([X[np.sort(balanced)], X_test])
        labels = np.concatenate([y[np.sort(balanced)], y_test])
        start = time.perf_counter()
        # (float64 steps, whatever the package's default: the teacher, and
        # with it every run's targets, must not change with the defaults)
        teacher = GGNScoreClassifier(n_hidden=16, activation="silu",
                                     fit_intercept=False, random_state=0,
                                     compute_dtype="float64")
        teacher.fit(inputs, labels)
        targets = teacher.predict_proba(inputs)
        return {"X": inputs, "targets": targets, "X_test": X_test,
                "y_test": y_test, "teacher_rows": len(inputs),
                "teacher_train_accuracy": float(teacher.score(inputs, labels)),
                "teacher_fit_s": time.perf_counter() - start}

    def uci(self, name):
        key = "uci_" + name
        if key not in self._memo:
            from .uci import _load

            self._memo[key] = _load(name, self.scale["uci_subset"])
        return self._memo[key]


# ---------------------------------------------------------------- executors
def _run_synthetic(run, data):
    from sklearn_ggn import GGNScoreRegressor
    from sklearn_ggn.datasets import make_teacher_student
    from sklearn_ggn.diagnostics import n_zeros

    s = data.scale
    X, y, X_test, y_test = make_teacher_student(
        n_train=s["syn_m"][0], n_test=s["syn_m"][1], n_features=s["syn_d"],
        random_state=run["run"])
    sweep = "mu" if run["exp"] == "fig1_mu" else "tau"
    params = _params("authors" if run["variant"] == "authors" else "paper",
                     "synthetic", random_state=run["run"])
    if s["syn_n"]:
        params.update(n_hidden=s["syn_n"], max_iter=s["syn_iter"])
    params["mu"] = _mu(run["variant"], params["n_hidden"])
    params[sweep] = run[sweep]
    est = GGNScoreRegressor(**params)
    start = time.perf_counter()
    est.fit(X, y)
    return {"fit_s": time.perf_counter() - start, "mu_used": est.mu,
            "tau_used": est.tau, "n_iter": int(est.n_iter_),
            "train_loss": _half_mse(est.predict(X), y),
            "test_loss": _half_mse(est.predict(X_test), y_test),
            "zeros": n_zeros(est), "p": int(est.hidden_weights_.size
                                             + est.output_weights_.size)}


def _run_fig2(run, data):
    from sklearn_ggn import GGNScoreRegressor
    from sklearn_ggn.datasets import make_teacher_student

    s = data.scale
    X, y, X_test, y_test = make_teacher_student(
        n_train=s["fig2_m"][0], n_test=s["fig2_m"][1], n_features=s["fig2_d"],
        random_state=0)
    variant = run["variant"]
    if variant == "gd":
        params = _params("paper", "synthetic_gd", solver="gd", random_state=0)
    else:
        params = _params("authors" if variant == "authors" else "paper",
                         "synthetic_gd", random_state=0)
    if s["fig2_iter"]:
        params["max_iter"] = s["fig2_iter"][variant == "gd"]
        params["n_hidden"] = s["syn_n"]
    params["mu"] = _mu(variant, params["n_hidden"])
    est = GGNScoreRegressor(**params)
    start = time.perf_counter()
    est.fit(X, y, X_val=X_test, y_val=y_test)
    wall = time.perf_counter() - start
    h = est.history_
    idx, test = _thin(h["validation_risk"])
    return {"fit_s": wall, "mu_used": est.mu, "n_iter": int(est.n_iter_),
            "train_loss": _half_mse(est.predict(X), y),
            "test_loss": _half_mse(est.predict(X_test), y_test),
            "curve": {"iteration": [i + 1 for i in idx], "test_loss": test,
                      "train_risk": [float(h["risk"][i]) for i in idx],
                      "time": [float(h["time"][i]) for i in idx]}}


def _mnist_params(run, experiment, n_override):
    sweep = "mu" if run["exp"].endswith("_mu") else "tau"
    params = _params("paper" if run["variant"] == "paper" else "authors",
                     experiment, random_state=0, store_initial_weights=True)
    params["n_hidden"] = n_override or params["n_hidden"]
    params["mu"] = _mu(run["variant"], params["n_hidden"])
    params[sweep] = run[sweep]
    return params


def _run_mnist(run, data):
    from sklearn_ggn import GGNScoreClassifier
    from sklearn_ggn.diagnostics import n_zeros

    X, y, X_test, y_test = data.get("mnist")
    est = GGNScoreClassifier(**_mnist_params(run, "mnist", data.scale["mnist_n"]))
    start = time.perf_counter()
    est.fit(X, y)
    wall = time.perf_counter() - start
    return {"fit_s": wall, "mu_used": est.mu, "tau_used": est.tau,
            "n_train": len(X), "steps": -(-len(X) // est.batch_size),
            "test_loss": _half_mse(est.decision_function(X_test),
                                   _onehot(y_test, est.classes_)),
            "train_accuracy": 100 * float(est.score(X, y)),
            "test_accuracy": 100 * float(est.score(X_test, y_test)),
            "zeros": n_zeros(est), **_stability(est, X)}


def _run_mnist_ts(run, data):
    from sklearn_ggn import GGNScoreRegressor
    from sklearn_ggn.diagnostics import n_zeros

    ts = data.get("mnist_ts")
    est = GGNScoreRegressor(**_mnist_params(run, "mnist_teacher_student",
                                            data.scale["ts_n"]))
    start = time.perf_counter()
    est.fit(ts["X"], ts["targets"])
    wall = time.perf_counter() - start
    pred_test = est.predict(ts["X_test"])
    train_pred = est.predict(ts["X"]).argmax(axis=1)
    return {"fit_s": wall, "mu_used": est.mu, "tau_used": est.tau,
            "n_train": len(ts["X"]),
            "test_loss": _half_mse(pred_test, _onehot(ts["y_test"], np.arange(10))),
            "train_accuracy": 100 * float(np.mean(
                train_pred == ts["targets"].argmax(axis=1))),
            "test_accuracy": 100 * float(np.mean(pred_test.argmax(axis=1)
                                                 == ts["y_test"])),
            "zeros": n_zeros(est), **_stability(est, ts["X"]),
            "teacher": {k: ts[k] for k in ("teacher_rows",
                                           "teacher_train_accuracy",
                                           "teacher_fit_s")}}


def _run_uci(run, data):
    from sklearn_ggn import GGNScoreClassifier
    from sklearn_ggn.diagnostics import n_zeros

    X, y, X_test, y_test, _ = data.uci(run["data"])
    name, variant = run["data"], run["variant"]
    if variant == "raw_features":  # pendigits' integer features as published
        X, X_test = np.rint(X * 100.0), np.rint(X_test * 100.0)
    overrides = {"random_state": run["seed"], "store_initial_weights": True,
                 "solver": run["method"]}
    if variant == "code_batch":
        overrides["batch_size"] = CODE_BATCH[name]
    if variant == "mu_literal":
        c = {"pendigits": 0.001}.get(name, 10.0)
        overrides["mu"] = c / math.sqrt(128)
    if variant == "mu_large":  # letter's and avila's μ = 10·√n
        overrides["mu"] = 10.0 * math.sqrt(128)
    params = _params("paper" if variant == "paper_step" else "authors", name,
                     **overrides)
    if data.scale["uci_epochs"]:
        params["max_iter"] = data.scale["uci_epochs"][run["method"] == "gd"]
    est = GGNScoreClassifier(**params)
    start = time.perf_counter()
    est.fit(X, y, X_val=X_test, y_val=y_test)
    wall = time.perf_counter() - start
    h = est.history_
    return {"fit_s": wall, "mu_used": est.mu, "batch_size": est.batch_size,
            "epochs": int(est.n_iter_), "n_train": len(X),
            "test_accuracy": 100 * float(est.score(X_test, y_test)),
            "train_accuracy": 100 * float(est.score(X, y)),
            "test_loss": _half_mse(est.decision_function(X_test),
                                   _onehot(y_test, est.classes_)),
            "zeros": n_zeros(est), **_stability(est, X),
            "curve": {"test_accuracy": [100 * float(v)
                                        for v in h["validation_score"]],
                      "test_loss": [float(v) for v in h["validation_risk"]],
                      "time": [float(v) for v in h["time"]]}}


EXECUTORS = {"synthetic": _run_synthetic, "fig2": _run_fig2,
             "mnist": _run_mnist, "mnist_ts": _run_mnist_ts, "uci": _run_uci}


# ------------------------------------------------------------------- runner
def results_path(mode, out=None):
    return Path(out) if out else RESULTS_DIR / f"paper_{mode}.jsonl"


def load_lines(path):
    if not Path(path).exists():
        return []
    lines = []
    for text in Path(path).read_text().splitlines():
        if text.strip():
            try:
                lines.append(json.loads(text))
            except json.JSONDecodeError:  # a line cut by a killed job
                continue
    return lines


def execute(mode, path, only=None, max_hours=None, max_runs=None, max_tier=None,
            log=print, reverse=False):
    """Run the pending runs of ``mode`` (optionally only the experiments in
    ``only``, up to ``max_tier``; from the last with ``reverse``),
    appending each as a JSON line to ``path``; return the number of runs
    done in this call."""
    import sklearn_ggn

    from ._common import _commit, _cpu_model

    done = {line["id"] for line in load_lines(path)}
    todo = [r for r in plan(mode) if r["id"] not in done
            and (not only or r["exp"] in only)
            and (max_tier is None or r["tier"] <= max_tier)]
    if reverse:  # (a second process beside one taking them from the first)
        todo.reverse()
    data, started, count = _Data(mode), time.perf_counter(), 0
    log(f"{len(done)} runs done, {len(todo)} to run")
    for run in todo:
        if max_runs is not None and count >= max_runs:
            break
        if max_hours is not None and time.perf_counter() - started > 3600 * max_hours:
            log("time budget reached")
            break
        t0, cpu0, load0 = time.perf_counter(), _cpu_seconds(), loadavg()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = EXECUTORS[run["kind"]](run, data)
            except OSError as error:  # data files absent: leave it pending
                log(f"skip {run['id']}: {error}")
                continue
        # the fits' own warnings (divergence, max_iter) travel with the run
        result["warnings"] = sorted({str(w.message)[:200] for w in caught
                                     if issubclass(w.category, UserWarning)})
        # cpu_s (this process's CPU time) next to wall_s shows how much of
        # the wall time other processes on a shared machine took.
        line = {**run, **result, "wall_s": time.perf_counter() - t0,
                "cpu_s": _cpu_seconds() - cpu0, "load": [load0, loadavg()],
                "finished": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
                "cpu": _cpu_model()[0], "sklearn_ggn": sklearn_ggn.__version__,
                "commit": _commit(),
                "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "unset")}
        with open(path, "a") as fh:
            fh.write(json.dumps(line) + "\n")
        count += 1
        log(f"[{count}] {run['id']} (tier {run['tier']}): "
            f"{line['wall_s']:.1f} s")
    return count


def merge(path, others, log=print):
    """Append to ``path`` the runs of the JSON-lines files ``others`` (the
    ``--out`` of processes that ran in parallel) whose id it lacks, the
    first of repeated ids; return how many."""
    done = {line["id"] for line in load_lines(path)}
    added = []
    for other in others:
        for line in load_lines(other):
            if line["id"] not in done:
                done.add(line["id"])
                added.append(line)
    with open(path, "a") as fh:
        for line in added:
            fh.write(json.dumps(line) + "\n")
    log(f"merged {len(added)} runs into {path}")
    return len(added)


# ------------------------------------------------------------------- report
def _mean(rows, field):
    values = [r[field] for r in rows if r.get(field) is not None]
    return float(np.mean(values)) if values else None


def _sweep_table(lines, exp, fields):
    """Per variant: sorted values with the runs' means of ``fields``."""
    sweep = "mu" if exp.endswith("_mu") else "tau"
    out = {}
    for line in lines:
        if line["exp"] != exp:
            continue
        out.setdefault(line["variant"], {}).setdefault(line[sweep], []).append(line)
    return {variant: [{sweep: value, "runs": len(rows),
                       **{f: _mean(rows, f) for f in fields}}
                      for value, rows in sorted(by_value.items())]
            for variant, by_value in out.items()}


def _ends_and_best(rows):
    """The first, best (lowest mean test loss) and last row of a sweep."""
    return {"first": rows[0], "best": min(rows, key=lambda r: r["test_loss"]),
            "last": rows[-1]}


def _projected(pending, lines):
    """Projected seconds for the pending runs from the mean wall time of done
    runs of the same experiment and variant (else of the same kind)."""
    by_group, by_kind = {}, {}
    for line in lines:
        by_group.setdefault((line["exp"], line["variant"]), []).append(line["wall_s"])
        by_kind.setdefault(line["kind"], []).append(line["wall_s"])
    total, unknown = 0.0, 0
    for run in pending:
        walls = by_group.get((run["exp"], run["variant"])) or by_kind.get(run["kind"])
        if walls:
            total += float(np.mean(walls))
        else:
            unknown += 1
    return total, unknown


def report(mode, path, stamp=None, rst_dir=None):
    """Compute the tables from the JSON lines at ``path`` and write
    ``paper_<mode>.json``, ``.md`` and the figures next to it; with
    ``rst_dir``, also the reStructuredText tables of the documentation
    (``write_rst``). Return the summary."""
    lines = load_lines(path)
    done = {line["id"] for line in lines}
    pending = [r for r in plan(mode) if r["id"] not in done]
    remaining_s, unknown = _projected(pending, lines)
    sweep_fields = {"synthetic": ("train_loss", "test_loss", "zeros", "n_iter",
                                  "fit_s"),
                    "mnist": ("test_loss", "zeros", "train_accuracy",
                              "test_accuracy", "ti", "ti_zero", "ti_authors",
                              "ti_weights", "fit_s")}
    sweeps = {}
    for exp in ("fig1_mu", "fig1_tau", "mnist_mu", "mnist_tau", "mnist_ts_mu",
                "mnist_ts_tau"):
        kind = "synthetic" if exp.startswith("fig1") else "mnist"
        sweeps[exp] = _sweep_table(lines, exp, sweep_fields[kind])
    table2 = {}
    for line in lines:
        if line["exp"] == "table2":
            table2.setdefault(line["data"], {}).setdefault(
                line["variant"], {}).setdefault(line["method"], []).append(line)
    fig2 = {line["variant"]: line for line in lines if line["exp"] == "fig2"}
    walls, versions = {}, {}
    for line in lines:
        walls[line["exp"]] = walls.get(line["exp"], 0.0) + line["wall_s"]
        version = str(line.get("sklearn_ggn"))
        versions[version] = versions.get(version, 0) + 1
    loads = [v for line in lines for v in line.get("load", ())
             if v is not None and math.isfinite(v)]
    summary = {
        "mode": mode, "machine": stamp or {}, "runs_done": len(lines),
        "runs_pending": len(pending),
        "pending_by_experiment": _count(pending),
        "done_by_experiment": _count(lines),
        "wall_hours_done": sum(walls.values()) / 3600,
        "wall_hours_by_experiment": {k: v / 3600 for k, v in walls.items()},
        # CPU time of the runner's process beside the wall time: on a shared
        # machine the difference is what other processes took
        "cpu_hours_done": sum(line.get("cpu_s", 0.0) for line in lines) / 3600,
        "load_range": [min(loads), max(loads)] if loads else None,
        "runs_by_version": dict(sorted(versions.items(), key=_version_key)),
        "cpu_models": sorted({str(line.get("cpu")) for line in lines}),
        "projected_remaining_hours": remaining_s / 3600,
        "pending_without_estimate": unknown,
        "paper_wall_hours": PAPER["wall_hours"],
        "deviations": DEVIATIONS,
        "sweeps": sweeps,
        "sweep_ends_and_best": {exp: {variant: _ends_and_best(rows)
                                      for variant, rows in variants.items()}
                                for exp, variants in sweeps.items()},
        "table2": {name: {variant: {method: _table2_cell(rows)
                                    for method, rows in methods.items()}
                          for variant, methods in variants.items()}
                   for name, variants in table2.items()},
        "table2_paper": PAPER["table2"],
        "fig2": {variant: {k: line[k] for k in ("n_iter", "fit_s", "train_loss",
                                                "test_loss", "mu_used")}
                 for variant, line in fig2.items()},
        "blas_threads": sorted({str(line.get("blas_threads")) for line in lines}),
    }
    stem = path.with_suffix("")
    Path(f"{stem}.json").write_text(json.dumps(summary, indent=1))
    Path(f"{stem}.md").write_text(_markdown(summary, stem.name))
    _figures(summary, lines, stem)
    if rst_dir is not None:
        write_rst(summary, rst_dir)
    return summary


def _version_key(item):
    """Sort key of a (version, count) pair: 0.9.3 before 0.10.0."""
    return tuple(int(part) if part.isdigit() else -1
                 for part in item[0].split("."))


def _count(runs):
    out = {}
    for run in runs:
        out[run["exp"]] = out.get(run["exp"], 0) + 1
    return out


def _table2_cell(rows):
    fields = ("ti", "ti_zero", "ti_authors", "ti_weights", "test_accuracy",
              "test_loss",
              "zeros", "fit_s", "epochs", "batch_size", "mu_used")
    rows = sorted(rows, key=lambda r: r["seed"])
    cell = {"seeds": [r["seed"] for r in rows],
            "epochs_by_seed": [r["epochs"] for r in rows]}
    for f in fields:
        values = [r[f] for r in rows]
        cell[f] = float(np.mean(values))
        if len(values) > 1:
            cell[f + "_sd"] = float(np.std(values, ddof=1))
    return cell


def _markdown(summary, name):
    parts = [f"# The paper at full scale ({summary['mode']})", "",
             f"Generated by `python -m benchmarks.paper --{summary['mode']} "
             f"--report` from `{name}.jsonl` (one JSON line per run).", "",
             f"Runs done: {summary['runs_done']}, pending: "
             f"{summary['runs_pending']} (projected "
             f"{summary['projected_remaining_hours']:.1f} h more on this "
             f"machine; {summary['pending_without_estimate']} runs without an "
             f"estimate yet). Wall time of the done runs: "
             f"{summary['wall_hours_done']:.2f} h (the paper: ~21 h for "
             f"Figure 1, ~23 h for Figures 3-4, ~8.7 h for the teacher-student "
             f"MNIST figures, on 16 threads). BLAS threads: "
             f"{', '.join(summary['blas_threads'])}.", "",
             md_table(["experiment", "done", "pending", "wall (h)"],
                      [(exp, summary["done_by_experiment"].get(exp, 0),
                        summary["pending_by_experiment"].get(exp, 0),
                        summary["wall_hours_by_experiment"].get(exp, 0.0))
                       for exp in sorted(set(summary["done_by_experiment"])
                                         | set(summary["pending_by_experiment"]))]),
             ""]
    for exp, variants in summary["sweeps"].items():
        for variant, rows in sorted(variants.items()):
            if not rows:
                continue
            fields = [k for k in rows[0] if k not in ("runs",)]
            parts += [f"## {exp} ({variant})", "",
                      md_table(fields + ["runs"],
                               [[r[f] for f in fields] + [r["runs"]]
                                for r in rows]), ""]
    if summary["table2"]:
        parts += ["## Table 2 (T-I %, mean over seeds) and the UCI comparison",
                  "", "Paper: T-I GD / GGN-SCORE, incl. a = 0 GD / GGN-SCORE: "
                  + "; ".join(f"{k} {v}" for k, v in summary["table2_paper"].items()),
                  ""]
        rows = []
        for data, variants in sorted(summary["table2"].items()):
            for variant, methods in sorted(variants.items()):
                for method, c in sorted(methods.items()):
                    rows.append((data, variant, method, c["batch_size"],
                                 c["mu_used"], c["epochs"], len(c["seeds"]),
                                 c["ti"], c.get("ti_sd"), c["ti_zero"],
                                 c["ti_authors"], c["ti_weights"],
                                 c["test_accuracy"],
                                 c["test_loss"], c["fit_s"]))
        parts += [md_table(["data", "variant", "method", "batch", "μ", "epochs",
                            "seeds", "T-I", "sd", "T-I a=0", "T-I code incl.",
                            "T-I of U",
                            "test acc", "test ½MSE", "fit s"], rows), ""]
    if summary["fig2"]:
        parts += ["## Figure 2", "",
                  md_table(["variant", "iterations", "fit s", "train ½MSE",
                            "test ½MSE", "μ"],
                           [(v, c["n_iter"], c["fit_s"], c["train_loss"],
                             c["test_loss"], c["mu_used"])
                            for v, c in sorted(summary["fig2"].items())]), ""]
    parts += ["## Deviations from the published setting", ""]
    parts += [f"* `{k}`: {v}" for k, v in summary["deviations"].items()]
    parts += ["", f"![sweeps]({name}.png)", "", f"![curves]({name}.curves.png)",
              ""]
    if summary["machine"]:
        parts += ["## Machine", "", stamp_markdown(summary["machine"]), ""]
    return "\n".join(parts)


# ---------------------------------------------------- documentation tables
# docs/reproducing.rst shows these tables through ``.. include::`` of one
# reStructuredText fragment each, which ``--report`` rewrites from the JSON
# lines (``--full`` with the default ``--out``), so the page always shows the
# runs done. The folder is excluded from Sphinx's own sources (docs/conf.py).
DOCS_TABLES = REPO_DIR / "docs" / "_paper"
RST_TABLES = ("machine", "status", "fig1_mu", "fig1_tau", "fig2", "mnist_mu",
              "mnist_tau", "mnist_ts_mu", "mnist_ts_tau", "table2")
# The curvature convention the tables lead with, then the paper's step, then
# μ read literally (GD first where it is a row of its own).
VARIANT_ORDER = ("gd", "authors", "paper", "mu_literal")
_SWEEP_COLUMNS = {  # header, summary field
    "synthetic": (("train ½MSE", "train_loss"), ("test ½MSE", "test_loss"),
                  ("zeros", "zeros"), ("iterations", "n_iter")),
    "mnist": (("test ½MSE", "test_loss"), ("zeros", "zeros"),
              ("train acc. %", "train_accuracy"),
              ("test acc. %", "test_accuracy"), ("T-I %", "ti"),
              ("T-I a=0 %", "ti_zero"), ("T-I code %", "ti_authors"),
              ("fit (s)", "fit_s")),
}


def _rst_number(value):
    """Three significant digits; values below 0.01 as ``3.40e-4``, values of
    1000 and more in full (``16605``)."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    value = float(value)
    if not math.isfinite(value):
        return "n/a"
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:.0f}"
    if abs(value) >= 0.01:
        return f"{value:.3g}"
    mantissa, exponent = f"{value:.2e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _rst_grid(value):
    """A grid value (μ or τ): ``1e-06``, ``0.00126``, ``1000``."""
    return f"{value:.0f}" if value >= 1000 else f"{value:.3g}"


def _rst_table(title, headers, rows):
    """A ``list-table`` of text cells."""
    out = [f".. list-table:: {title}".rstrip(), "   :header-rows: 1", ""]
    for row in [headers] + rows:
        for i, cell in enumerate(row):
            out.append(f"   {'*' if i == 0 else ' '} - {cell}".rstrip())
    return "\n".join(out)


def _variant_key(variant):
    order = VARIANT_ORDER.index(variant) if variant in VARIANT_ORDER else len(
        VARIANT_ORDER)
    return order, variant


def _rst_machine(summary):
    """The machine, BLAS and versions of the runs, and how shared the machine
    was, as one paragraph. The runs record their CPU model, BLAS threads,
    package version, load and CPU time; the rest (cores, memory, platform,
    BLAS library, Python and its packages) comes from the machine stamp of
    the process that writes the report."""
    m = summary["machine"]
    cpu = ", ".join(summary["cpu_models"]) or m.get("CPU", "unknown")
    versions = [f"{v} ({n} runs)" if i == 0 else f"{v} ({n})" for i, (v, n)
                in enumerate(summary["runs_by_version"].items())]
    versions = (", ".join(versions[:-1]) + " and " + versions[-1]
                if len(versions) > 1 else "".join(versions))
    threads = summary["blas_threads"]
    # every BLAS library loaded (NumPy's and SciPy's), in a fixed order
    blas = ", ".join(sorted({part.split(" (")[0].strip()
                             for part in m.get("BLAS", "").split(";")
                             if part.strip() and " (" in part})) or "BLAS unknown"
    blas = (f"one BLAS thread (OPENBLAS_NUM_THREADS=1, {blas})" if threads == ["1"]
            else f"BLAS threads {', '.join(threads)} ({blas})")
    text = (f"Machine: {cpu} ({m.get('cores', '?')}), "
            f"{m.get('memory', '?')}, {m.get('platform', '?')}; {blas}; "
            f"Python {m.get('python', '?')}, NumPy {m.get('numpy', '?')}, "
            f"SciPy {m.get('scipy', '?')}, scikit-learn "
            f"{m.get('scikit-learn', '?')}, numba {m.get('numba', '?')}, "
            f"sklearn_ggn {versions}.")
    if summary["load_range"] and summary["wall_hours_done"] > 0:
        low, high = summary["load_range"]
        cores = m.get("cores", "").split(" logical")[0]
        text += (f" The machine was shared with other jobs during the run "
                 f"(1-minute load average {low:.1f}-{high:.1f}"
                 + (f" on its {cores} cores" if cores.isdigit() else "")
                 + "): each run records its CPU time beside its wall time, and "
                 f"over all runs the CPU time was "
                 f"{100 * summary['cpu_hours_done'] / summary['wall_hours_done']:.0f}"
                 " % of the wall time.")
    return textwrap.fill(text, 79, break_long_words=False,
                         break_on_hyphens=False)


def _rst_status(summary):
    done, pending = summary["done_by_experiment"], summary["pending_by_experiment"]
    walls = summary["wall_hours_by_experiment"]
    rows = [[exp, str(done.get(exp, 0)), str(pending.get(exp, 0)),
             f"{60 * walls.get(exp, 0.0):.0f}"]
            for exp in sorted(set(done) | set(pending))]
    return _rst_table("Runs done at full scale and pending",
                      ["experiment", "runs done", "runs pending",
                       "wall time (min)"], rows)


def _rst_sweep(summary, exp):
    variants = summary["sweeps"].get(exp) or {}
    if not variants:
        return "No run of this figure is done yet."
    sweep = "mu" if exp.endswith("_mu") else "tau"
    kind = "synthetic" if exp.startswith("fig1") else "mnist"
    columns = _SWEEP_COLUMNS[kind]
    rows = [[variant, _rst_grid(row[sweep])]
            + [_rst_number(row.get(field)) for _, field in columns]
            + [str(row["runs"])]
            for variant in sorted(variants, key=_variant_key)
            for row in variants[variant]]
    return _rst_table(exp, ["variant", "μ" if sweep == "mu" else "τ"]
                      + [header for header, _ in columns] + ["runs"], rows)


def _rst_fig2(summary):
    if not summary["fig2"]:
        return "No run of this figure is done yet."
    rows = [[variant, _rst_number(c["n_iter"]), _rst_number(c["fit_s"]),
             _rst_number(c["train_loss"]), _rst_number(c["test_loss"]),
             _rst_number(c["mu_used"])]
            for variant, c in sorted(summary["fig2"].items(),
                                     key=lambda item: _variant_key(item[0]))]
    return _rst_table("Figure 2", ["run", "iterations", "time (s)", "train ½MSE",
                                   "test ½MSE", "μ"], rows)


def _rst_table2(summary):
    if not summary["table2"]:
        return "No run of this table is done yet."
    rows = []
    for data, variants in sorted(summary["table2"].items()):
        for variant, methods in sorted(variants.items()):
            for method, c in sorted(methods.items()):
                ti = _rst_number(c["ti"])
                if "ti_sd" in c:
                    ti += f" ± {c['ti_sd']:.1f}"
                rows.append([data, variant, method, _rst_number(c["batch_size"]),
                             _rst_number(c["mu_used"]),
                             "/".join(str(e) for e in c["epochs_by_seed"]),
                             str(len(c["seeds"])), ti,
                             _rst_number(c["ti_zero"]),
                             _rst_number(c["ti_authors"]),
                             _rst_number(c["ti_weights"]),
                             _rst_number(c["test_accuracy"]),
                             _rst_number(c["test_loss"]),
                             _rst_number(c["fit_s"])])
    return _rst_table("Table 2 and the UCI comparison",
                      ["data", "variant", "method", "batch", "μ", "epochs",
                       "seeds", "T-I %", "T-I a=0 %", "T-I code %",
                       "T-I of U %", "test acc. %", "test ½MSE", "fit (s)"], rows)


def rst_tables(summary):
    """Each table of docs/reproducing.rst as reStructuredText, by name."""
    tables = {"machine": _rst_machine(summary), "status": _rst_status(summary),
              "fig2": _rst_fig2(summary), "table2": _rst_table2(summary)}
    for exp in ("fig1_mu", "fig1_tau", "mnist_mu", "mnist_tau", "mnist_ts_mu",
                "mnist_ts_tau"):
        tables[exp] = _rst_sweep(summary, exp)
    return {name: tables[name] for name in RST_TABLES}


def write_rst(summary, folder=DOCS_TABLES):
    """Write ``<folder>/<name>.rst`` for every table of ``rst_tables``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    header = (f".. Generated by ``python -m benchmarks.paper --{summary['mode']} "
              f"--report`` from\n   paper_{summary['mode']}.jsonl: "
              "edit benchmarks/paper.py, not this file.\n\n")
    for name, text in rst_tables(summary).items():
        (folder / f"{name}.rst").write_text(header + text + "\n", encoding="utf-8")


def _figures(summary, lines, stem):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(exp, variants) for exp, variants in summary["sweeps"].items()
              if variants]
    if panels:
        fig, axes = plt.subplots(2, len(panels), figsize=(4 * len(panels), 6.5),
                                 squeeze=False)
        for j, (exp, variants) in enumerate(panels):
            sweep = "mu" if exp.endswith("_mu") else "tau"
            for variant, rows in sorted(variants.items()):
                grid = [r[sweep] for r in rows]
                axes[0, j].loglog(grid, [r["test_loss"] for r in rows], "-o",
                                  ms=3, label=variant)
                lower = ("test_accuracy" if "test_accuracy" in rows[0]
                         else "zeros")
                axes[1, j].semilogx(grid, [r[lower] for r in rows], "-o", ms=3,
                                    label=f"{variant}: {lower}")
                if "ti" in rows[0]:
                    axes[1, j].semilogx(grid, [r["ti"] for r in rows], ":s",
                                        ms=3, label=f"{variant}: T-I")
            axes[0, j].set_title(exp, fontsize=9)
            axes[0, j].set_ylabel("test ½MSE")
            axes[1, j].set_xlabel(sweep)
            axes[0, j].legend(fontsize=6)
            axes[1, j].legend(fontsize=6)
        fig.tight_layout()
        fig.savefig(f"{stem}.png", dpi=100)
        plt.close(fig)
    curves = [line for line in lines if "curve" in line
              and (line["exp"] == "fig2" or line.get("seed") == 0)]
    if curves:
        names = sorted({line.get("data", "fig2") for line in curves})
        fig, axes = plt.subplots(2, len(names), figsize=(4 * len(names), 6.5),
                                 squeeze=False)
        for j, name in enumerate(names):
            for line in curves:
                if line.get("data", "fig2") != name:
                    continue
                c, label = line["curve"], f"{line['variant']} {line.get('method', '')}"
                if name == "fig2":
                    axes[0, j].loglog(c["iteration"], c["test_loss"], label=label)
                    axes[1, j].loglog(np.maximum(c["time"], 1e-3), c["test_loss"],
                                      label=label)
                    axes[0, j].set_xlabel("iteration")
                    axes[1, j].set_xlabel("time (s)")
                else:
                    epochs = np.arange(1, len(c["test_loss"]) + 1)
                    axes[0, j].loglog(epochs, c["test_loss"], label=label)
                    axes[1, j].semilogx(epochs, c["test_accuracy"], label=label)
                    axes[0, j].set_xlabel("epoch")
                    axes[1, j].set_ylabel("test accuracy %")
            axes[0, j].set_title(name, fontsize=9)
            axes[0, j].set_ylabel("test ½MSE")
            axes[0, j].legend(fontsize=6)
        fig.tight_layout()
        fig.savefig(f"{stem}.curves.png", dpi=100)
        plt.close(fig)


# --------------------------------------------------------------------- main
def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.paper",
                                     description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--full", action="store_const", const="full", dest="mode")
    mode.add_argument("--quick", action="store_const", const="quick", dest="mode")
    parser.add_argument("--only", nargs="+", default=None,
                        help="experiments to run (default: all)")
    parser.add_argument("--report", action="store_true",
                        help="only compute the tables and figures")
    parser.add_argument("--plan", action="store_true",
                        help="list the runs, done or pending")
    parser.add_argument("--data-home", default=None,
                        help="folder with mnist/, pendigits/, letter/, avila/")
    parser.add_argument("--out", default=None,
                        help="JSON-lines file (default results/paper_<mode>.jsonl)")
    parser.add_argument("--rst-dir", default=None,
                        help="folder for the reStructuredText tables that "
                             "docs/reproducing.rst includes (default: "
                             "docs/_paper with --full and the default --out, "
                             "else none)")
    parser.add_argument("--max-hours", type=float, default=None)
    parser.add_argument("--max-runs", type=int, default=None)
    parser.add_argument("--max-tier", type=int, default=None)
    parser.add_argument("--reverse", action="store_true",
                        help="take the pending runs from the last: a second "
                             "process beside one taking them from the first "
                             "(each with its own --out; merge the files by "
                             "run id)")
    parser.add_argument("--merge", nargs="+", default=None, metavar="JSONL",
                        help="add the runs of these files (other processes' "
                             "--out) that --out lacks, then report")
    args = parser.parse_args(argv)
    mode = args.mode or "quick"
    if args.data_home:
        os.environ["SKLEARN_GGN_DATA"] = args.data_home
    path = results_path(mode, args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    if args.plan:
        done = {line["id"] for line in load_lines(path)}
        for run in plan(mode):
            print(f"{'done   ' if run['id'] in done else 'pending'} "
                  f"tier {run['tier']} {run['id']}")
        return 0
    if args.merge:
        merge(path, args.merge, log=lambda msg: print(msg, flush=True))
    elif not args.report:
        execute(mode, path, only=args.only, max_hours=args.max_hours,
                max_runs=args.max_runs, max_tier=args.max_tier,
                log=lambda msg: print(msg, flush=True), reverse=args.reverse)
    rst_dir = args.rst_dir or (DOCS_TABLES if mode == "full" and not args.out
                               else None)
    report(mode, path, machine_stamp(), rst_dir=rst_dir)
    print(f"wrote {path.with_suffix('.md')}"
          + (f" and the tables in {rst_dir}" if rst_dir else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
