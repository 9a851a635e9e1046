"""Benchmark 6 — start-up: what a first session waits for, cold and warm.

Every process runs the configurations a new user meets in a first session,
in this order, each fitted twice in the same process (the second fit is the
warm in-process time):

1. ``GGNScoreClassifier()`` on standardized digits (mini-batch default);
2. ``GGNScoreRegressor()`` on standardized diabetes (full batch, GCV τ);
3. ``GGNScoreClassifier()`` on standardized breast_cancer (full batch);
4. the digits fit on float32 data;
5. the digits fit on a CSR matrix;
6. ``partial_fit`` over digits in three chunks;
7. a multilabel fit (``make_multilabel_classification``);
8. ``GGNScoreRegressor(loss="poisson")`` on generated counts;
9. ``GridSearchCV(GGNScoreClassifier(), {"tau": [...]}, n_jobs=2)`` on digits
   (its workers are fresh processes that load what the parent cached).

Two scenarios, each in fresh Python subprocesses (``sys.executable``):

* ``cold``: ``NUMBA_CACHE_DIR`` points at a new, empty directory — the first
  run after an install;
* ``warm``: the same directory, filled by the cold run before it.

A configuration's *first-time cost* is its first fit minus its second fit
in the same process (compilation, or loading from the cache); the budget
of the issue is measured on it: the first default fit within 5 s of the
warm one, every further configuration within 3 s. numba's compile events
(``numba.core.event``) give the compile seconds of each fit and, from the
cold processes, the exclusive compile seconds of every function (its own
time, without the functions it compiled on the way). Medians over the
processes.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from ._common import (
    REPO_DIR,
    LoadMonitor,
    md_table,
    median,
    new_figure,
    save_figure,
    write_result,
)

NAME = "startup"
TITLE = "Benchmark 6: start-up (a first session, cold and warm)"

CONFIG = {
    "smoke": {"processes": 1},
    "quick": {"processes": 3},
    "full": {"processes": 5},
}

CHILD = r"""
import json, sys, time, warnings
t_start = time.perf_counter()
import numpy as np
import numba.core.event as ev

stack, functions, outer = [], {}, []


class Recorder(ev.Listener):
    def on_start(self, event):
        stack.append([time.perf_counter(), 0.0])

    def on_end(self, event):
        t0, inner = stack.pop()
        elapsed = time.perf_counter() - t0
        if stack:
            stack[-1][1] += elapsed
        else:
            outer.append(elapsed)
        func = getattr(event.data.get("dispatcher"), "py_func", None)
        name = (func.__module__.rsplit(".", 1)[-1] + "." + func.__qualname__
                if func is not None else "?")
        functions[name] = functions.get(name, 0.0) + elapsed - inner


ev.register("numba:compile", Recorder())
out = {"fits": {}}
t0 = time.perf_counter()
import sklearn
import numba
out["import_numba_s"] = time.perf_counter() - t0
t0 = time.perf_counter()
import sklearn_ggn
from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor
out["import_s"] = time.perf_counter() - t0
import scipy.sparse as sp
from sklearn.datasets import (load_breast_cancer, load_diabetes, load_digits,
                              make_multilabel_classification)
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import StandardScaler

warnings.simplefilter("ignore")
Xd, yd = load_digits(return_X_y=True)
Xd = StandardScaler().fit_transform(Xd)
Xr, yr = load_diabetes(return_X_y=True)
Xr = StandardScaler().fit_transform(Xr)
Xb, yb = load_breast_cancer(return_X_y=True)
Xb = StandardScaler().fit_transform(Xb)
Xm, Ym = make_multilabel_classification(600, 20, n_classes=5, random_state=0)
Xm = StandardScaler().fit_transform(Xm)
rng = np.random.default_rng(0)
Xp = rng.standard_normal((600, 8))
yp = rng.poisson(np.exp(0.5 * Xp[:, 0] - 0.3 * Xp[:, 1]))


def partial():
    clf = GGNScoreClassifier(random_state=0)
    for chunk in np.array_split(np.arange(len(yd)), 3):
        clf.partial_fit(Xd[chunk], yd[chunk], classes=np.arange(10))


CONFIGS = [
    ("classifier default (digits)",
     lambda: GGNScoreClassifier(random_state=0).fit(Xd, yd)),
    ("regressor default (diabetes)",
     lambda: GGNScoreRegressor(random_state=0).fit(Xr, yr)),
    ("classifier full batch (breast_cancer)",
     lambda: GGNScoreClassifier(random_state=0).fit(Xb, yb)),
    ("float32 (digits)",
     lambda: GGNScoreClassifier(random_state=0).fit(Xd.astype(np.float32), yd)),
    ("sparse CSR (digits)",
     lambda: GGNScoreClassifier(random_state=0).fit(sp.csr_matrix(Xd), yd)),
    ("partial_fit (digits, 3 chunks)", partial),
    ("multilabel", lambda: GGNScoreClassifier(random_state=0).fit(Xm, Ym)),
    ("poisson", lambda: GGNScoreRegressor(loss="poisson", random_state=0)
     .fit(Xp, yp)),
    ("GridSearchCV(n_jobs=2) (digits)",
     lambda: GridSearchCV(GGNScoreClassifier(random_state=0, max_iter=20),
                          {"tau": [1e-4, 1e-3]}, cv=2, n_jobs=2).fit(Xd, yd)),
]
for name, fit in CONFIGS:
    record = {}
    for attempt in ("first", "second"):
        n_outer, before = len(outer), dict(functions)
        t0 = time.perf_counter()
        fit()
        record[attempt + "_s"] = time.perf_counter() - t0
        record[attempt + "_compile_s"] = sum(outer[n_outer:])
        if attempt == "first":
            record["compiled"] = {k: v - before.get(k, 0.0)
                                  for k, v in functions.items()
                                  if v - before.get(k, 0.0) > 0.0}
    out["fits"][name] = record
