"""What the overfitting watch's held-out rows say about the epochs after it.

``early_stopping="auto"`` holds out up to 500 rows for the first 15 epochs,
then (without overfitting) lets them join and the fit goes on until its own
stall rule ends it. Could the held-out rows end the fit sooner, as the MLP's
``early_stopping=True`` does, or tell at epoch 15 whether the epochs after
it will help? ``python -m benchmarks.tail`` answers on the panel's
mini-batch tasks (``benchmarks/panel.py``; the full-batch ones have no
watch):

* the watch's split is reproduced: the default fit's own watch says how
  many rows it held out and by which rule it decides
  (``overfitting_watch_``); the split is ``train_test_split`` of that many
  rows, stratified for classifiers, seeded by ``random_state``;
* GGN-SCORE (defaults, ``early_stopping=False``, and the τ of all rows,
  as the watch takes it) is fit on the watch's training rows with the
  held-out rows as ``X_val``, to its own end (its first 15 epochs are the
  default fit's watch, ``tests/test_benchmarks_seams.py``): per
  epoch the held-out risk and score (``history_``) and the test score (a
  ``ScoringMonitor`` whose scorer scores the test rows);
* the panel's default GGN-SCORE and MLP fits (``panel.fit_and_score``) of
  the same split and seed, for the comparison.

Tables: per fit, the held-out risk's last minimum and its rise at epoch
15 against what the epochs after 15 did to the test score; and for rules
that stop on a held-out plateau (no new best for ``k`` epochs after epoch
``start``, the parameters of the best held-out epoch or of the last one),
the fits more than 0.005 accuracy / 0.01 R² below the MLP and the
geometric mean of the time ratios (time of the stopping epoch from
``history_["time"]``, which leaves the validation evaluations out; the
monitor's test scoring is outside it too). The held-out fits train on the
watch's rows only (no join), so a plateau rule here is the MLP's
``early_stopping=True`` with GGN-SCORE's step. A third table replays the
watch on the curves with the package's own rule object
(``sklearn_ggn.engine.OverfittingWatch``, configured as the default fit's
``overfitting_watch_["rule"]``): where a regressor's watch, which goes on
past 15 epochs while it may be memorizing, ends and what it decides.

    python -m benchmarks.tail [--tasks digits letter] [--seeds 0 1 2]
                              [--data-home DATA] [--label LABEL]

One BLAS thread. ``results/tail.md`` (``tail_<label>.md``) and ``.json``
keep the curves and tables.
"""
import argparse
import json
import warnings

import numpy as np

from ._common import (
    RESULTS_DIR,
    _jsonable,
    geometric_mean,
    machine_stamp,
    md_table,
    stamp_markdown,
)

FULL_BATCH = ("breast_cancer", "diabetes")
# the epoch the tables look at: the end of the watch's first epochs
AT_EPOCH = 15
# (start, k, by, deliver) of the plateau rules
RULES = [(start, k, by, deliver) for start in (10, 15) for k in (3, 5, 8)
         for by in ("score", "risk") for deliver in ("best", "last")]


WATCH_REPLAY = """The overfitting watch replayed on each fit's curves by the
package's own rule object, configured as the default fit's watch (a
regressor's goes on past its first epochs while the held-out risk stands
above the training risk and its minimum): where it ends, whether it
refits (at the best epoch of the held-out score; its test score here is
the fit on the watch's rows, the refit trains on all rows) or lets the rows
join. The default fit's own watch is the same rule on the same epochs (the
seam tests check the first epochs and the replay's ending)."""


def default_watch(task, seed, data):
    """The default fit's ``overfitting_watch_`` (None without a watch)."""
    from .panel import _final_estimator, is_regression, make_model

    X_tr, y_tr = data[:2]
    model = make_model("ggn", is_regression(task), seed, {}, task)
    model.fit(X_tr, y_tr)
    return _final_estimator(model).overfitting_watch_


def watch_split(y, n_val, classifier, seed):
    """``(train, held-out)`` indices of the watch's split of ``n_val`` rows."""
    from sklearn.model_selection import train_test_split

    train, val = train_test_split(np.arange(len(y)), test_size=n_val,
                                  random_state=np.random.RandomState(seed),
                                  stratify=y if classifier else None)
    return np.sort(train), np.sort(val)


