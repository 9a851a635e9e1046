"""Benchmark 6 — start-up: numba compile time and first-fit overhead.

Every measurement runs in a fresh Python subprocess (``sys.executable``),
in three scenarios:

* ``cold, cache off``: ``SKLEARN_GGN_NUMBA_CACHE=0`` — every kernel is
  compiled in the process (what a read-only install pays every time).
* ``cold, empty cache``: cache on, ``NUMBA_CACHE_DIR`` pointing at a fresh
  temporary directory — compile and write the cache (the first run after an
  install).
* ``warm cache``: cache on, the directory populated by the previous scenario —
  kernels are loaded from disk.

Using ``NUMBA_CACHE_DIR`` keeps the package's own ``__pycache__`` out of it.
In each process: the import of ``sklearn_ggn``; a first and a second
identical ``GGNScoreRegressor`` fit (small full-batch problem, 3 iterations);
then a first and second ``GGNScoreClassifier`` fit (3 classes, log loss,
which compiles the K > 1 kernels). Numba's own compile events
(``numba.core.event``, "numba:compile", outermost only) give the compile
seconds; "first-fit overhead" is first fit − second fit. Medians over
processes. Only public calls are timed; the cache hits and misses are
numba's ``Dispatcher.stats`` of every dispatcher found in the loaded
``sklearn_ggn`` modules (by walking ``sys.modules``, so no private module
is named and a kernel moving between modules changes nothing; each
dispatcher counted once).
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
TITLE = "Benchmark 6: start-up (numba compile, first-fit overhead)"

CONFIG = {
    "smoke": {"cold": 1, "populate": 1, "warm": 1},
    "quick": {"cold": 2, "populate": 1, "warm": 3},
    "full": {"cold": 5, "populate": 3, "warm": 7},
}

CHILD = r"""
import json, sys, time
t_start = time.perf_counter()
import numpy as np
import numba.core.event as ev


def outer_compile_seconds(buffer):
    depth, total, t0 = 0, 0.0, None
    for ts, event in buffer:
        if event.is_start:
            if depth == 0:
                t0 = ts
            depth += 1
        elif event.is_end:
            depth -= 1
            if depth == 0:
                total += ts - t0
    return total


out = {}
with ev.install_recorder("numba:compile") as rec:
    t0 = time.perf_counter()
    import sklearn_ggn
    from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor
    out["import_s"] = time.perf_counter() - t0
    out["import_compile_s"] = outer_compile_seconds(list(rec.buffer))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 10))
    y = np.sin(X[:, 0]) + 0.1 * X[:, 1]
    yc = np.digitize(X[:, 0], [-0.5, 0.5])
    for name, make, target in (
        ("regressor", lambda: GGNScoreRegressor(n_hidden=50, batch_size=None,
                                                max_iter=3, tol=0.0), y),
        ("classifier", lambda: GGNScoreClassifier(n_hidden=50, batch_size=None,
                                                  max_iter=3, tol=0.0), yc),
    ):
        for attempt in ("first", "second"):
            before = len(rec.buffer)
            t0 = time.perf_counter()
            make().fit(X, target)
            out[f"{name}_{attempt}_s"] = time.perf_counter() - t0
            out[f"{name}_{attempt}_compile_s"] = outer_compile_seconds(
                list(rec.buffer)[before:])
    out["compile_total_s"] = outer_compile_seconds(list(rec.buffer))
hits = misses = 0
from numba.core.dispatcher import Dispatcher
# Every numba dispatcher the package loaded, found by walking its modules in
# sys.modules (none named: which module holds which kernel is private).
dispatchers = {id(obj): obj
               for name, mod in list(sys.modules.items())
               if name == "sklearn_ggn" or name.startswith("sklearn_ggn.")
               for obj in vars(mod).values() if isinstance(obj, Dispatcher)}
for obj in dispatchers.values():
    hits += sum(obj.stats.cache_hits.values())
    misses += sum(obj.stats.cache_misses.values())
