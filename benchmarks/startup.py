"""Benchmark 6 — start-up: what a first session waits for, cold and warm,
and what the first fit of a process pays with a warm kernel cache.

1. A first session. Every process runs the configurations a new user meets
   in a first session, in this order, each fitted twice in the same process
   (the second fit is the warm in-process time):

   1. ``GGNScoreClassifier()`` on standardized digits (mini-batch default);
   2. ``GGNScoreRegressor()`` on standardized diabetes (full batch, GCV τ);
   3. ``GGNScoreClassifier()`` on standardized breast_cancer (full batch);
   4. the digits fit on float32 data;
   5. the digits fit on a CSR matrix;
   6. ``partial_fit`` over digits in three chunks;
   7. a multilabel fit (``make_multilabel_classification``);
   8. ``GGNScoreRegressor(loss="poisson")`` on generated counts;
   9. ``GridSearchCV(GGNScoreClassifier(), {"tau": [...]}, n_jobs=2)`` on
      digits (its workers are fresh processes that load what the parent
      cached).

   Two scenarios, each in a fresh Python subprocess (``sys.executable``):
   ``cold``, ``NUMBA_CACHE_DIR`` pointing at a new, empty directory (the
   first run after an install), and ``warm``, the same directory filled by
   the cold process before it. A configuration's *cold − warm* is what
   compilation adds to its first fit; it is given in wall seconds and in
   the process's CPU seconds (``time.process_time``: on a shared machine
   it moves less with the other jobs' load than the wall time). numba's
   compile events (``numba.core.event``) give the compile seconds of each
   fit and, from the cold processes, the exclusive compile seconds of every
   function (its own time, without the functions it compiled on the way).

2. The first fit of a process against its second, warm cache. Fresh
   processes (on the cache the session and one untimed process of the same
   fits filled) fit
   ``make_pipeline(StandardScaler(), GGNScoreClassifier(random_state=0))``
   (the estimator's defaults: a full batch) on breast_cancer three times;
   the *gap* is the first fit's time minus the second's, wall and CPU.
   Other fresh processes time the loading of every kernel that first fit
   calls, with numba's event API: the seconds numba's compiler lock is
   held for each kernel's first call (reading the cache index, unpickling
   the compiled result, linking its machine code into the process), with
   numba's own one-time set-up inside those apart (the runtime's
   initialization); numba's extension entry points, which numba runs once
   per process before the first call of any compiled function (their cost
   depends on the numba extensions installed, not on this package), are
   timed alone first.

Medians over the processes. ``python -m benchmarks --quick --only
startup`` times this tree's package. Alone, ``python -m benchmarks.startup
[--quick | --full | --smoke] [--baseline DIR --baseline-label TEXT]``
times, round by round, the package in ``DIR`` (another commit's tree, or a
folder holding its ``sklearn_ggn`` package) and this tree's: before and
after in one run, alternated. Both write ``results/startup_<mode>.md``
(``--name NAME``: ``results/NAME_<mode>.md``).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._common import (
    REPO_DIR,
    LoadMonitor,
    machine_stamp,
    md_table,
    median,
    new_figure,
    save_figure,
    write_result,
)

NAME = "startup"
TITLE = "Benchmark 6: start-up (a first session, cold and warm)"

# rounds: each is a cold and a warm session, a process timing the kernel
# loads and ``gap_processes`` processes timing the first and second fits,
# per package
CONFIG = {
    "smoke": {"rounds": 1, "gap_processes": 1},
    "quick": {"rounds": 3, "gap_processes": 2},
    "full": {"rounds": 5, "gap_processes": 2},
}

SESSION = r"""
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
for name, fit in CONFIGS[:int(sys.argv[1])]:
    record = {}
    for attempt in ("first", "second"):
        n_outer, before = len(outer), dict(functions)
        t0, c0 = time.perf_counter(), time.process_time()
        fit()
        record[attempt + "_s"] = time.perf_counter() - t0
        record[attempt + "_cpu_s"] = time.process_time() - c0
        record[attempt + "_compile_s"] = sum(outer[n_outer:])
        if attempt == "first":
            record["compiled"] = {k: v - before.get(k, 0.0)
                                  for k, v in functions.items()
                                  if v - before.get(k, 0.0) > 0.0}
    out["fits"][name] = record
