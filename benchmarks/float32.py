"""float32 against float64: the same default fits on data cast to each.

For each task (the panel's real data sets when their files are found via
``SKLEARN_GGN_DATA``, else generated ones), standardized inputs in float64
and in float32, one BLAS thread:

* ``epoch``: one default epoch (``GGNScoreClassifier(max_iter=1,
  warm_start=True)``, every other parameter at its default), float64 and
  float32 timed round-robin over repeats — the cost of the same steps in
  each precision;
* ``fit``: the whole default fit in each precision: time, epochs and test
  accuracy (a float32 fit rounds differently, so it may take another number
  of epochs).

Reported: milliseconds per epoch and per fit (medians), and the ratios
float64 / float32. Run: ``python -m benchmarks --quick --only float32``.
"""

import os
import time

import numpy as np
from threadpoolctl import threadpool_limits

from ._common import (
    LoadMonitor,
    geometric_mean,
    md_table,
    median,
    quiet_warnings,
    time_interleaved,
    write_result,
)

NAME = "float32"
TITLE = "float32 against float64: default epochs and fits"
CONFIG = {
    "smoke": {"tasks": ("wide_5class",), "repeats": 1, "fit_repeats": 1,
              "rows": 600},
    "quick": {"tasks": ("letter", "pendigits", "avila", "mnist10k",
                        "wide_5class", "classes_30"),
              "repeats": 3, "fit_repeats": 1, "rows": None},
    "full": {"tasks": ("letter", "pendigits", "avila", "mnist10k",
                       "wide_5class", "classes_30", "tall_3class"),
             "repeats": 5, "fit_repeats": 3, "rows": None},
}


def _load(task, rows):
    from sklearn.preprocessing import StandardScaler

    from .panel import DATA_ENV_VAR, Skip, load_task

    try:
        X, y, X_test, y_test, _ = load_task(task, 0, os.environ.get(DATA_ENV_VAR))
    except Skip:
        return None
    if rows is not None:
        X, y, X_test, y_test = X[:rows], y[:rows], X_test[:rows], y_test[:rows]
    scaler = StandardScaler().fit(X)
    return scaler.transform(X), y, scaler.transform(X_test), y_test


def _epochs(data):
    from sklearn_ggn import GGNScoreClassifier

    X, y = data[0], data[1]
    cases = {}
    for dtype in (np.float64, np.float32):
        est = GGNScoreClassifier(max_iter=1, warm_start=True, random_state=0)
        Xd = X.astype(dtype)
        cases[np.dtype(dtype).name] = (lambda e=est, Xd=Xd: e.fit(Xd, y))
    return cases


def run(mode, stamp):
    from sklearn_ggn import GGNScoreClassifier

    cfg = CONFIG[mode]
    points = []
    with LoadMonitor() as monitor, threadpool_limits(limits=1), quiet_warnings():
        for task in cfg["tasks"]:
            data = _load(task, cfg["rows"])
            if data is None:
                print(f"float32: {task} skipped (no data files)", flush=True)
                continue
            X, y, X_test, y_test = data
            epoch = time_interleaved(_epochs(data), cfg["repeats"], warmup=1)
            fits = {}
            for dtype in (np.float64, np.float32):
                times, est = [], None
                for _ in range(cfg["fit_repeats"]):
                    est = GGNScoreClassifier(random_state=0)
                    t0 = time.perf_counter()
                    est.fit(X.astype(dtype), y)
                    times.append(time.perf_counter() - t0)
                fits[np.dtype(dtype).name] = {
                    "seconds": median(times), "epochs": int(est.n_iter_),
                    "accuracy": float(est.score(X_test.astype(dtype), y_test))}
            point = {"task": task, "rows": int(X.shape[0]),
                     "features": int(X.shape[1]),
                     "epoch_ms": {k: 1e3 * median(v) for k, v in epoch.items()},
                     "fit": fits}
            point["epoch_ratio"] = (point["epoch_ms"]["float64"]
                                    / point["epoch_ms"]["float32"])
            point["fit_ratio"] = (fits["float64"]["seconds"]
                                  / fits["float32"]["seconds"])
            points.append(point)
            print(f"float32 {task}: epoch {point['epoch_ratio']:.2f}x, fit "
                  f"{point['fit_ratio']:.2f}x faster in float32", flush=True)
    rows = [(p["task"], p["rows"], p["features"], p["epoch_ms"]["float64"],
             p["epoch_ms"]["float32"], p["epoch_ratio"],
             p["fit"]["float64"]["seconds"], p["fit"]["float32"]["seconds"],
             p["fit_ratio"], p["fit"]["float64"]["epochs"],
             p["fit"]["float32"]["epochs"], p["fit"]["float64"]["accuracy"],
             p["fit"]["float32"]["accuracy"]) for p in points]

    epoch_mean = geometric_mean([p["epoch_ratio"] for p in points])
    fit_mean = geometric_mean([p["fit_ratio"] for p in points])
    body = "\n".join([
        "Default GGNScoreClassifier, standardized inputs, one BLAS thread; "
        f"epochs timed round-robin, medians of {cfg['repeats']}; whole fits "
        f"medians of {cfg['fit_repeats']}.",
        "",
        md_table(["task", "rows", "features", "epoch f64 [ms]", "epoch f32 [ms]",
                  "epoch f64/f32", "fit f64 [s]", "fit f32 [s]", "fit f64/f32",
                  "epochs f64", "epochs f32", "accuracy f64", "accuracy f32"],
                 rows),
        "",
        f"Geometric means of float64 / float32 time: per epoch {epoch_mean:.2f}, "
        f"per fit {fit_mean:.2f}.",
    ])
    raw = {"config": cfg, "points": points}
    write_result(NAME, mode, TITLE, stamp, monitor, body, raw)
    raw["summary"] = (f"float64 / float32: {epoch_mean:.2f}x per epoch, "
                      f"{fit_mean:.2f}x per fit")
    return raw
