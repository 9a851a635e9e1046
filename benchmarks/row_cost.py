"""Cost per training row: one default GGN-SCORE epoch against one MLP epoch.

For every point of a grid over the input dimension d, the number of classes
K and the hidden width n, on generated standardized data (N rows, labels
drawn at random: only the cost is measured here), both models run epochs
over the same rows, timed round-robin in the same run, one BLAS thread:

* ``ggn``: ``GGNScoreClassifier(n_hidden=n, max_iter=1, warm_start=True)``
  with every other parameter at its default — each timed ``fit`` is one
  epoch of default steps (the batch size ``"auto"`` picks, the structured
  step, adaptive damping, line search) from the weights of the previous one;
* ``mlp``: ``MLPClassifier(hidden_layer_sizes=(n,))``, one ``partial_fit``
  epoch (adam, batches of 200) per timed call;
* ``ggn exact``: the same epoch with the paper's step (``curvature="exact",
  hessian="diagonal"``), on the smaller points only (its Gram costs
  b²·n·d and (bK)² n per batch).

Each timed call above is a whole ``fit`` or ``partial_fit`` call, so its
set-up (validation, the input map, the plan) counts in the epoch. The
second measure amortizes it as a user's fit does: ``fit`` of ``E`` epochs
(``max_iter=E``, ``early_stopping=False``, whose held-out split would
change the rows; the MLP with its defaults) divided by ``E``, for both
models (``E`` = 5 but in the smoke mode).

Reported: microseconds per training row of an epoch (median over repeats)
and the ratio ggn / mlp, in both measures. An epoch of GGN-SCORE does more work per row than
one of the MLP (a Gauss-Newton step solves a b × b kernel system); what a
user pays is that cost times the epochs each method needs, which the panel
(``benchmarks/panel.py``) measures on real data.

Run: ``python -m benchmarks --quick --only row_cost``.
"""

import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from ._common import (
    LoadMonitor,
    geometric_mean,
    md_table,
    median,
    new_figure,
    save_figure,
    time_interleaved,
    write_result,
)

NAME = "row_cost"
TITLE = "Cost per training row: default GGN-SCORE epoch vs MLP epoch"
CONFIG = {
    "smoke": {"rows": 600, "d": (5,), "K": (2,), "n": (16,), "repeats": 1,
              "exact_up_to": 0, "epochs": 2},
    "quick": {"rows": 4000, "d": (10, 100, 1000), "K": (2, 10, 50),
              "n": (100,), "repeats": 3, "exact_up_to": 100, "epochs": 5},
    "full": {"rows": 8000, "d": (5, 30, 100, 300, 1000), "K": (2, 5, 10, 26, 50),
             "n": (100, 300), "repeats": 5, "exact_up_to": 100, "epochs": 5},
}


def _data(rows, d, K, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, d))
    y = rng.integers(0, K, rows)
    y[:K] = np.arange(K)  # every class present
    return X, y


def _cases(X, y, n, exact, epochs):
    from sklearn.neural_network import MLPClassifier

    from sklearn_ggn import GGNScoreClassifier

    classes = np.unique(y)
    ggn = GGNScoreClassifier(n_hidden=n, max_iter=1, warm_start=True,
                             random_state=0)
    mlp = MLPClassifier(hidden_layer_sizes=(n,), random_state=0)
    # E epochs per fit (the set-up amortized as in a user's fit)
    ggn_fit = GGNScoreClassifier(n_hidden=n, max_iter=epochs,
                                 early_stopping=False, random_state=0)
    mlp_fit = MLPClassifier(hidden_layer_sizes=(n,), max_iter=epochs,
                            random_state=0)
    cases = {"ggn": lambda: ggn.fit(X, y),
             "mlp": lambda: mlp.partial_fit(X, y, classes=classes),
             "ggn fit": lambda: ggn_fit.fit(X, y),
             "mlp fit": lambda: mlp_fit.fit(X, y)}
    if exact:
        paper = GGNScoreClassifier(n_hidden=n, max_iter=1, warm_start=True,
                                   random_state=0, curvature="exact",
                                   hessian="diagonal")
        cases["ggn exact"] = lambda: paper.fit(X, y)
    return cases, ggn