out["process_s"] = time.perf_counter() - t_start
print("RESULT " + json.dumps(out))
"""

# The first, second and third fit of a fresh process, nothing instrumented.
GAP = r"""
import json, time, warnings
t0 = time.perf_counter()
import numpy, scipy, sklearn, numba
out = {"import_numba_s": time.perf_counter() - t0}
t0 = time.perf_counter()
import sklearn_ggn
from sklearn_ggn import GGNScoreClassifier
out["import_s"] = time.perf_counter() - t0
from sklearn.datasets import load_breast_cancer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

warnings.simplefilter("ignore")
X, y = load_breast_cancer(return_X_y=True)
out["fits"] = []
for _ in range(3):
    model = make_pipeline(StandardScaler(), GGNScoreClassifier(random_state=0))
    t0, c0 = time.perf_counter(), time.process_time()
    model.fit(X, y)
    out["fits"].append({"wall_s": time.perf_counter() - t0,
                        "cpu_s": time.process_time() - c0})
print("RESULT " + json.dumps(out))
"""

# The same first fit, timing every region in which numba holds its
# compiler lock (a kernel's first call: loading it from the cache, or
# compiling it) with numba's event API.
LOADS = r"""
import inspect, json, time, warnings
import numba.core.event as ev
from numba.core import entrypoints

out = {}
t0 = time.perf_counter()
entrypoints.init_all()
out["entry_points_s"] = time.perf_counter() - t0
import sklearn_ggn
from sklearn_ggn import GGNScoreClassifier
from sklearn.datasets import load_breast_cancer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler


def label():
    # the dispatcher whose first call took the lock, or the numba function
    # a lock-taking decorator wraps
    frame = inspect.currentframe()
    while frame is not None:
        owner = frame.f_locals.get("self")
        wrapped = frame.f_locals.get("func")
        if (frame.f_code.co_filename.endswith("compiler_lock.py")
                and hasattr(wrapped, "__qualname__")):
            return "numba: " + wrapped.__qualname__
        if frame.f_code.co_name == "compile" and hasattr(owner, "py_func"):
            func = owner.py_func
            return func.__module__.rsplit(".", 1)[-1] + "." + func.__qualname__
        frame = frame.f_back
    return "numba: ?"


stack, regions, compiled = [], [], []


class Lock(ev.Listener):
    def on_start(self, event):
        stack.append([time.perf_counter(), 0.0, label()])

    def on_end(self, event):
        t0, nested, name = stack.pop()
        elapsed = time.perf_counter() - t0
        if stack:
            stack[-1][1] += elapsed
        regions.append([name, elapsed - nested])


class Compile(ev.Listener):
    def on_start(self, event):
        func = event.data["dispatcher"].py_func
        compiled.append(func.__module__.rsplit(".", 1)[-1] + "."
                        + func.__qualname__)

    def on_end(self, event):
        pass


warnings.simplefilter("ignore")
X, y = load_breast_cancer(return_X_y=True)
ev.register("numba:compiler_lock", Lock())
ev.register("numba:compile", Compile())
t0 = time.perf_counter()
make_pipeline(StandardScaler(), GGNScoreClassifier(random_state=0)).fit(X, y)
out["fit_s"] = time.perf_counter() - t0
out["regions"] = regions
out["compiled"] = compiled
print("RESULT " + json.dumps(out))
"""


def _run(code, package, cache_dir, *args):
    """Run ``code`` in a fresh process that imports ``sklearn_ggn`` from
    ``package`` with its kernels cached in ``cache_dir``; the JSON it
    prints after ``RESULT``."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, SKLEARN_GGN_NUMBA_CACHE="1",
               PYTHONPATH=package)
    t0 = time.perf_counter()
    # (from a neutral folder: "python -c" puts the working directory first)
    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env,
                          cwd=tempfile.gettempdir(), capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"start-up child failed:\n{proc.stderr[-3000:]}")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    result = json.loads(line[len("RESULT "):])
    result["wall_s"] = time.perf_counter() - t0
    return result


def _round(package, cache_dir, gap_processes, n_configs):
    os.makedirs(cache_dir)
    cold = _run(SESSION, package, cache_dir, n_configs)
    warm = _run(SESSION, package, cache_dir, n_configs)
    # (the session's breast_cancer fit has filled the cache for the first
    # fits timed below; a session cut short has not: one untimed process)
    _run(GAP, package, cache_dir)
    return {"cold": cold, "warm": warm, "loads": _run(LOADS, package, cache_dir),
            "gap": [_run(GAP, package, cache_dir) for _ in range(gap_processes)]}