out["cache_hits"], out["cache_misses"] = hits, misses
out["process_s"] = time.perf_counter() - t_start
print("RESULT " + json.dumps(out))
"""

SCENARIOS = ("cold, cache off", "cold, empty cache", "warm cache")


def _child(env_extra):
    env = dict(os.environ)
    env.update(env_extra)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=REPO_DIR,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"start-up child failed:\n{proc.stderr[-3000:]}")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    result = json.loads(line[len("RESULT "):])
    result["wall_incl_interpreter_s"] = wall
    return result


def run(mode, stamp):
    cfg = CONFIG[mode]
    results = {s: [] for s in SCENARIOS}
    with LoadMonitor() as monitor, tempfile.TemporaryDirectory() as tmp:
        for _ in range(cfg["cold"]):
            results["cold, cache off"].append(_child({"SKLEARN_GGN_NUMBA_CACHE": "0"}))
        for i in range(cfg["populate"]):
            cache_dir = os.path.join(tmp, f"cache{i}")
            os.makedirs(cache_dir)
            env = {"SKLEARN_GGN_NUMBA_CACHE": "1", "NUMBA_CACHE_DIR": cache_dir}
            results["cold, empty cache"].append(_child(env))
        for _ in range(cfg["warm"]):
            results["warm cache"].append(_child(env))
    raw = {"per_process": results, "medians": {
        s: {k: median([r[k] for r in rs]) for k in rs[0]}
        for s, rs in results.items()}}
    body, summary = _report(raw)
    fig = _plot(raw, mode, stamp)
    write_result(NAME, mode, TITLE, stamp, monitor, body, raw, [fig])
    raw["summary"] = summary
    return raw


def _report(raw):
    med = raw["medians"]
    rows = []
    for s in SCENARIOS:
        r = med[s]
        rows.append((s, len(raw["per_process"][s]), r["compile_total_s"],
                     r["import_s"], r["regressor_first_s"], r["regressor_second_s"],
                     r["regressor_first_s"] - r["regressor_second_s"],
                     r["classifier_first_s"], r["classifier_second_s"],
                     r["classifier_first_s"] - r["classifier_second_s"],
                     r["wall_incl_interpreter_s"],
                     f"{r['cache_hits']:.0f}/{r['cache_misses']:.0f}"))
    lines = [
        "Small full-batch problems (200 samples, d = 10, n = 50, 3 iterations); "
        "medians over fresh processes. `overhead` = first fit − second fit in the "
        "same process. `compile` = seconds inside numba's compile events "
        "(outermost), whole process.",
        "",
        md_table(["scenario", "processes", "numba compile [s]", "import [s]",
                  "reg. 1st fit [s]", "reg. 2nd fit [s]", "reg. overhead [s]",
                  "clf. 1st fit [s]", "clf. 2nd fit [s]", "clf. overhead [s]",
                  "process wall [s]", "cache hits/misses"], rows),
    ]
    cold, warm = med["cold, cache off"], med["warm cache"]
    reg = warm["regressor_first_s"] - warm["regressor_second_s"]
    clf = warm["classifier_first_s"] - warm["classifier_second_s"]
    summary = (f"cold compile {cold['compile_total_s']:.2f} s (cache off); "
               f"warm-cache first-fit overhead {reg:.3f} s (regressor), "
               f"{clf:.3f} s (classifier)")
    return "\n".join(lines), summary


def _plot(raw, mode, stamp):
    fig, (ax,) = new_figure(1, width=7.5)
    med = raw["medians"]
    parts = [("import", lambda r: r["import_s"]),
             ("regressor 1st fit", lambda r: r["regressor_first_s"]),
             ("regressor 2nd fit", lambda r: r["regressor_second_s"]),
             ("classifier 1st fit", lambda r: r["classifier_first_s"]),
             ("classifier 2nd fit", lambda r: r["classifier_second_s"])]
    left = [0.0] * len(SCENARIOS)
    for i, (label, get) in enumerate(parts):
        vals = [get(med[s]) for s in SCENARIOS]
        ax.barh(range(len(SCENARIOS)), vals, left=left, label=label,
                color=f"C{i}")
        left = [a + b for a, b in zip(left, vals, strict=True)]
    ax.scatter([med[s]["compile_total_s"] for s in SCENARIOS],
               range(len(SCENARIOS)), marker="|", s=400, color="k",
               label="numba compile (total)", zorder=3)
    ax.set_yticks(range(len(SCENARIOS)), SCENARIOS)
    ax.set_xlabel("seconds (median over processes)")
    ax.set_title("start-up cost in a fresh process")
    ax.legend(fontsize=7)
    return save_figure(fig, NAME, mode, stamp)
