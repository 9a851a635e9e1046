"""The peers' columns of ``panel.py`` and ``realdata.py``: RealMLP-TD fits
through :mod:`._realmlp`, the reuse of an earlier run's peer fits
(``--peer-results FILE.json``), and the comparison lines of the summary.

Reuse: a peer's fit (``realmlp``, ``hgb`` or ``mlp``) of an earlier run of
the same benchmark is taken instead of a new fit when the task and seed
match and so does the test split (a hash of its rows and targets, kept
with every fit). GGN-SCORE is always fitted. A reused fit keeps its own time,
measured in that run: the page then says so, with that run's date and load,
since a time ratio across two runs depends on both runs' load.
"""

import hashlib
import json
import os
import statistics

import numpy as np

from ._common import geometric_mean
from ._realmlp import ENV_VAR, RealMLP, realmlp_python  # noqa: F401 (used by the benchmarks)

PEERS = ("mlp", "hgb", "realmlp")
NAMES = {"ggn": "GGN-SCORE", "mlp": "MLP", "hgb": "HistGB", "realmlp": "RealMLP-TD"}
# GGN-SCORE counts as "within" a peer when its mean score over seeds is at
# most this far below the peer's (or above it)
TOLERANCE = {"classification": 0.005, "regression": 0.01}


def add_arguments(parser):
    parser.add_argument("--realmlp-python", default=None,
                        help="Python interpreter with torch and pytabkit for "
                             f"the realmlp column (else ${ENV_VAR})")
    parser.add_argument("--peer-results", default=None,
                        help="JSON of an earlier run of this benchmark: reuse "
                             "its realmlp / hgb / mlp fits of the same "
                             "task, seed and split")
    parser.add_argument("--reuse", nargs="+", choices=PEERS, default=list(PEERS),
                        help="the peers whose fits --peer-results gives "
                             "(default: all three)")
    parser.add_argument("--json", default=None,
                        help="where to write the per-fit JSON (default: "
                             "beside the page in results/)")


def resolve_models(models, explicit, python):
    """The models to run: ``realmlp`` joins the default list when its
    interpreter is configured, and is dropped (with a note) when it is not."""
    models = list(models)
    if not explicit and python and "realmlp" not in models:
        models.append("realmlp")
    if "realmlp" in models and not python:
        print(f"realmlp: no RealMLP interpreter (--realmlp-python or "
              f"${ENV_VAR}); the column is skipped", flush=True)
        models.remove("realmlp")
    return models


def worker(models, python):
    """A context manager giving the RealMLP worker, or None."""
    import contextlib

    if "realmlp" not in models:
        return contextlib.nullcontext(None)
    return RealMLP(python)


def split_hash(X_te, y_te):
    """A short hash of a test split: its rows' index (a DataFrame) or values,
    and its targets."""
    h = hashlib.sha1()
    if hasattr(X_te, "index"):
        h.update(np.asarray(X_te.index).astype(str).astype("U").tobytes())
    else:
        h.update(np.ascontiguousarray(X_te, dtype=np.float64).tobytes())
    h.update(np.asarray(y_te).astype(str).astype("U").tobytes())
    return h.hexdigest()[:16]


def realmlp_fit(realmlp, regression, seed, data, categorical=()):
    """One RealMLP-TD fit and its test score (accuracy or R²), in the
    fields the benchmarks keep for every fit."""
    from sklearn.metrics import accuracy_score, r2_score

    X_tr, y_tr, X_te, y_te = data
    pred, elapsed, info = realmlp.fit(X_tr, y_tr, X_te, regression, seed,
                                      categorical)
    score = r2_score(y_te, pred) if regression else accuracy_score(
        np.asarray(y_te).astype(str), np.asarray(pred).astype(str))
    return {"score": float(score), "time": float(elapsed), "n_iter": -1,
            "cpu_time": info["cpu_s"], "watch": None,
            "convergence_warnings": 0, "max_iter_reached": False,
            "diverged": False, "no_learning": False, "warnings": []}