out["process_s"] = time.perf_counter() - t_start
print("RESULT " + json.dumps(out))
"""


def _child(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, SKLEARN_GGN_NUMBA_CACHE="1")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=REPO_DIR,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"start-up child failed:\n{proc.stderr[-3000:]}")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    result = json.loads(line[len("RESULT "):])
    result["wall_s"] = time.perf_counter() - t0
    return result


def run(mode, stamp):
    n = CONFIG[mode]["processes"]
    per_process = {"cold": [], "warm": []}
    with LoadMonitor() as monitor, tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            cache_dir = os.path.join(tmp, f"cache{i}")
            os.makedirs(cache_dir)
            per_process["cold"].append(_child(cache_dir))
            per_process["warm"].append(_child(cache_dir))
    raw = {"per_process": per_process, "medians": _medians(per_process)}
    body, summary = _report(raw)
    fig = _plot(raw, mode, stamp)
    write_result(NAME, mode, TITLE, stamp, monitor, body, raw, [fig])
    raw["summary"] = summary
    return raw


def _medians(per_process):
    medians = {}
    for scenario, results in per_process.items():
        fits = {}
        for name in results[0]["fits"]:
            records = [r["fits"][name] for r in results]
            fits[name] = {key: median([rec[key] for rec in records])
                          for key in ("first_s", "second_s", "first_compile_s")}
            fits[name]["first_time_cost_s"] = median(
                [rec["first_s"] - rec["second_s"] for rec in records])
            names = {k for rec in records for k in rec["compiled"]}
            fits[name]["compiled"] = {
                k: median([rec["compiled"].get(k, 0.0) for rec in records])
                for k in names}
        medians[scenario] = {
            "fits": fits,
            **{key: median([r[key] for r in results])
               for key in ("import_s", "import_numba_s", "process_s", "wall_s")}}
    return medians


def _report(raw):
    cold, warm = raw["medians"]["cold"], raw["medians"]["warm"]
    rows = []
    for name, c in cold["fits"].items():
        w = warm["fits"][name]
        top = sorted(c["compiled"].items(), key=lambda kv: -kv[1])[:3]
        rows.append((name, c["first_s"], w["first_s"], c["second_s"],
                     c["first_s"] - w["first_s"], c["first_compile_s"],
                     ", ".join(f"{k} {v:.2f}" for k, v in top) or "-"))
    n_cold = len(raw["per_process"]["cold"])
    lines = [
        f"A first session in a fresh process, configurations in this order; "
        f"medians over {n_cold} cold and {n_cold} warm processes. `cold` = empty "
        "kernel cache, `warm` = the cache the cold process filled. `cold − warm` "
        "is what compilation adds to the first fit of the configuration; "
        "`compile` the seconds inside numba's compile events during it; the "
        "last column the functions that took longest to compile (exclusive "
        "seconds).",
        "",
        md_table(["configuration", "cold 1st fit [s]", "warm 1st fit [s]",
                  "2nd fit [s]", "cold − warm [s]", "compile [s]",
                  "slowest to compile [s]"], rows),
        "",
        f"`import sklearn_ggn` (after scikit-learn and numba): "
        f"{cold['import_s']:.2f} s cold, {warm['import_s']:.2f} s warm; "
        f"`import sklearn, numba`: {warm['import_numba_s']:.2f} s. Whole "
        f"process: {cold['wall_s']:.1f} s cold, {warm['wall_s']:.1f} s warm.",
        "",
        "Every function compiled in the cold processes, exclusive seconds "
        "(median), summed over the session:",
        "",
    ]
    total = {}
    for fit in cold["fits"].values():
        for k, v in fit["compiled"].items():
            total[k] = total.get(k, 0.0) + v
    lines.append(md_table(["function", "compile [s]"],
                          sorted(total.items(), key=lambda kv: -kv[1])))
    first = next(iter(cold["fits"]))
    extra = max(cold["fits"][k]["first_s"] - warm["fits"][k]["first_s"]
                for k in list(cold["fits"])[1:])
    summary = (f"first default fit cold − warm "
               f"{cold['fits'][first]['first_s'] - warm['fits'][first]['first_s']:.2f}"
               f" s; every further configuration ≤ {extra:.2f} s; "
               f"import {warm['import_s']:.2f} s warm")
    return "\n".join(lines), summary


def _plot(raw, mode, stamp):
    fig, (ax,) = new_figure(1, width=8.0, height=4.6)
    cold, warm = raw["medians"]["cold"]["fits"], raw["medians"]["warm"]["fits"]
    names = list(cold)
    y = range(len(names))
    ax.barh([i + 0.2 for i in y], [cold[k]["first_s"] for k in names], height=0.4,
            label="cold cache: first fit", color="C3")
    ax.barh([i - 0.2 for i in y], [warm[k]["first_s"] for k in names], height=0.4,
            label="warm cache: first fit", color="C0")
    ax.set_yticks(list(y), names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("seconds (median over fresh processes)")
    ax.set_title("a first session, configuration by configuration")
    ax.legend(fontsize=7)
    return save_figure(fig, NAME, mode, stamp)
