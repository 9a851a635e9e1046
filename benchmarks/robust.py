"""Robust where it says it is: the cost of the first ``return_std`` call and
Huber's loss against the squared error on corrupted targets.

1. First ``return_std`` call. ``GGNScoreRegressor()`` on 20 000 rows of
   ``make_friedman1`` (noise 1): the fit, the first ``predict(X,
   return_std=True)`` on the training rows (it builds the Laplace posterior,
   primal at this size) and a repeat call (the posterior kept), medians
   over repeats of fresh processes with the kernels loaded first. With
   ``--baseline DIR`` the same is timed, in turn, for the package in
   ``DIR`` (another commit's ``sklearn_ggn`` folder).

2. Huber against squared error on the UCI regression sets (when found):
   the first splits of the benchmark's fixed 90/10 splits; on each, 5 % of
   the training targets (at random) moved by 50 standard deviations of the
   training targets, signs at random; defaults in
   ``make_pipeline(StandardScaler(), …)``; test RMSE on the clean test
   targets, beside both losses on the clean training targets.

Run: ``python -m benchmarks.robust [--data-home DIR] [--splits N]
[--repeats R] [--baseline DIR]`` (``DIR`` as ``benchmarks.uncertainty --uci``, default
``$UCI_REGRESSION_DATA``); writes ``results/robust_uci.md`` and ``.json``.
"""

import time

import numpy as np

from ._common import (
    LoadMonitor,
    machine_stamp,
    md_table,
    median,
    quiet_warnings,
    run_with_package,
    write_result,
)
from .uncertainty import UCI_SETS, uci_splits

NAME = "robust"
TITLE = "Robust where it says it is: first return_std cost, Huber on corrupted targets"


# ------------------------------------------------------------------ 1
# One process per measurement: the kernels are loaded (or compiled) by a
# small fit first, then the timed fit, the first return_std call (it builds
# the posterior) and a repeat call (the posterior kept).
_FIRST_STD = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
import sklearn_ggn
from sklearn.datasets import make_friedman1
from sklearn_ggn import GGNScoreRegressor
n = int(sys.argv[1])
X, y = make_friedman1(n_samples=n, noise=1.0, random_state=0)
GGNScoreRegressor(max_iter=1, random_state=0).fit(X[:200], y[:200]).predict(
    X[:10], return_std=True)
t0 = time.perf_counter()
est = GGNScoreRegressor(random_state=0).fit(X, y)
fit_s = time.perf_counter() - t0
t0 = time.perf_counter()
est.predict(X, return_std=True)
first_s = time.perf_counter() - t0
t0 = time.perf_counter()
est.predict(X, return_std=True)
repeat_s = time.perf_counter() - t0
import os
expected = os.path.realpath(sys.argv[2])
imported = os.path.realpath(os.path.dirname(os.path.dirname(sklearn_ggn.__file__)))
assert imported == expected, "imported another copy of the package"
print("RESULT", json.dumps({"fit_s": fit_s, "first_std_s": first_s,
                            "repeat_std_s": repeat_s,
                            "structure": est.uncertainty_,
                            "version": sklearn_ggn.__version__}))
