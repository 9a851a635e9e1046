"""Benchmark 9 — sparse input: time and peak memory, sparse against densified.

A classification problem with 20 000 features at 1 % density (CSR, what a
``HashingVectorizer`` or ``OneHotEncoder`` gives), three classes from a
random linear teacher. The same ``GGNScoreClassifier`` (mini-batches of the
``"auto"`` size, dual form) is fitted for one epoch on the CSR matrix and on
its densified copy (``X.toarray()``, what the estimators required before
sparse support). Each case runs in a fresh Python subprocess
(``sys.executable``) with one BLAS thread; its peak memory is the growth of
the process's maximum resident set size (``ru_maxrss``) from just before
building X (after the imports and a tiny warm-up fit that loads the numba
kernels) to the end of the fit, so it counts X itself, its densified copy
and everything the fit allocates. Time is the fit alone (wall clock), the
median over processes. Both fits reach the same weights (checked: the largest
difference is reported).
"""

import json
import os
import subprocess
import sys
import time

from ._common import (
    REPO_DIR,
    LoadMonitor,
    md_table,
    median,
    new_figure,
    save_figure,
    write_result,
)

NAME = "sparse_input"
TITLE = "Benchmark 9: sparse input against densified input"

CONFIG = {
    "smoke": {"n_samples": 300, "n_features": 2000, "repeats": 1},
    "quick": {"n_samples": 2000, "n_features": 20_000, "repeats": 1},
    "full": {"n_samples": 5000, "n_features": 20_000, "repeats": 3},
}
DENSITY = 0.01
N_HIDDEN = 64

CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np
import scipy.sparse as sp
from sklearn_ggn import GGNScoreClassifier

n_samples, n_features, density, n_hidden, form = sys.argv[1:6]
n_samples, n_features, n_hidden = int(n_samples), int(n_features), int(n_hidden)
density = float(density)
warnings.simplefilter("ignore")


def rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def estimator():
    return GGNScoreClassifier(n_hidden=n_hidden, max_iter=1, tol=0,
                              linear_solver="dual", random_state=0)


# warm-up: loads (or compiles) the kernels of both input kinds
Xw = sp.random(40, 30, density=0.2, format="csr", random_state=0)
yw = np.arange(40) % 3
estimator().fit(Xw, yw)
estimator().fit(Xw.toarray(), yw)

before = rss_mib()
rng = np.random.default_rng(0)
X = sp.random(n_samples, n_features, density=density, format="csr",
              random_state=0, data_rvs=rng.standard_normal)
teacher = rng.standard_normal((n_features, 3))
y = np.asarray(X @ teacher).argmax(axis=1)
if form == "dense":
    X = X.toarray()
t0 = time.perf_counter()
est = estimator().fit(X, y)
fit_s = time.perf_counter() - t0
out = {"fit_s": fit_s, "peak_mib": rss_mib() - before,
       "accuracy": float(est.score(X, y)), "linear_solver": est.linear_solver_,
       "batch_size": int(round(n_samples / max(1, est.t_))),
       "weights": est.hidden_weights_.ravel()[:: max(1, n_features // 50)].tolist()}
print("RESULT " + json.dumps(out))
"""

FORMS = ("sparse", "dense")


def _child(form, cfg):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    args = [str(cfg["n_samples"]), str(cfg["n_features"]), str(DENSITY),
            str(N_HIDDEN), form]
    proc = subprocess.run([sys.executable, "-c", CHILD, *args], env=env,
                          cwd=REPO_DIR, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"sparse-input child failed:\n{proc.stderr[-3000:]}")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def run(mode, stamp):
    cfg = CONFIG[mode]
    results = {form: [] for form in FORMS}
    with LoadMonitor() as monitor:
        for _ in range(cfg["repeats"]):
            for form in FORMS:  # interleaved
                t0 = time.perf_counter()
                result = _child(form, cfg)
                result["process_s"] = time.perf_counter() - t0
                results[form].append(result)
    import numpy as np

    difference = float(np.max(np.abs(np.subtract(results["sparse"][0]["weights"],
                                                 results["dense"][0]["weights"]))))
    raw = {"config": dict(cfg, density=DENSITY, n_hidden=N_HIDDEN),
           "per_process": results, "max_weight_difference": difference,
           "medians": {form: {k: median([r[k] for r in rs])
                              for k in ("fit_s", "peak_mib", "accuracy")}
                       for form, rs in results.items()}}
    body, summary = _report(raw)
    fig = _plot(raw, mode, stamp)
    write_result(NAME, mode, TITLE, stamp, monitor, body, raw, [fig])
    raw["summary"] = summary
    return raw


def _report(raw):
    cfg, med = raw["config"], raw["medians"]
    rows = [(form, len(raw["per_process"][form]), med[form]["fit_s"],
             med[form]["peak_mib"], med[form]["accuracy"],
             raw["per_process"][form][0]["linear_solver"],
             raw["per_process"][form][0]["batch_size"]) for form in FORMS]
    speed = med["dense"]["fit_s"] / med["sparse"]["fit_s"]
    memory = med["dense"]["peak_mib"] / max(med["sparse"]["peak_mib"], 1e-9)
    lines = [
        f"{cfg['n_samples']} samples, {cfg['n_features']} features at "
        f"{cfg['density']:.0%} density, 3 classes, n_hidden = {cfg['n_hidden']}, "
        "one epoch in mini-batches, one BLAS thread; medians over fresh "
        "processes. Peak = growth of the maximum resident set from before X "
        "was built (X and its densified copy included).",
        "",
        md_table(["input", "processes", "fit [s]", "peak memory [MiB]",
                  "training accuracy", "form", "mean batch"], rows),
        "",
        f"Sparse is {speed:.1f}x faster and needs {memory:.1f}x less memory; "
        f"largest difference of the sampled hidden weights "
        f"{raw['max_weight_difference']:.2e}.",
    ]
    summary = (f"sparse {med['sparse']['fit_s']:.2f} s / "
               f"{med['sparse']['peak_mib']:.0f} MiB, densified "
               f"{med['dense']['fit_s']:.2f} s / {med['dense']['peak_mib']:.0f} MiB")
    return "\n".join(lines), summary


def _plot(raw, mode, stamp):
    fig, (ax_time, ax_mem) = new_figure(2, width=4.0)
    med = raw["medians"]
    for ax, key, label in ((ax_time, "fit_s", "fit time [s]"),
                           (ax_mem, "peak_mib", "peak memory [MiB]")):
        ax.bar(FORMS, [med[form][key] for form in FORMS], color=["C0", "C1"])
        ax.set_ylabel(label)
    fig.suptitle(f"{raw['config']['n_features']} features, "
                 f"{raw['config']['density']:.0%} dense")
    return save_figure(fig, NAME, mode, stamp)