def curves(task, seed, data, watch=None):
    """Per-epoch curves of the fit on the watch's training rows (None when
    the default fit has no watch); ``watch``: the default fit's
    ``overfitting_watch_`` when known."""
    from sklearn.callback import ScoringMonitor

    from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

    from .panel import _preprocessor, is_regression

    if watch is None:
        watch = default_watch(task, seed, data)
    if watch is None:
        return None
    X_tr, y_tr, X_te, y_te = data
    regression = is_regression(task)
    pre = _preprocessor(task, "ggn").fit(X_tr)
    A, B = pre.transform(X_tr), pre.transform(X_te)
    y_tr, y_te = np.asarray(y_tr), np.asarray(y_te)
    if regression:  # as the panel's TransformedTargetRegressor (R² is the same)
        mean, std = y_tr.mean(), y_tr.std()
        y_tr, y_te = (y_tr - mean) / std, (y_te - mean) / std
    cls = GGNScoreRegressor if regression else GGNScoreClassifier
    # τ as the watch takes it: tau="auto"'s mini-batch rule, max(1e-4, 1/n)
    # capped at 0.01, over all n training rows (the watch's fit on part of
    # them counts them all)
    tau = min(0.01, max(1e-4, 1.0 / len(y_tr)))
    est = cls(random_state=seed, early_stopping=False, tau=tau)
    train, val = watch_split(y_tr, watch["validation_rows"], not regression, seed)
    # the monitor scores the estimator as it stands after each epoch; its
    # scorer ignores the rows it is given and scores the test rows
    monitor = ScoringMonitor(
        scoring=lambda model, X, y, **metadata: {"test": model.score(B, y_te)})
    est.set_callbacks(monitor)
    est.fit(A[train], y_tr[train], X_val=A[val], y_val=y_tr[val])
    rows = [r for r in monitor.get_logs().data if r["task_name"] == "epoch"]
    return {"n_train": int(len(train)), "n_val": int(len(val)),
            "epochs": int(est.n_iter_), "watch_rule": dict(watch["rule"]),
            "objective": list(est.loss_curve_),
            "risk": list(est.history_["risk"]),
            "val_risk": list(est.history_["validation_risk"]),
            "val_score": list(est.history_["validation_score"]),
            "time": list(est.history_["time"]),
            "test": [float(r["test"]) for r in rows]}


def plateau_stop(cur, start, k, by, deliver):
    """``(stopping epoch, delivered epoch)`` (1-based) of a plateau rule."""
    values = (np.asarray(cur["val_score"], dtype=float) if by == "score"
              else -np.asarray(cur["val_risk"], dtype=float))
    best, best_epoch = -np.inf, 0
    for epoch, value in enumerate(values):
        if value > best:
            best, best_epoch = value, epoch
        if epoch + 1 >= start and epoch - best_epoch >= k:
            stop = epoch
            break
    else:
        stop = len(values) - 1
    return stop + 1, (best_epoch if deliver == "best" else stop) + 1


def replay_watch(cur, rule):
    """The overfitting watch replayed on a fit's curves by the package's
    rule object, configured by ``rule`` (a default fit's
    ``overfitting_watch_["rule"]``). Returns ``(last watched epoch, "refit"
    or "join", best epoch or None)``, epochs 1-based ("join" also when the
    curves end first)."""
    from sklearn_ggn.engine import OverfittingWatch

    watch = OverfittingWatch(**rule)
    for epoch, record in enumerate(
            ({"risk": r, "validation_risk": v, "validation_score": s}
             for r, v, s in zip(cur["risk"], cur["val_risk"], cur["val_score"],
                                strict=True)), start=1):
        if watch(record, None, epoch) and watch.overfitting_at is not None:
            return epoch, "refit", watch.best_epoch(cur["val_risk"][:epoch])
        if watch.joined or epoch >= rule["longest"]:
            return epoch, "join", None
    return len(cur["val_risk"]), "join", None


def _tolerance(task):
    from .panel import is_regression

    return 0.01 if is_regression(task) else 0.005