"""


def _first_std_once(n_samples, pythonpath):
    return run_with_package(_FIRST_STD, pythonpath, n_samples, pythonpath)


def first_std_cost(n_samples=20000, repeats=3, baseline=None):
    """Medians over ``repeats`` fresh processes of the package in this tree
    and, when given, of the package found in the folder ``baseline`` (e.g.
    an earlier commit's ``git archive <commit> sklearn_ggn | tar -x -C
    DIR``), interleaved."""
    from pathlib import Path

    here = str(Path(__file__).resolve().parent.parent)
    packages = {"this tree": here}
    if baseline:
        packages["baseline"] = str(Path(baseline).resolve())
    # (the baseline's folder is this machine's: not recorded)
    out = {"n_samples": n_samples, "repeats": repeats,
           "baseline": bool(baseline), "runs": []}
    for path in packages.values():  # (untimed: fills the on-disk kernel cache)
        _first_std_once(2000, path)
    for r in range(repeats):
        for label, path in packages.items():
            run = _first_std_once(n_samples, path)
            out["runs"].append({"posterior": label, "repeat": r, **run})
            print(f"[robust] {label}: fit {run['fit_s']:.2f} s, first "
                  f"return_std {run['first_std_s']:.2f} s, repeat "
                  f"{run['repeat_std_s']:.2f} s", flush=True)
    return out


# ------------------------------------------------------------------ 2
def huber_uci(data_home, max_splits=3, fraction=0.05, shift=50.0):
    from pathlib import Path

    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_ggn import GGNScoreRegressor

    results = {}
    for name in UCI_SETS:
        folder = Path(data_home) / name
        if not (folder / "data.txt.gz").exists():
            continue
        X, y, splits = uci_splits(folder)
        runs = []
        for seed, (train, test) in enumerate(splits[:max_splits]):
            rng = np.random.default_rng(seed)
            y_train = y[train].copy()
            moved = rng.choice(train.size, int(round(fraction * train.size)),
                               replace=False)
            y_corrupt = y_train.copy()
            y_corrupt[moved] += (rng.choice([-1.0, 1.0], moved.size) * shift
                                 * y_train.std())
            run = {}
            for loss in ("huber", "squared_error"):
                for data, targets in (("corrupted", y_corrupt), ("clean", y_train)):
                    model = make_pipeline(StandardScaler(), GGNScoreRegressor(
                        loss=loss, random_state=seed))
                    t0 = time.perf_counter()
                    model.fit(X[train], targets)
                    fit_s = time.perf_counter() - t0
                    pred = model.predict(X[test])
                    run[f"{loss}_{data}"] = {
                        "rmse": float(np.sqrt(np.mean((pred - y[test]) ** 2))),
                        "fit_s": fit_s,
                        "target_scale": float(model[-1].target_scale_[0])}
            runs.append(run)
            print(f"[robust] {name} split {seed}: " + ", ".join(
                f"{k} {v['rmse']:.3f}" for k, v in run.items()), flush=True)
        results[name] = {"n_samples": int(len(y)), "runs": runs}
    return results


# ------------------------------------------------------------------ report
def _report(first, huber, huber_reused=False):
    lines = ["Command: `python -m benchmarks.robust --data-home DIR` (see the "
             "module's docstring).", ""]
    if first is not None:
        rows = []
        for label in ("this tree", "baseline"):
            runs = [r for r in first["runs"] if r["posterior"] == label]
            if not runs:
                continue
            fit = median([r["fit_s"] for r in runs])
            first_s = median([r["first_std_s"] for r in runs])
            ratios = [r["first_std_s"] / r["fit_s"] for r in runs]
            rows.append([f"{label} ({runs[0]['version']})", runs[0]["structure"],
                         f"{fit:.2f}",
                         f"{first_s:.2f}",
                         f"{median([r['repeat_std_s'] for r in runs]):.2f}",
                         f"{median(ratios):.2f} ({min(ratios):.2f}-"
                         f"{max(ratios):.2f})"])
        lines += [
            f"## First `return_std` call: make_friedman1, {first['n_samples']} "
            "rows", "",
            f"`GGNScoreRegressor()` defaults; `predict(X, return_std=True)` on "
            f"the training rows; medians over {first['repeats']} repeats "
            "(one fresh process each, the kernels loaded by a small fit "
            "first; the two packages timed in turn). Baseline: "
            f"{first.get('baseline_label') or ('given' if first.get('baseline') else '-')}.", "",
            md_table(["package", "structure", "fit [s]", "first return_std [s]",
                      "repeat [s]", "first / fit, per process: median (range)"],
                     rows), ""]
    if huber:
        rows = []
        for name, res in huber.items():
            runs = res["runs"]

            def mean(key, field="rmse"):
                return float(np.mean([r[key][field] for r in runs]))

            rows.append([name, res["n_samples"], len(runs),
                         f"{mean('squared_error_clean'):.3f}",
                         f"{mean('huber_clean'):.3f}",
                         f"{mean('squared_error_corrupted'):.3f}",
                         f"{mean('huber_corrupted'):.3f}",
                         f"{mean('squared_error_corrupted', 'target_scale'):.3g}",
                         f"{mean('huber_corrupted', 'target_scale'):.3g}"])
        lines += [
            "## Huber against squared error, 5 % of the training targets "
            "corrupted", "",
            "UCI regression sets, the first of the benchmark's fixed 90/10 "
            "splits; on each, 5 % of the training targets (at random) moved by "
            "50 standard deviations of the training targets, signs at random; "
            "`make_pipeline(StandardScaler(), GGNScoreRegressor(loss=...))` "
            "at the defaults. Test RMSE on the clean test targets (units of "
            "y), mean over the splits, and the mean `target_scale_` of the "
            "corrupted fits (squared error: the standard deviation; Huber: "
            "1.4826 × MAD)."
            + (" This table is taken from an earlier run of this script "
               "(`--huber-from`); the load line above is this run's."
               if huber_reused else ""), "",
            md_table(["set", "rows", "splits", "squared, clean", "Huber, clean",
                      "squared, corrupted", "Huber, corrupted",
                      "target_scale_ squared", "target_scale_ Huber"], rows), ""]
    return "\n".join(lines)


def main(argv=None):
    import argparse
    import os

    parser = argparse.ArgumentParser(prog="python -m benchmarks.robust",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--data-home", default=os.environ.get("UCI_REGRESSION_DATA"))
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-first-std", action="store_true")
    parser.add_argument("--baseline", default=None, metavar="DIR",
                        help="a folder holding another version's sklearn_ggn "
                             "package, timed beside this tree's")
    parser.add_argument("--baseline-label", default=None,
                        help="what the baseline is (e.g. its commit)")
    parser.add_argument("--huber-from", default=None, metavar="JSON",
                        help="take the Huber table from an earlier result "
                             "instead of fitting it again")
    args = parser.parse_args(argv)
    stamp = machine_stamp()
    with LoadMonitor() as monitor, quiet_warnings():
        first = (None if args.skip_first_std
                 else first_std_cost(repeats=args.repeats,
                                     baseline=args.baseline))
        if first is not None:
            first["baseline_label"] = args.baseline_label
        huber = {}
        if args.huber_from:
            import json

            with open(args.huber_from) as fh:
                huber = json.load(fh)["results"]["huber"]
        elif args.data_home and os.path.isdir(args.data_home):
            huber = huber_uci(args.data_home, args.splits)
        else:
            print("[robust] no UCI data folder: the Huber table is skipped")
    body = _report(first, huber, huber_reused=bool(args.huber_from))
    print(body)
    write_result(NAME, "uci", TITLE, stamp, monitor, body,
                 {"first_std": first, "huber": huber},
                 command="python -m benchmarks.robust")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
