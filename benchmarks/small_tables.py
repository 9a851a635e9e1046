"""Small regression tables: τ and the input map by the evidence, or not.

``python -m benchmarks.small_tables [--data-home DIR] [--realdata]
[--seeds 0 1 2] [--rows 500]`` fits ``GGNScoreRegressor`` in full batch with
its defaults (``tau="auto"``: τ by generalized cross-validation of the
network linearized at its initial weights, then the fit climbs the Laplace
evidence of the fitted network by half decades, warm-started;
``input_transform="auto"``: that fit with the plain map and with the
piecewise-linear encodings, the one of higher evidence kept), with
``input_transform="robust_clip"`` (the plain map's fit alone) and with
``tau="gcv"`` (the criterion's τ alone, the plain map), everything else default
(``random_state=seed``), and scikit-learn's ``MLPRegressor`` defaults as the
peer, every model timed in the same run, targets standardized (``TransformedTargetRegressor``):

* bundled: ``diabetes`` (70/30 split, the split seed = the run seed);
* generated: ``friedman1`` with 200 and 500 training rows (noise 1),
  ``friedman2`` (noise 125) and ``friedman3`` (noise 0.1) with 500, 2 000
  test rows;
* with ``--data-home`` holding the UCI regression sets in the layout of
  ``uncertainty.py --uci``: each set's fixed split ``seed``; the sets of more
  than 1 024 training rows subsampled to ``--rows`` training rows;
* with ``--realdata``: the regression tables of ``benchmarks.realdata``
  (its splits and ``ColumnTransformer`` pipelines), their training part
  subsampled to ``--rows`` rows (test rows as they are).

Per task: RMSE over the MLP's (mean RMSE over seeds), the τ chosen, on how
many seeds the default took the encodings, median fit seconds; per variant: the mean and geometric mean of the RMSE ratios,
the tasks above 1.05x the MLP, the tasks better / worse than the default by
more than 2 %, and the geometric mean of the time ratios. Writes
``results/small_tables.md``.
"""

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np

from ._common import LoadMonitor, machine_stamp, md_table, stamp_markdown, write_page

VARIANTS = {"default": {}, "robust_clip": {"input_transform": "robust_clip"},
            "gcv": {"tau": "gcv"}}


def _tasks(seeds, data_home, realdata, rows):
    """``(name, seed, (X_train, y_train, X_test, y_test), columns)``;
    ``columns`` the real tables' ``(numeric, categorical)``, else None."""
    from sklearn.datasets import (
        load_diabetes,
        make_friedman1,
        make_friedman2,
        make_friedman3,
    )
    from sklearn.model_selection import train_test_split

    X, y = load_diabetes(return_X_y=True)
    for seed in seeds:
        parts = train_test_split(X, y, test_size=0.3, random_state=seed)
        yield "diabetes", seed, (parts[0], parts[2], parts[1], parts[3]), None
    for seed in seeds:
        for n in (200, 500):
            X, y = make_friedman1(n + 2000, noise=1.0, random_state=seed)
            yield f"friedman1-{n}", seed, (X[:n], y[:n], X[n:], y[n:]), None
        for name, make, noise in (("friedman2", make_friedman2, 125.0),
                                  ("friedman3", make_friedman3, 0.1)):
            X, y = make(2500, noise=noise, random_state=seed)
            yield f"{name}-500", seed, (X[:500], y[:500], X[500:], y[500:]), None
    if data_home is not None:
        from .uncertainty import uci_splits

        for name in sorted(os.listdir(data_home)):
            X, y, splits = uci_splits(Path(data_home) / name)
            for seed in seeds:
                train, test = splits[seed]
                if len(train) > 1024:
                    train = np.random.RandomState(seed).choice(train, rows,
                                                               replace=False)
                    name_ = f"{name}-{rows}"
                else:
                    name_ = name
                yield name_, seed, (X[train], y[train], X[test], y[test]), None
    if realdata:
        from . import realdata as rd

        for name, spec in rd.TABLES.items():
            if spec[2] != "regression":
                continue
            X, y, numeric, categorical, groups = rd.load(name)
            for seed in seeds:
                X_tr, X_te, y_tr, y_te = rd.split(X, y, groups, True, seed)
                keep = np.random.RandomState(seed).choice(
                    len(y_tr), min(rows, len(y_tr)), replace=False)
                yield (f"{name}-{rows}", seed,
                       (X_tr.iloc[keep], np.asarray(y_tr)[keep], X_te, y_te),
                       (numeric, categorical))


def _model(kind, seed, columns, params):
    if columns is None:
        from .panel import make_model

        return make_model(kind, True, seed, params)
    from .realdata import make_model

    return make_model(kind, True, seed, *columns, params)


def _final(model):
    return model.regressor_[-1]