def run(mode, stamp):
    cfg = CONFIG[mode]
    points = []
    with LoadMonitor() as monitor, threadpool_limits(limits=1), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in cfg["n"]:
            for d in cfg["d"]:
                for K in cfg["K"]:
                    X, y = _data(cfg["rows"], d, K)
                    exact = d <= cfg["exact_up_to"] and K <= 10
                    cases, ggn = _cases(X, y, n, exact, cfg["epochs"])
                    times = time_interleaved(cases, cfg["repeats"], warmup=1)
                    per_row = {k: 1e6 * median(v) / cfg["rows"]
                               / (cfg["epochs"] if k.endswith(" fit") else 1)
                               for k, v in times.items()}
                    points.append({"d": d, "K": K, "n": n,
                                   "batch_size": int(ggn.batch_size_)
                                   if hasattr(ggn, "batch_size_") else None,
                                   "us_per_row": per_row,
                                   "ratio": per_row["ggn"] / per_row["mlp"],
                                   "ratio_fit": (per_row["ggn fit"]
                                                 / per_row["mlp fit"]),
                                   "ratio_exact": (per_row["ggn exact"]
                                                   / per_row["mlp"]
                                                   if "ggn exact" in per_row
                                                   else None)})
                    print(f"row_cost d={d} K={K} n={n}: ggn "
                          f"{per_row['ggn']:.1f} us/row, mlp "
                          f"{per_row['mlp']:.1f} us/row", flush=True)
    raw = {"config": cfg, "points": points}
    rows = [(p["n"], p["d"], p["K"], p["batch_size"], p["us_per_row"]["ggn"],
             p["us_per_row"]["mlp"], p["ratio"], p["us_per_row"]["ggn fit"],
             p["us_per_row"]["mlp fit"], p["ratio_fit"],
             p["us_per_row"].get("ggn exact"), p["ratio_exact"]) for p in points]
    ratios = [p["ratio"] for p in points]
    ratios_fit = [p["ratio_fit"] for p in points]
    body = "\n".join([
        f"{cfg['rows']} generated rows per point, standardized Gaussian inputs, "
        "random labels; one epoch per timed call, medians over "
        f"{cfg['repeats']} repeats, timed round-robin; one BLAS thread. "
        "\"one epoch\": a warm-started fit of one epoch (GGN-SCORE) and one "
        "``partial_fit`` call (MLP), set-up included in every epoch; "
        f"\"{cfg['epochs']}-epoch fit\": a fit of {cfg['epochs']} epochs "
        f"divided by {cfg['epochs']} (``early_stopping=False`` for "
        "GGN-SCORE).",
        "",
        md_table(["n", "d", "K", "GGN batch", "GGN µs/row (one epoch)",
                  "MLP µs/row (one epoch)", "GGN / MLP (one epoch)",
                  f"GGN µs/row ({cfg['epochs']}-epoch fit)",
                  f"MLP µs/row ({cfg['epochs']}-epoch fit)",
                  f"GGN / MLP ({cfg['epochs']}-epoch fit)",
                  "exact GGN µs/row", "exact / MLP"], rows),
        "",
        f"Geometric mean of GGN / MLP per epoch: one epoch "
        f"{geometric_mean(ratios):.2f} "
        f"(range {min(ratios):.2f}-{max(ratios):.2f}); "
        f"{cfg['epochs']}-epoch fit {geometric_mean(ratios_fit):.2f} "
        f"(range {min(ratios_fit):.2f}-{max(ratios_fit):.2f}).",
    ])
    figures = []
    try:
        fig, (ax,) = new_figure()
        for K in cfg["K"]:
            sel = [p for p in points if p["K"] == K and p["n"] == cfg["n"][0]]
            ax.plot([p["d"] for p in sel], [p["ratio"] for p in sel], "o-",
                    label=f"K = {K}")
        ax.axhline(1.0, color="0.5", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("input dimension d")
        ax.set_ylabel("epoch time per row, GGN-SCORE / MLP")
        ax.set_title(f"n = {cfg['n'][0]} hidden units")
        ax.legend()
        ax.grid(alpha=0.3)
        figures.append(save_figure(fig, NAME, mode, stamp))
    except ImportError:
        pass
    write_result(NAME, mode, TITLE, stamp, monitor, body, raw, figures)
    raw["summary"] = (f"GGN / MLP epoch cost per row: geometric mean "
                      f"{geometric_mean(ratios):.2f} (one epoch), "
                      f"{geometric_mean(ratios_fit):.2f} "
                      f"({cfg['epochs']}-epoch fit)")
    return raw