class Reuse:
    """The peer fits of an earlier run's JSON."""

    def __init__(self, path, benchmark, kinds=PEERS):
        self.kinds = set(kinds)
        with open(path) as fh:
            payload = json.load(fh)
        if payload.get("benchmark") != benchmark:
            raise SystemExit(f"--peer-results: {os.path.basename(path)} is "
                             f"not a {benchmark} run")
        self.runs = payload["runs"]
        self.machine = payload.get("machine", {})
        self.load = payload.get("load", {})
        self.versions = payload.get("realmlp")
        self.used = {}

    def get(self, task, seed, kind, split):
        fit = self.runs.get(task, {}).get(str(seed), {}).get(kind)
        if kind not in self.kinds or fit is None or fit.get("split") != split:
            return None
        self.used[kind] = self.used.get(kind, 0) + 1
        return dict(fit, reused=True)

    def note(self):
        if not self.used:
            return "No peer fit was reused (none matched task, seed and split)."
        load = self.load
        what = ", ".join(f"{n} {NAMES[k]}" for k, n in self.used.items())
        return (f"Reused peer fits: {what}, from the run of "
                f"{self.machine.get('date (UTC)', '?')} UTC on "
                f"{self.machine.get('CPU', '?')} (its load: 1-min load "
                f"average median {load.get('load1_median_during', float('nan')):.2f}, "
                f"other processes {load.get('other_processes_cores', float('nan')):.2f} "
                "cores busy); their times are that run's, so the time "
                "ratios against them compare two runs.")


def fit_peer(kind, fit, reuse, task, seed, split):
    """``fit()`` unless ``reuse`` has the peer's fit of this task, seed and
    split; the result carries the split's hash."""
    if reuse is not None and kind in PEERS:
        found = reuse.get(task, seed, kind, split)
        if found is not None:
            return found
    return dict(fit(), split=split)


def task_summary(runs, models):
    """Mean score per model, median time per model and the median over
    seeds of the per-seed time ratios GGN / peer, of one task's
    ``{seed: {kind: fit}}``."""
    fits = {k: [r[k] for r in runs.values() if k in r] for k in models}
    out = {"score": {k: float(np.mean([f["score"] for f in v]))
                     for k, v in fits.items() if v},
           "time": {k: statistics.median(f["time"] for f in v)
                    for k, v in fits.items() if v},
           "ratio": {}, "ggn_on": {}}
    if "ggn" in models:
        for peer in PEERS:
            if fits.get(peer):
                # GGN-SCORE's mean over the seeds the peer was fitted on
                out["ggn_on"][peer] = float(np.mean(
                    [r["ggn"]["score"] for r in runs.values() if peer in r]))
                out["ratio"][peer] = statistics.median(
                    r["ggn"]["time"] / r[peer]["time"] for r in runs.values()
                    if "ggn" in r and peer in r)
    return out


def comparison_lines(summaries, regression, models):
    """The summary's lines: tasks whose GGN-SCORE mean score is within the
    tolerance of HistGB and of RealMLP-TD (or above), and the geometric means
    of the time ratios GGN / MLP and GGN / RealMLP-TD."""
    lines = []
    if "ggn" not in models:
        return lines
    for peer in ("hgb", "realmlp"):
        if peer in models:
            within = [t for t, s in summaries.items() if s["ggn_on"][peer]
                      >= s["score"][peer] - TOLERANCE[
                          "regression" if regression(t) else "classification"]]
            lines.append(
                f"Tasks where GGN-SCORE's mean score over seeds is within "
                f"0.005 accuracy / 0.01 R² of {NAMES[peer]}'s or above it (on "
                f"the seeds {NAMES[peer]} was fitted on): "
                f"**{len(within)} of {len(summaries)}**"
                + (f" (not: {', '.join(t for t in summaries if t not in within)})"
                   if len(within) < len(summaries) else "") + ".")
    for peer in ("mlp", "realmlp"):
        if peer in models:
            geo = geometric_mean([s["ratio"][peer] for s in summaries.values()])
            lines.append(f"Geometric mean over tasks of the time ratio "
                         f"GGN-SCORE / {NAMES[peer]} (per task the median of "
                         f"the per-seed ratios): **{geo:.3f}**.")
    return lines