def measure(packages, rounds, gap_processes, n_configs=9, progress=print):
    """Round by round, each package in turn: a cold and a warm session, a
    process timing the kernel loads, ``gap_processes`` processes timing the
    first fits (all on the round's new cache directory of the package).
    ``packages`` maps a label to a folder put first on ``PYTHONPATH``."""
    runs = {label: [] for label in packages}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(rounds):
            for j, (label, package) in enumerate(packages.items()):
                runs[label].append(_round(package, os.path.join(tmp, f"{i}-{j}"),
                                          gap_processes, n_configs))
                progress(f"[startup] round {i + 1}/{rounds}: {label} done")
    return runs


def _medians(rounds):
    cold = [r["cold"] for r in rounds]
    warm = [r["warm"] for r in rounds]
    fits = {}
    for name in cold[0]["fits"]:
        c = [r["fits"][name] for r in cold]
        w = [r["fits"][name] for r in warm]
        fits[name] = {
            "cold_s": median([x["first_s"] for x in c]),
            "warm_s": median([x["first_s"] for x in w]),
            "second_s": median([x["second_s"] for x in c + w]),
            "compile_s": median([x["first_compile_s"] for x in c]),
            "cold_minus_warm_s": median([x["first_s"] - y["first_s"]
                                         for x, y in zip(c, w)]),
            "cold_minus_warm_cpu_s": median([x["first_cpu_s"] - y["first_cpu_s"]
                                             for x, y in zip(c, w)]),
            "warm_compile_s": median([x["first_compile_s"] for x in w]),
            "compiled": {k: median([x["compiled"].get(k, 0.0) for x in c])
                         for k in {k for x in c for k in x["compiled"]}},
        }
    gaps = [g for r in rounds for g in r["gap"]]
    loads = {}
    for r in rounds:
        per_process = {}
        for name, seconds in r["loads"]["regions"]:
            per_process[name] = per_process.get(name, 0.0) + seconds
        for name, seconds in per_process.items():
            loads.setdefault(name, []).append(seconds)
    n_loads = len(rounds)
    return {
        "fits": fits,
        "import_s": median([r["import_s"] for r in warm]),
        "import_numba_s": median([r["import_numba_s"] for r in warm]),
        "cold_process_s": median([r["wall_s"] for r in cold]),
        "warm_process_s": median([r["wall_s"] for r in warm]),
        "gap": {
            "processes": len(gaps),
            "first_s": median([g["fits"][0]["wall_s"] for g in gaps]),
            "second_s": median([g["fits"][1]["wall_s"] for g in gaps]),
            "third_s": median([g["fits"][2]["wall_s"] for g in gaps]),
            "gap_s": median([g["fits"][0]["wall_s"] - g["fits"][1]["wall_s"]
                             for g in gaps]),
            "gap_cpu_s": median([g["fits"][0]["cpu_s"] - g["fits"][1]["cpu_s"]
                                 for g in gaps]),
            "gaps_s": [g["fits"][0]["wall_s"] - g["fits"][1]["wall_s"]
                       for g in gaps],
            "import_s": median([g["import_s"] for g in gaps]),
        },
        # a name missing from a process counts as 0 s there
        "loads": {name: median(values + [0.0] * (n_loads - len(values)))
                  for name, values in loads.items()},
        "load_counts": {name: median([sum(1 for n, _ in r["loads"]["regions"]
                                          if n == name) for r in rounds])
                        for name in loads},
        "entry_points_s": median([r["loads"]["entry_points_s"] for r in rounds]),
        "loads_compiled": sorted({n for r in rounds for n in r["loads"]["compiled"]}),
    }


