"""The input map: piecewise-linear encodings, fixed and chosen from the data.

``python -m benchmarks.input_map [--data-home DIR] [--panel-home DIR]
[--realdata choice holdout] [--seeds 0 1 2]`` fits ``GGNScoreClassifier`` /
``GGNScoreRegressor`` with the plain map (``input_transform="robust_clip"``,
"plain"), with ``input_transform="robust_clip+ple"`` (the same map, and every
column of three or more distinct values also encoded on up to 16 quantile
bins) and at their defaults (``input_transform="auto"``: the watch's
held-out rows choose between the two), everything else default
(``random_state=seed``), and scikit-learn's
MLP and HistGradientBoosting defaults as peers, every model timed in the
same run:

* bundled: ``diabetes`` (R²), ``breast_cancer`` and ``digits`` (accuracy),
  70/30 splits with the split seed = the run seed, X as given (the MLP
  behind a ``StandardScaler``);
* generated, 1 000 training and 2 000 test rows per seed:
  ``friedman1`` (``make_friedman1``, noise 1: smooth effects),
  ``steps_and_bumps`` (``make_friedman1``'s inputs, y = 4·[x0 > 0.6]
  + 3·exp(−(x1 − 0.3)² / 0.005) + 2·[x2 > 0.3]·[x3 > 0.5] + 2·x4 +
  N(0, 0.25²): sharp effects in single columns), ``thresholds`` (a
  classifier: the sign of [x0 > 0.5] − [x1 < −0.3] + 0.5·[x2 > 0] − 0.2
  + N(0, 0.3²) on ten standard normal columns, five of them noise);
* with ``--data-home`` holding the UCI regression sets in the layout of
  ``uncertainty.py --uci``: ``concrete``, ``energy`` and ``yacht`` on their
  first fixed splits (one per seed), R²;
* with ``--panel-home`` holding the panel's data sets: ``pendigits``,
  ``avila``, ``letter`` and ``mnist10k`` on the panel's fixed splits
  (``benchmarks.panel``), accuracy;
* with ``--realdata``: the real tables of ``benchmarks.realdata`` (its
  sets, splits and ``ColumnTransformer`` pipelines; regressors' targets
  standardized).

Per task: mean scores over seeds, the median fit times (one BLAS thread,
after an untimed numba warm-up), how often ``"auto"`` chose the encodings;
per variant: the tasks within tolerance (0.01 R², 0.005 accuracy) of
HistGradientBoosting and of the MLP, wins and losses against the plain
map, and the geometric means of the time ratios. Writes
``results/input_map.md``.
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

from ._common import (
    LoadMonitor,
    machine_stamp,
    md_table,
    stamp_markdown,
    write_page,
)

OPTION = "robust_clip+ple"
UCI_SETS = ("concrete", "energy", "yacht")


def _steps_and_bumps(n, seed):
    from sklearn.datasets import make_friedman1

    X, _ = make_friedman1(n_samples=n, n_features=10, random_state=seed)
    rng = np.random.default_rng(seed)
    y = (4.0 * (X[:, 0] > 0.6) + 3.0 * np.exp(-(X[:, 1] - 0.3) ** 2 / 0.005)
         + 2.0 * (X[:, 2] > 0.3) * (X[:, 3] > 0.5) + 2.0 * X[:, 4]
         + 0.25 * rng.standard_normal(n))
    return X, y


def _thresholds(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 10))
    score = ((X[:, 0] > 0.5) - 1.0 * (X[:, 1] < -0.3) + 0.5 * (X[:, 2] > 0)
             - 0.2 + 0.3 * rng.standard_normal(n))
    return X, (score > 0).astype(int)


def _tasks(seeds, data_home):
    """``(name, kind, seed, X_train, y_train, X_test, y_test)`` of the
    bundled, generated and UCI tasks."""
    from sklearn.datasets import (
        load_breast_cancer,
        load_diabetes,
        load_digits,
        make_friedman1,
    )
    from sklearn.model_selection import train_test_split

    for name, loader, kind in (("diabetes", load_diabetes, "regressor"),
                               ("breast_cancer", load_breast_cancer, "classifier"),
                               ("digits", load_digits, "classifier")):
        X, y = loader(return_X_y=True)
        for seed in seeds:
            parts = train_test_split(X, y, test_size=0.3, random_state=seed,
                                     stratify=y if kind == "classifier" else None)
            yield (name, kind, seed, *parts[::2], *parts[1::2])
    for seed in seeds:
        X, y = make_friedman1(n_samples=3000, noise=1.0, random_state=seed)
        yield "friedman1", "regressor", seed, X[:1000], y[:1000], X[1000:], y[1000:]
        X, y = _steps_and_bumps(3000, seed)
        yield ("steps_and_bumps", "regressor", seed, X[:1000], y[:1000], X[1000:],
               y[1000:])
        X, y = _thresholds(3000, seed)
        yield "thresholds", "classifier", seed, X[:1000], y[:1000], X[1000:], y[1000:]
    if data_home is None:
        return
    from .uncertainty import uci_splits

    for name in UCI_SETS:
        folder = Path(data_home) / name
        if not folder.is_dir():
            print(f"[input_map] {name}: not found under {data_home}, skipped")
            continue
        X, y, splits = uci_splits(folder)
        for seed in seeds:
            train, test = splits[seed]
            yield name, "regressor", seed, X[train], y[train], X[test], y[test]


VARIANTS = {"plain": {"input_transform": "robust_clip"},
            "ple": {"input_transform": OPTION}, "auto": {}}
PEERS = ("mlp", "hgb")


def _real_tasks(sets, seeds):
    """The real tables of ``realdata.py`` (``--realdata``), in the pipeline
    that benchmark gives every model."""
    from . import realdata

    for name in (t for s in sets for t in realdata.SETS[s]):
        X, y, numeric, categorical, groups = realdata.load(name)
        regression = realdata.TABLES[name][2] == "regression"
        for seed in seeds:
            parts = realdata.split(X, y, groups, regression, seed)
            yield (name, "regressor" if regression else "classifier", seed,
                   *parts[::2], *parts[1::2], (numeric, categorical))


PANEL_TASKS = ("pendigits", "avila", "letter", "mnist10k")


def _panel_tasks(home, seeds):
    """The panel's real-data tasks (``--panel-home``) on their fixed
    splits, one fit per seed."""
    from .panel import Skip, load_task

    for name in PANEL_TASKS:
        try:
            X, y, X_test, y_test, _ = load_task(name, 0, home)
        except Skip as exc:
            print(f"[input_map] {exc}; skipped")
            continue
        for seed in seeds:
            yield name, "classifier", seed, X, y, X_test, y_test, None


def _model(kind, task_kind, seed, params, columns):
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.ensemble import (
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
    )
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

    regression = task_kind == "regressor"
    if columns is not None:
        from .realdata import make_model

        return make_model("ggn" if kind in VARIANTS else kind, regression, seed,
                          *columns, params)
    if kind == "hgb":
        return (HistGradientBoostingRegressor if regression
                else HistGradientBoostingClassifier)(random_state=seed)
    if kind == "mlp":
        pipe = make_pipeline(StandardScaler(), (
            MLPRegressor if regression else MLPClassifier)(random_state=seed))
        return (TransformedTargetRegressor(regressor=pipe,
                                           transformer=StandardScaler())
                if regression else pipe)
    return (GGNScoreRegressor if regression
            else GGNScoreClassifier)(random_state=seed, **params)


def _fit(model, X, y, X_test, y_test):
    from threadpoolctl import threadpool_limits

    # (the limit set again around each fit: HistGradientBoosting's OpenMP
    # runtime loads after a limit set at the start and would take every core)
    with threadpool_limits(1):
        t0 = time.perf_counter()
        model.fit(X, y)
        elapsed = time.perf_counter() - t0
    est = getattr(model, "regressor_", model)
    est = est[-1] if hasattr(est, "steps") else est
    return (float(model.score(X_test, y_test)), elapsed,
            getattr(est, "input_transform_", None),
            getattr(getattr(est, "input_map_", None), "n_features_out_", None))


def run(seeds, data_home, real_sets=(), panel_home=None):
    from threadpoolctl import threadpool_limits

    from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

    tasks = [(*t, None) for t in _tasks(seeds, data_home)]
    if panel_home is not None:
        tasks = [*tasks, *_panel_tasks(panel_home, seeds)]
    if real_sets:
        tasks = [*tasks, *_real_tasks(real_sets, seeds)]
    records = []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # (the kernels compiled or loaded before any timed fit)
        warm = np.random.default_rng(0).random((1500, 4))
        for params in VARIANTS.values():
            GGNScoreRegressor(max_iter=8, **params).fit(warm[:, :3], warm[:, 3])
            GGNScoreClassifier(max_iter=8, **params).fit(
                warm[:, :3], np.digitize(warm[:, 3], [0.3, 0.6]))
        for name, kind, seed, X, y, X_test, y_test, columns in tasks:
            record = {"task": name, "seed": seed, "rows": len(y),
                      "columns": X.shape[1], "kind": kind}
            for label in (*VARIANTS, *PEERS):
                model = _model(label, kind, seed, VARIANTS.get(label, {}), columns)
                score, seconds, chosen, width = _fit(model, X, y, X_test, y_test)
                record[label], record[label + "_s"] = score, seconds
                if label == "ple":
                    record["width"] = width
                if label == "auto":
                    record["chosen"] = chosen
            records.append(record)
            print({k: round(v, 4) if isinstance(v, float) else v
                   for k, v in record.items()}, flush=True)
    return records


def _tolerance(record):
    return 0.01 if record["kind"] == "regressor" else 0.005


def _table(records):
    rows = []
    for name in dict.fromkeys(r["task"] for r in records):
        mine = [r for r in records if r["task"] == name]

        def mean(key, mine=mine):
            return float(np.mean([r[key] for r in mine]))

        def median(key, mine=mine):
            return float(np.median([r[key] for r in mine]))

        chosen = sum(r["chosen"] == OPTION for r in mine)
        rows.append([name, mine[0]["rows"], mine[0]["columns"],
                     f"{mean('plain'):.4f}", f"{mean('ple') - mean('plain'):+.4f}",
                     f"{mean('auto') - mean('plain'):+.4f}", f"{chosen}/{len(mine)}",
                     f"{mean('hgb'):.4f}", f"{mean('mlp'):.4f}",
                     median("plain_s"),
                     f"{median('ple_s') / median('plain_s'):.2f}",
                     f"{median('auto_s') / median('plain_s'):.2f}",
                     f"{median('auto_s') / median('mlp_s'):.2f}"])
    return md_table(["task", "train rows", "columns", "plain score",
                     "ple − plain", "auto − plain", "auto chose ple",
                     "hgb score", "mlp score", "plain fit s", "ple / plain time",
                     "auto / plain time", "auto / mlp time"], rows)


def _summary(records):
    """Per variant: tasks within tolerance of HGB and of the MLP (means over
    seeds), wins and losses against the plain map by more than the tolerance,
    and the geometric means of the median time ratios."""
    tasks = list(dict.fromkeys(r["task"] for r in records))
    rows = []
    for label in VARIANTS:
        hgb = mlp = wins = losses = 0
        to_mlp, to_plain = [], []
        for name in tasks:
            mine = [r for r in records if r["task"] == name]
            tol = _tolerance(mine[0])
            score = np.mean([r[label] for r in mine])
            hgb += score >= np.mean([r["hgb"] for r in mine]) - tol
            mlp += score >= np.mean([r["mlp"] for r in mine]) - tol
            diff = score - np.mean([r["plain"] for r in mine])
            wins, losses = wins + (diff > tol), losses + (diff < -tol)
            seconds = np.median([r[label + "_s"] for r in mine])
            to_mlp.append(seconds / np.median([r["mlp_s"] for r in mine]))
            to_plain.append(seconds / np.median([r["plain_s"] for r in mine]))
        rows.append([label, f"{hgb}/{len(tasks)}", f"{mlp}/{len(tasks)}",
                     wins, losses, f"{np.exp(np.mean(np.log(to_mlp))):.2f}",
                     f"{np.exp(np.mean(np.log(to_plain))):.2f}"])
    return md_table(["input_transform", "within tolerance of HGB",
                     "within tolerance of the MLP", "better than plain",
                     "worse than plain", "time / MLP (geo-mean)",
                     "time / plain (geo-mean)"], rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--data-home", default=None,
                        help="a folder with the UCI regression sets (optional)")
    parser.add_argument("--realdata", nargs="*", default=[],
                        choices=["choice", "holdout"],
                        help="add the real tables of benchmarks.realdata")
    parser.add_argument("--panel-home", default=None,
                        help="a folder with the panel's data sets: add "
                             + ", ".join(PANEL_TASKS))
    args = parser.parse_args(argv)
    with LoadMonitor() as monitor:
        records = run(args.seeds, args.data_home, args.realdata, args.panel_home)
    table, summary = _table(records), _summary(records)
    print(table, summary, sep="\n\n")
    fits = md_table(["task", "seed", "plain", "ple", "auto", "auto chose",
                     "hgb", "mlp", "plain s", "ple s", "auto s", "mlp s",
                     "network inputs (ple)"],
                    [[r["task"], r["seed"], r["plain"], r["ple"], r["auto"],
                      r["chosen"], r["hgb"], r["mlp"], r["plain_s"], r["ple_s"],
                      r["auto_s"], r["mlp_s"], r["width"]] for r in records])
    command = ("python -m benchmarks.input_map"
               + (" --data-home DIR" if args.data_home else "")
               + (" --panel-home DIR" if args.panel_home else "")
               + (" --realdata " + " ".join(args.realdata) if args.realdata else ""))
    text = (f"# The input map: piecewise-linear encodings, fixed and chosen\n\n"
            f"Generated by `{command}`.\n\n"
            f"Seeds {args.seeds}; scores are means over the seeds (R² for "
            f"regressors, accuracy for classifiers); times are median fit "
            f"seconds over the seeds, one BLAS thread, warm kernels, every "
            f"model timed in this run. Tolerance: 0.01 R², 0.005 accuracy.\n\n"
            f"{monitor.markdown()}\n\n## Summary\n\n{summary}\n\n"
            f"## Per task\n\n{table}\n\n## Every fit\n\n{fits}\n\n"
            f"## What was run\n\n{__doc__.strip()}\n\n"
            f"## Machine\n\n{stamp_markdown(machine_stamp())}\n")
    write_page("input_map.md", text)


if __name__ == "__main__":
    main()