def run(seeds, data_home, realdata, rows):
    from threadpoolctl import threadpool_limits

    from .realdata import warm_up

    warm_up({})
    records = []
    for name, seed, (X_tr, y_tr, X_te, y_te), columns in _tasks(
            seeds, data_home, realdata, rows):
        record = {"task": name, "seed": seed}
        for label, kind, params in [(v, "ggn", p) for v, p in VARIANTS.items()] + [
                ("mlp", "mlp", {})]:
            model = _model(kind, seed, columns, params)
            with threadpool_limits(limits=1), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                model.fit(X_tr, y_tr)
                elapsed = time.perf_counter() - t0
                residual = np.asarray(y_te, dtype=float) - model.predict(X_te)
            record[label] = float(np.sqrt(np.mean(residual ** 2)))
            record[label + "_s"] = elapsed
            if kind == "ggn":
                record["tau " + label] = float(_final(model).tau_)
                record["map " + label] = _final(model).input_transform_
        print(name, seed, {k: round(v, 4) for k, v in record.items()
                           if isinstance(v, float)}, flush=True)
        records.append(record)
    return records


def _by_task(records):
    tasks = {}
    for r in records:
        tasks.setdefault(r["task"], []).append(r)
    return tasks


def _table(records):
    rows = []
    for task, rs in _by_task(records).items():
        mlp = np.mean([r["mlp"] for r in rs])
        rows.append([task, len(rs)]
                    + [np.mean([r[v] for r in rs]) / mlp for v in VARIANTS]
                    + [np.median([r["tau " + v] for r in rs]) for v in VARIANTS]
                    + [f"{sum(r['map default'] != 'robust_clip' for r in rs)}/{len(rs)}"]
                    + [np.median([r[k + "_s"] for r in rs])
                       for k in (*VARIANTS, "mlp")])
    return md_table(["task", "seeds"] + [f"{v} RMSE/MLP" for v in VARIANTS]
                    + [f"{v} τ (median)" for v in VARIANTS]
                    + ["default took the encodings"]
                    + [f"{k} s" for k in (*VARIANTS, "mlp")], rows)


def _summary(records):
    tasks = _by_task(records)
    rows = []
    for v in VARIANTS:
        ratio, to_default, time_mlp, time_default = [], [], [], []
        for rs in tasks.values():
            mean = np.mean([r[v] for r in rs])
            ratio.append(mean / np.mean([r["mlp"] for r in rs]))
            to_default.append(mean / np.mean([r["default"] for r in rs]))
            seconds = np.median([r[v + "_s"] for r in rs])
            time_mlp.append(seconds / np.median([r["mlp_s"] for r in rs]))
            time_default.append(seconds / np.median([r["default_s"] for r in rs]))
        ratio, to_default = np.array(ratio), np.array(to_default)
        rows.append([v, ratio.mean(), np.exp(np.log(ratio).mean()),
                     f"{int(np.sum(ratio > 1.05))}/{len(ratio)}",
                     int(np.sum(to_default < 0.98)), int(np.sum(to_default > 1.02)),
                     np.exp(np.mean(np.log(time_default))),
                     np.exp(np.mean(np.log(time_mlp)))])
    return md_table(["variant", "RMSE/MLP (mean)", "(geometric)", "tasks > 1.05x MLP",
                     "better than default by > 2 %", "worse by > 2 %",
                     "time / default (geo)", "time / MLP (geo)"], rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--data-home", default=None,
                        help="a folder with the UCI regression sets (optional)")
    parser.add_argument("--realdata", action="store_true",
                        help="add the regression tables of benchmarks.realdata")
    parser.add_argument("--rows", type=int, default=500,
                        help="training rows of the subsampled tables")
    args = parser.parse_args(argv)
    with LoadMonitor() as monitor:
        records = run(args.seeds, args.data_home, args.realdata, args.rows)
    table, summary = _table(records), _summary(records)
    print(table, summary, sep="\n\n")
    command = ("python -m benchmarks.small_tables"
               + (" --data-home DIR" if args.data_home else "")
               + (" --realdata" if args.realdata else ""))
    text = (f"# Small regression tables: τ and the input map by the evidence, "
            f"or not\n\n"
            f"Generated by `{command}`.\n\n"
            f"Seeds {args.seeds}; RMSE ratios are mean RMSE over the seeds "
            f"divided by the MLP's; times are median fit seconds over the "
            f"seeds, one BLAS thread, warm kernels, every model timed in this "
            f"run.\n\n{monitor.markdown()}\n\n## Summary\n\n{summary}\n\n"
            f"## Per task\n\n{table}\n\n"
            f"## What was run\n\n{__doc__.strip()}\n\n"
            f"## Machine\n\n{stamp_markdown(machine_stamp())}\n")
    write_page("small_tables.md", text)


if __name__ == "__main__":
    main()