def _report(raw):
    labels = list(raw["medians"])
    med = raw["medians"]
    n_rounds = len(next(iter(raw["runs"].values())))
    lines = [
        f"Medians over {n_rounds} rounds; in each round every package in turn "
        "ran a cold and a warm session, a process timing the kernel loads and "
        f"{med[labels[0]]['gap']['processes'] // n_rounds} processes timing "
        "the first fits, on a new kernel cache of its own. Packages: "
        + "; ".join(f"`{label}`" for label in labels) + ".",
        "",
        "## The first fit of a process against its second (warm cache)",
        "",
        "`make_pipeline(StandardScaler(), GGNScoreClassifier(random_state=0))` "
        "on breast_cancer (full batch), three fits in each fresh process; "
        "`gap` = first − second fit, wall and CPU seconds (medians of the "
        "per-process differences); `import` = `import sklearn_ggn` after "
        "NumPy, SciPy, scikit-learn and numba.",
        "",
        md_table(["package", "processes", "1st fit [s]", "2nd fit [s]",
                  "3rd fit [s]", "gap [s]", "gap CPU [s]", "import [s]"],
                 [(label, med[label]["gap"]["processes"],
                   med[label]["gap"]["first_s"], med[label]["gap"]["second_s"],
                   med[label]["gap"]["third_s"], med[label]["gap"]["gap_s"],
                   med[label]["gap"]["gap_cpu_s"], med[label]["gap"]["import_s"])
                  for label in labels]),
        "",
        "Each process's gap [s]: " + "; ".join(
            f"`{label}` " + ", ".join(f"{g:.3f}" for g in med[label]["gap"]["gaps_s"])
            for label in labels) + ".",
        "",
        "Loading the kernels of that first fit (another fresh process per "
        "round, warm cache): milliseconds numba's compiler lock is held for "
        "each kernel's first call (index, unpickling, linking its machine "
        "code), medians over the rounds; `numba: …` rows are numba's own "
        "one-time set-up inside those calls (timed apart). The entry points "
        "run once per process before the first compiled call.",
        "",
    ]
    names = {n for label in labels for n in med[label]["loads"]}
    kernels = sorted((n for n in names if not n.startswith("numba")),
                     key=lambda n: -max(med[label]["loads"].get(n, 0.0)
                                        for label in labels))
    numba_rows = sorted(n for n in names if n.startswith("numba"))

    def cell(label, n):
        if n not in med[label]["loads"]:
            return "-"
        count = med[label]["load_counts"].get(n, 0)
        return (f"{1e3 * med[label]['loads'][n]:.1f}"
                + (f" ({count:g})" if count > 1 else ""))

    def kernel_ms(label):
        return 1e3 * sum(v for n, v in med[label]["loads"].items()
                         if not n.startswith("numba"))

    def all_ms(label):
        return 1e3 * (sum(med[label]["loads"].values())
                      + med[label]["entry_points_s"])

    rows = [[n] + [cell(label, n) for label in labels]
            for n in kernels + numba_rows]
    rows.append(["numba: extension entry points (once per process)"]
                + [f"{1e3 * med[label]['entry_points_s']:.1f}" for label in labels])
    rows.append(["**kernels loaded**"]
                + [str(sum(1 for n in med[label]["loads"]
                           if not n.startswith("numba"))) for label in labels])
    rows.append(["**total of the kernels' rows [ms]**"]
                + [f"{kernel_ms(label):.1f}" for label in labels])
    rows.append(["**total with numba's set-up and entry points [ms]**"]
                + [f"{all_ms(label):.1f}" for label in labels])
    lines += [md_table(["kernel (signatures loaded, when more than one)"]
                       + [f"{label} [ms]" for label in labels], rows), ""]
    for label in labels:
        if med[label]["loads_compiled"]:
            lines += [f"`{label}`: compiled, not loaded, with a warm cache: "
                      + ", ".join(med[label]["loads_compiled"]) + ".", ""]
    lines += [
        "## A first session, cold and warm",
        "",
        "Configurations in this order in each process. `cold` = empty kernel "
        "cache, `warm` = the cache the cold process filled. `cold − warm` is "
        "what compilation adds to the first fit of the configuration (median "
        "of the rounds' differences, wall and CPU seconds); `compile` the "
        "seconds inside numba's compile events during it; the last column the "
        "functions that took longest to compile (exclusive seconds).",
        "",
    ]
    for label in labels:
        fits = med[label]["fits"]
        rows = []
        for name, f in fits.items():
            top = sorted(f["compiled"].items(), key=lambda kv: -kv[1])[:3]
            rows.append((name, f["cold_s"], f["warm_s"], f["second_s"],
                         f["cold_minus_warm_s"], f["cold_minus_warm_cpu_s"],
                         f["compile_s"],
                         ", ".join(f"{k} {v:.2f}" for k, v in top) or "-"))
        lines += [f"### `{label}`", "",
                  md_table(["configuration", "cold 1st fit [s]", "warm 1st fit [s]",
                            "2nd fit [s]", "cold − warm [s]", "cold − warm CPU [s]",
                            "compile [s]", "slowest to compile [s]"], rows), "",
                  f"`import sklearn_ggn` (after scikit-learn and numba): "
                  f"{med[label]['import_s']:.2f} s warm; `import sklearn, numba`: "
                  f"{med[label]['import_numba_s']:.2f} s. Whole process: "
                  f"{med[label]['cold_process_s']:.1f} s cold, "
                  f"{med[label]['warm_process_s']:.1f} s warm.", ""]
    if len(labels) > 1:
        configs = list(med[labels[0]]["fits"])
        lines += ["### cold − warm side by side", "",
                  md_table(["configuration"]
                           + [f"{label} [s]" for label in labels]
                           + [f"{label} CPU [s]" for label in labels],
                           [[name]
                            + [med[label]["fits"][name]["cold_minus_warm_s"]
                               for label in labels]
                            + [med[label]["fits"][name]["cold_minus_warm_cpu_s"]
                               for label in labels]
                            for name in configs]), ""]
    label = labels[-1]
    total = {}
    for fit in med[label]["fits"].values():
        for k, v in fit["compiled"].items():
            total[k] = total.get(k, 0.0) + v
    lines += [f"Every function compiled in the cold sessions of `{label}`, "
              "exclusive seconds (median), summed over the session:", "",
              md_table(["function", "compile [s]"],
                       sorted(total.items(), key=lambda kv: -kv[1]))]
    fits = med[label]["fits"]
    names = list(fits)
    summary = (f"{label}: warm first − second fit "
               f"{med[label]['gap']['gap_s']:.2f} s (breast_cancer pipeline); "
               f"first default fit cold − warm "
               f"{fits[names[0]]['cold_minus_warm_s']:.2f} s")
    if len(names) > 1:
        summary += (f"; regressor after the classifier "
                    f"{fits[names[1]]['cold_minus_warm_s']:.2f} s")
    return "\n".join(lines), summary