def tables(results):
    per_fit, rule_rows = [], []
    for r in results:
        c = r["curves"]
        risk = np.asarray(c["val_risk"][:AT_EPOCH])
        at = min(AT_EPOCH, len(c["test"])) - 1
        per_fit.append([r["task"], r["seed"], c["n_val"],
                        int(np.argmin(risk)) + 1, float(risk[-1] / risk.min()),
                        c["test"][at], c["test"][-1],
                        c["test"][-1] - c["test"][at], c["epochs"],
                        r["ggn"]["score"], r["mlp"]["score"]])
    for start, k, by, deliver in RULES:
        gaps, ratios = [], []
        for r in results:
            c = r["curves"]
            stop, chosen = plateau_stop(c, start, k, by, deliver)
            gaps.append((c["test"][chosen - 1] - r["mlp"]["score"],
                         _tolerance(r["task"])))
            ratios.append(c["time"][stop - 1] / r["mlp"]["time"])
        misses = sum(gap < -tol for gap, tol in gaps)
        rule_rows.append([start, k, by, deliver, misses, len(gaps),
                          min(g for g, _ in gaps), geometric_mean(ratios)])
    watch_rows = []
    for r in results:
        c = r["curves"]
        end, how, best = replay_watch(c, c["watch_rule"])
        at = min(AT_EPOCH, len(c["risk"])) - 1
        watch_rows.append([r["task"], r["seed"],
                           float(c["val_risk"][at] / c["risk"][at]), end, how,
                           "-" if best is None else best,
                           "-" if best is None else c["test"][best - 1],
                           r["ggn"]["score"]])
    default_misses = sum(r["ggn"]["score"] - r["mlp"]["score"]
                         < -_tolerance(r["task"]) for r in results)
    default_ratio = geometric_mean([r["ggn"]["time"] / r["mlp"]["time"]
                                   for r in results])
    rule_rows.append(["default fit (watch, join, stall rule)", "-", "-", "-",
                      default_misses, len(results),
                      min(r["ggn"]["score"] - r["mlp"]["score"] for r in results),
                      default_ratio])
    return per_fit, rule_rows, watch_rows


def main(argv=None):
    from .panel import (
        TASKS,
        Skip,
        _data_home,
        fit_and_score,
        load_task,
        warm_up,
    )

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=None)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--label", default=None)
    args = parser.parse_args(argv)
    # (the panel's two tasks of fewer than 512 training rows are fit in
    # full batch, without a watch)
    tasks = args.tasks or [t for t in TASKS if t not in FULL_BATCH]
    home = _data_home(args)
    warm_up({})
    results = []
    for task in tasks:
        for seed in args.seeds:
            try:
                data = load_task(task, seed, home)[:4]
            except Skip as exc:
                print(f"skip {exc}")
                break
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cur = curves(task, seed, data)
            if cur is None:
                print(f"{task} seed {seed}: no watch")
                continue
            entry = {"task": task, "seed": seed, "curves": cur}
            for kind in ("ggn", "mlp"):
                entry[kind] = fit_and_score(kind, task, seed, data, {})
            results.append(entry)
            at = min(AT_EPOCH, len(cur["test"])) - 1
            print(f"{task} seed {seed}: test at epoch {at + 1} "
                  f"{cur['test'][at]:.4f}, at its end ({cur['epochs']}) "
                  f"{cur['test'][-1]:.4f}; default {entry['ggn']['score']:.4f}, "
                  f"MLP {entry['mlp']['score']:.4f}", flush=True)
    per_fit, rule_rows, watch_rows = tables(results)
    t1 = md_table(["task", "seed", "held-out rows", "held-out risk's min (epoch)",
                   f"its rise at {AT_EPOCH}", f"test at {AT_EPOCH}",
                   "test at the end", "end − 15", "epochs", "default fit",
                   "MLP"], per_fit)
    t2 = md_table(["start", "k", "by", "deliver", "fits below the MLP", "fits",
                   "worst gap to the MLP", "time / MLP (geometric mean)"],
                  rule_rows)
    t3 = md_table(["task", "seed", f"held-out / training risk at {AT_EPOCH}",
                   "watch ends at", "then", "best epoch", "test at the best epoch",
                   "default fit"], watch_rows)
    stamp = machine_stamp()
    text = (f"# The watch's held-out rows and the epochs after it\n\n"
            f"{stamp_markdown(stamp)}\n\n{__doc__.strip()}\n\n"
            f"## Per fit\n\n{t1}\n\n## Plateau rules\n\n{t2}\n\n"
            f"## The watch replayed on these curves\n\n{WATCH_REPLAY}\n\n{t3}\n")
    name = f"tail_{args.label}" if args.label else "tail"
    (RESULTS_DIR / f"{name}.md").write_text(text, encoding="utf-8")
    (RESULTS_DIR / f"{name}.json").write_text(
        json.dumps(_jsonable({"benchmark": "tail", "seeds": args.seeds,
                              "machine": stamp, "results": results}), indent=1),
        encoding="utf-8")
    print(t2)
    print(f"wrote {RESULTS_DIR / (name + '.md')}")


if __name__ == "__main__":
    main()
