"""Narrow networks: default classifiers of 8 and 16 hidden units.

A user who tunes ``n_hidden`` (``GridSearchCV`` over 8, 16, 32, ...) fits
narrow networks with every other setting at its default. With few
parameters and many rows per batch, each Gauss-Newton step nearly solves
its own batch; how the adaptive damping judges those steps decides whether
such a fit learns. This benchmark fits ``make_pipeline(StandardScaler(),
GGNScoreClassifier(n_hidden=n, random_state=s))`` for n in 8 and 16 and
seeds 0-3 on digits (bundled with scikit-learn), pendigits, letter and
avila (the panel's splits, read from the data folder when found), and a
16-unit SiLU network without biases on the first 3 000 raw MNIST images /
255, tested on the 10 000 test images (the setting of the paper runner's
teacher, on other rows), and reports the test accuracy per seed and its
mean. One BLAS thread.

With ``--baseline DIR`` the same fits run, in turn, with the package found
in ``DIR`` (another commit's ``sklearn_ggn`` folder, e.g. ``git archive
<commit> sklearn_ggn | tar -x -C DIR``): before and after in one run.

Run: ``python -m benchmarks.narrow [--data-home DIR] [--baseline DIR
--baseline-label TEXT] [--seeds 0 1 2 3]``; writes
``results/narrow_full.md`` and ``.json``.
"""

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

import numpy as np

from ._common import (
    LoadMonitor,
    machine_stamp,
    md_table,
    run_with_package,
    write_result,
)

from .panel import DATA_ENV_VAR

NAME = "narrow"
TITLE = "Narrow networks: default classifiers of 8 and 16 hidden units"
TASKS = ("digits", "pendigits", "letter", "avila", "mnist_teacher")
WIDTHS = (8, 16)

# One process per package: the package is imported from its folder.
_FITS = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.append(sys.argv[1])  # (the repository root: the benchmarks)
import sklearn_ggn
from threadpoolctl import threadpool_limits
threadpool_limits(1)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn_ggn import GGNScoreClassifier
from benchmarks.narrow import load
package, home = sys.argv[2], sys.argv[3] or None
tasks, widths, seeds = (json.loads(a) for a in sys.argv[4:7])
import os
imported = os.path.realpath(os.path.dirname(os.path.dirname(sklearn_ggn.__file__)))
assert imported == os.path.realpath(package), "imported another copy"
out = []
for task in tasks:
    data = load(task, home)
    if data is None:
        continue
    X_tr, y_tr, X_te, y_te = data
    for n in widths:
        if task == "mnist_teacher" and n != 16:
            continue
        for seed in seeds:
            if task == "mnist_teacher":
                model = GGNScoreClassifier(n_hidden=16, activation="silu",
                                           fit_intercept=False,
                                           random_state=seed)
            else:
                model = make_pipeline(StandardScaler(), GGNScoreClassifier(
                    n_hidden=n, random_state=seed))
            t0 = time.perf_counter()
            model.fit(X_tr, y_tr)
            fit_s = time.perf_counter() - t0
            last = model[-1] if hasattr(model, "steps") else model
            out.append({"task": task, "n_hidden": n, "seed": seed,
                        "score": float(model.score(X_te, y_te)),
                        "fit_s": fit_s, "epochs": int(last.n_iter_)})
            print(task, n, seed, round(out[-1]["score"], 4), flush=True,
                  file=sys.stderr)
print("RESULT", json.dumps({"version": sklearn_ggn.__version__, "fits": out}))
"""


def load(task, home):
    """``(X_train, y_train, X_test, y_test)`` of a task, or None when its
    data are not found."""
    from .panel import Skip, load_task

    if task == "mnist_teacher":
        if home is None:
            return None
        from sklearn_ggn.datasets import load_mnist

        try:
            X_tr, y_tr, X_te, y_te = load_mnist(data_home=home,
                                                download_if_missing=False)
        except (FileNotFoundError, OSError):
            return None
        return X_tr[:3000] / 255.0, y_tr[:3000], X_te / 255.0, y_te
    try:
        X_tr, y_tr, X_te, y_te, _ = load_task(task, 0, home)
    except Skip:
        return None
    return X_tr, y_tr, X_te, y_te


def run_package(package, home, tasks, widths, seeds):
    root = str(Path(__file__).resolve().parent.parent)
    return run_with_package(_FITS, package, root, package, home or "",
                            json.dumps(list(tasks)), json.dumps(list(widths)),
                            json.dumps(list(seeds)))


def _report(runs, labels):
    rows = []
    keys = sorted({(f["task"], f["n_hidden"]) for run in runs.values()
                   for f in run["fits"]}, key=lambda k: (TASKS.index(k[0]), k[1]))
    for task, n in keys:
        row = [task, n]
        for label in labels:
            fits = [f for f in runs[label]["fits"]
                    if f["task"] == task and f["n_hidden"] == n]
            scores = [f["score"] for f in fits]
            row += [" ".join(f"{s:.3f}" for s in scores),
                    f"{np.mean(scores):.4f}",
                    f"{np.median([f['fit_s'] for f in fits]):.2f}"]
        rows.append(row)
    headers = ["task", "n_hidden"]
    for label in labels:
        headers += [f"{label}: test accuracy per seed", f"{label}: mean",
                    f"{label}: median fit [s]"]
    return "\n".join([
        "Defaults in `make_pipeline(StandardScaler(), GGNScoreClassifier("
        "n_hidden=n, random_state=seed))`; the panel's splits (seed 0); "
        "`mnist_teacher`: `GGNScoreClassifier(n_hidden=16, activation='silu', "
        "fit_intercept=False)` on the first 3 000 MNIST training images / 255, "
        "tested on the 10 000 test images.", "",
        "Packages: " + "; ".join(f"{label}: {runs[label]['version']}"
                                 for label in labels), "",
        md_table(headers, rows)])


def _command(argv):
    """The command line, folders written as DIR (they are this machine's)."""
    words, folder = ["python", "-m", "benchmarks.narrow"], False
    for arg in argv:
        option, eq, _ = arg.partition("=")
        if eq and option in ("--data-home", "--baseline"):
            words.append(option + "=DIR")
        else:
            words.append("DIR" if folder else shlex.quote(arg))
        folder = arg in ("--data-home", "--baseline")
    return " ".join(words)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.narrow",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--data-home", default=os.environ.get(DATA_ENV_VAR))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument("--baseline", default=None, metavar="DIR")
    parser.add_argument("--baseline-label", default="baseline")
    parser.add_argument("--label", default="this tree")
    args = parser.parse_args(argv)
    home = str(Path(args.data_home).resolve()) if args.data_home else None
    packages = {}
    if args.baseline:
        packages[args.baseline_label] = str(Path(args.baseline).resolve())
    packages[args.label] = str(Path(__file__).resolve().parent.parent)
    stamp = machine_stamp()
    with LoadMonitor() as monitor:
        runs = {label: run_package(path, home, args.tasks, WIDTHS,
                                   args.seeds)
                for label, path in packages.items()}
    body = _report(runs, list(packages))
    print(body)
    write_result(NAME, "full", TITLE, stamp, monitor, body,
                 {label: run for label, run in runs.items()},
                 command=_command(argv if argv is not None else sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