def _plot(raw, mode, stamp, name=NAME):
    fig, (ax,) = new_figure(1, width=8.0, height=4.6)
    labels = list(raw["medians"])
    names = list(raw["medians"][labels[0]]["fits"])
    height = 0.8 / (2 * len(labels))
    for j, label in enumerate(labels):
        fits = raw["medians"][label]["fits"]
        for k, (key, what) in enumerate((("cold_s", "cold cache"),
                                         ("warm_s", "warm cache"))):
            offset = (2 * j + k) * height - 0.4 + height / 2
            ax.barh([i + offset for i in range(len(names))],
                    [fits[n][key] for n in names], height=height,
                    label=f"{label}: first fit, {what}",
                    color=f"C{2 * j + k}")
    ax.set_yticks(list(range(len(names))), names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("seconds (median over fresh processes)")
    ax.set_title("a first session, configuration by configuration")
    ax.legend(fontsize=7)
    return save_figure(fig, name, mode, stamp)


def _write(runs, mode, stamp, monitor, command=None, name=NAME):
    raw = {"runs": runs, "medians": {label: _medians(rounds)
                                     for label, rounds in runs.items()}}
    body, summary = _report(raw)
    fig = _plot(raw, mode, stamp, name)
    write_result(name, mode, TITLE, stamp, monitor, body, raw, [fig],
                 command=command)
    raw["summary"] = summary
    return raw, body


def run(mode, stamp):
    cfg = CONFIG[mode]
    with LoadMonitor() as monitor:
        runs = measure({"this tree": str(REPO_DIR)}, cfg["rounds"],
                       cfg["gap_processes"])
    raw, _ = _write(runs, mode, stamp, monitor)
    return raw


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.startup",
                                     description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    for name in CONFIG:
        mode.add_argument(f"--{name}", action="store_const", const=name,
                          dest="mode")
    parser.add_argument("--baseline", default=None, metavar="DIR",
                        help="a tree (or a folder holding its sklearn_ggn "
                             "package) timed beside this tree's, alternated")
    parser.add_argument("--baseline-label", default="baseline")
    parser.add_argument("--label", default="this tree")
    parser.add_argument("--configs", type=int, default=9, metavar="N",
                        help="the session's first N configurations only")
    parser.add_argument("--name", default=NAME,
                        help="the result files' name (default: startup)")
    args = parser.parse_args(argv)
    mode = args.mode or "quick"
    packages = {}
    if args.baseline:
        packages[args.baseline_label] = str(Path(args.baseline).resolve())
    packages[args.label] = str(REPO_DIR)
    stamp = machine_stamp()
    cfg = CONFIG[mode]
    with LoadMonitor() as monitor:
        runs = measure(packages, cfg["rounds"], cfg["gap_processes"],
                       args.configs)
    command = f"python -m benchmarks.startup --{mode}" + (
        f" --baseline DIR --baseline-label {args.baseline_label!r}"
        if args.baseline else "") + (
        f" --configs {args.configs}" if args.configs != 9 else "")
    command += f" --name {args.name}" if args.name != NAME else ""
    raw, body = _write(runs, mode, stamp, monitor, command, args.name)
    print(body)
    print(raw["summary"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
