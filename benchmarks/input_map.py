"""The input map's piecewise-linear encodings against the default map.

``python -m benchmarks.input_map [--data-home DIR] [--seeds 0 1 2]`` fits
``GGNScoreClassifier`` / ``GGNScoreRegressor`` with their defaults
(``input_transform="robust_clip"``) and with
``input_transform="robust_clip+ple"`` (the same map, and every column of
three or more distinct values also encoded on up to 16 quantile bins),
everything else default (``random_state=seed``), on X as given:

* bundled: ``diabetes`` (R²), ``breast_cancer`` and ``digits`` (accuracy),
  70/30 splits with the split seed = the run seed;
* generated, 1 000 training and 2 000 test rows per seed:
  ``friedman1`` (``make_friedman1``, noise 1: smooth effects),
  ``steps_and_bumps`` (``make_friedman1``'s inputs, y = 4·[x0 > 0.6]
  + 3·exp(−(x1 − 0.3)² / 0.005) + 2·[x2 > 0.3]·[x3 > 0.5] + 2·x4 +
  N(0, 0.25²): sharp effects in single columns), ``thresholds`` (a
  classifier: the sign of [x0 > 0.5] − [x1 < −0.3] + 0.5·[x2 > 0] − 0.2
  + N(0, 0.3²) on ten standard normal columns, five of them noise);
* with ``--data-home`` holding the UCI regression sets in the layout of
  ``uncertainty.py --uci``: ``concrete``, ``energy`` and ``yacht`` on their
  first fixed splits (one per seed), R².

Per task: the mean and the standard deviation over seeds of the test
score, the mean fit time of both (one BLAS thread, after an untimed
numba warm-up), the network's mean input width with the encodings, and
HistGradientBoosting's mean score as a reference of what the data allow.
Writes ``results/input_map.md`` (the means and every fit).
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
    """``(name, kind, seed, X_train, y_train, X_test, y_test)``."""
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


def _fit(model, X, y, X_test, y_test):
    t0 = time.perf_counter()
    model.fit(X, y)
    return model.score(X_test, y_test), time.perf_counter() - t0


def run(seeds, data_home):
    from sklearn.ensemble import (
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
    )
    from threadpoolctl import threadpool_limits

    from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

    records = []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # (the kernels compiled or loaded before any timed fit)
        warm = np.random.default_rng(0).random((50, 4))
        GGNScoreRegressor(max_iter=2).fit(warm[:, :3], warm[:, 3])
        for name, kind, seed, X, y, X_test, y_test in _tasks(seeds, data_home):
            Est = GGNScoreClassifier if kind == "classifier" else GGNScoreRegressor
            Hgb = (HistGradientBoostingClassifier if kind == "classifier"
                   else HistGradientBoostingRegressor)
            record = {"task": name, "seed": seed, "rows": len(X),
                      "columns": X.shape[1]}
            record["default"], record["default_s"] = _fit(
                Est(random_state=seed), X, y, X_test, y_test)
            option = Est(random_state=seed, input_transform=OPTION)
            record["ple"], record["ple_s"] = _fit(option, X, y, X_test, y_test)
            record["width"] = option.input_map_.n_features_out_
            record["hgb"], _ = _fit(Hgb(random_state=seed), X, y, X_test, y_test)
            records.append(record)
            print({k: round(v, 4) if isinstance(v, float) else v
                   for k, v in record.items()}, flush=True)
    return records


def _table(records):
    rows = []
    for name in dict.fromkeys(r["task"] for r in records):
        mine = [r for r in records if r["task"] == name]

        def mean(key, mine=mine):
            return float(np.mean([r[key] for r in mine]))

        def sd(key, mine=mine):
            return float(np.std([r[key] for r in mine]))

        rows.append([name, mine[0]["rows"], mine[0]["columns"], mean("width"),
                     f"{mean('default'):.4f} ± {sd('default'):.4f}",
                     f"{mean('ple'):.4f} ± {sd('ple'):.4f}",
                     f"{mean('ple') - mean('default'):+.4f}",
                     mean("default_s"), mean("ple_s"),
                     mean("ple_s") / mean("default_s"), f"{mean('hgb'):.4f}"])
    return md_table(["task", "train rows", "columns", "network inputs (ple)",
                     "default score", "ple score", "ple − default",
                     "default fit s", "ple fit s", "time ratio", "hgb score"],
                    rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--data-home", default=None,
                        help="a folder with the UCI regression sets (optional)")
    args = parser.parse_args(argv)
    with LoadMonitor() as monitor:
        records = run(args.seeds, args.data_home)
    table = _table(records)
    print(table)
    fits = md_table(["task", "seed", "default score", "ple score",
                     "default fit s", "ple fit s", "network inputs (ple)",
                     "hgb score"],
                    [[r["task"], r["seed"], r["default"], r["ple"],
                      r["default_s"], r["ple_s"], r["width"], r["hgb"]]
                     for r in records])
    command = "python -m benchmarks.input_map" + (
        " --data-home DIR" if args.data_home else "")
    text = (f"# Piecewise-linear encodings against the default input map\n\n"
            f"Generated by `{command}`.\n\n"
            f"Seeds {args.seeds}; scores are means ± standard deviations over "
            f"the seeds (R² for regressors, accuracy for classifiers); times "
            f"are mean fit seconds with one BLAS thread.\n\n"
            f"{monitor.markdown()}\n\n{table}\n\n## Every fit\n\n{fits}\n\n"
            f"## What was run\n\n{__doc__.strip()}\n\n"
            f"## Machine\n\n{stamp_markdown(machine_stamp())}\n")
    write_page("input_map.md", text)


if __name__ == "__main__":
    main()
