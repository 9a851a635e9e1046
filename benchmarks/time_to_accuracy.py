"""Benchmark 2 — time to accuracy against scikit-learn's MLP.

Data: ``make_teacher_student(n_train=1000, n_test=2000, n_features=20,
random_state=0)`` (the paper's GD-vs-GGN setting), float64.

* MLP L-BFGS: ``MLPRegressor(hidden_layer_sizes=(500,), solver="lbfgs",
  random_state=0)``, all else default (it stops at ``max_iter=200`` L-BFGS
  iterations or earlier on its ``tol``): the reference test MSE and fit time
  (median over repeats). Its curve: refits from scratch with
  ``max_iter`` = 1, 2, 5, ... up to the default 200; each point is that
  refit's wall time and test MSE (the time to produce that model).
* MLP Adam: ``MLPRegressor(hidden_layer_sizes=(500,), solver="adam",
  random_state=0)`` driven one epoch at a time with ``partial_fit``; the curve
  is the cumulative ``partial_fit`` time against the test MSE after each
  epoch (evaluation outside the timer).
* GGN-SCORE: ``GGNScoreRegressor(n_hidden=500, batch_size=None,
  random_state=0, tol=0)`` (all else default, so fit_intercept=True and the
  line search is on; ``tol=0`` lets it run its whole ``max_iter`` budget)
  fitted with ``X_val=X_test, y_val=y_test``; the curve is
  ``history_["time"]`` (excludes the validation passes) against
  ``2 * history_["validation_risk"]`` (validation_risk is ½·MSE). The fit is
  repeated and the per-iteration times are medians over the repeats (the
  iterates are identical: fixed seed).
* GGN-SCORE float32: the same on float32 copies of the training and test
  data (a separate curve; the headline uses float64).
* GD: the same estimator with ``solver="gd"`` (learning rate 1, the paper's
  baseline), one run.

Reported: the MLP's test MSE and fit time; the time GGN-SCORE needs to reach
that MSE; the test MSE every method has at equal wall times.
"""

import time

import numpy as np

from ._common import (
    LoadMonitor,
    fmt,
    md_table,
    median,
    new_figure,
    quiet_warnings,
    save_figure,
    write_result,
)

NAME = "time_to_accuracy"
TITLE = "Benchmark 2: time to accuracy vs scikit-learn's MLPRegressor"

CONFIG = {
    "smoke": {"m": 200, "n_test": 200, "n": 50, "repeats": 1, "ggn_iter": 5,
              "ggn_repeats": 1, "gd_iter": 50, "adam_epochs": 10,
              "lbfgs_grid": [2, 10, 200]},
    "quick": {"m": 1000, "n_test": 2000, "n": 500, "repeats": 3, "ggn_iter": 25,
              "ggn_repeats": 3, "gd_iter": 2000, "adam_epochs": 200,
              "lbfgs_grid": [1, 2, 5, 10, 20, 50, 100, 200]},
    "full": {"m": 1000, "n_test": 2000, "n": 500, "repeats": 7, "ggn_iter": 60,
             "ggn_repeats": 5, "gd_iter": 10000, "adam_epochs": 1000,
             "lbfgs_grid": [1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 75, 100, 150, 200]},
}


def _mse(model, X, y):
    return float(np.mean((model.predict(X) - y) ** 2))


def _mlp(n, solver, max_iter=200):
    from sklearn.neural_network import MLPRegressor

    return MLPRegressor(hidden_layer_sizes=(n,), solver=solver, random_state=0,
                        max_iter=max_iter)


def _value_at(times, values, t):
    """Value of the last checkpoint finished by time ``t`` (nan if none)."""
    best = float("nan")
    for ti, vi in zip(times, values, strict=True):
        if ti <= t:
            best = vi
    return best


def _first_reach(times, values, target):
    for ti, vi in zip(times, values, strict=True):
        if vi <= target:
            return ti
    return float("nan")


def run(mode, stamp):
    from sklearn_ggn import GGNScoreRegressor
    from sklearn_ggn.datasets import make_teacher_student

    cfg = CONFIG[mode]
    n = cfg["n"]
    X, y, X_test, y_test = make_teacher_student(
        n_train=cfg["m"], n_test=cfg["n_test"], n_features=20, random_state=0)
    curves = {}
    with LoadMonitor() as monitor, quiet_warnings():
        # Warm-up (numba kernels, sklearn imports) outside every timer.
        GGNScoreRegressor(n_hidden=8, batch_size=None, max_iter=2).fit(X, y)
        GGNScoreRegressor(n_hidden=8, batch_size=None, max_iter=2,
                          solver="gd").fit(X, y)

        # MLP L-BFGS at its default stopping point.
        fit_times, mlp = [], None
        for _ in range(cfg["repeats"]):
            mlp = _mlp(n, "lbfgs")
            t0 = time.perf_counter()
            mlp.fit(X, y)
            fit_times.append(time.perf_counter() - t0)
        mlp_time = median(fit_times)
        mlp_mse = _mse(mlp, X_test, y_test)
        mlp_iters = int(mlp.n_iter_)

        # MLP L-BFGS curve by refits with growing max_iter.
        ts, vs, its = [], [], []
        for max_iter in cfg["lbfgs_grid"]:
            model = _mlp(n, "lbfgs", max_iter)
            t0 = time.perf_counter()
            model.fit(X, y)
            ts.append(time.perf_counter() - t0)
            vs.append(_mse(model, X_test, y_test))
            its.append(int(model.n_iter_))
        curves["MLP lbfgs"] = {"time": ts, "mse": vs, "iters": its}

        # MLP Adam curve by partial_fit epochs.
        model = _mlp(n, "adam")
        elapsed, ts, vs = 0.0, [], []
        for _ in range(cfg["adam_epochs"]):
            t0 = time.perf_counter()
            model.partial_fit(X, y)
            elapsed += time.perf_counter() - t0
            ts.append(elapsed)
            vs.append(_mse(model, X_test, y_test))
        curves["MLP adam"] = {"time": ts, "mse": vs}

        # GGN-SCORE, repeated; per-iteration median times; float64 and, as
        # a separate curve, the same fit on float32 copies of the data.
        for label, dtype in (("GGN-SCORE", np.float64),
                             ("GGN-SCORE float32", np.float32)):
            Xd, yd = X.astype(dtype), y.astype(dtype)
            Xv, yv = X_test.astype(dtype), y_test.astype(dtype)
            GGNScoreRegressor(n_hidden=8, batch_size=None, max_iter=2).fit(Xd, yd)
            runs, walls = [], []
            for _ in range(cfg["ggn_repeats"]):
                est = GGNScoreRegressor(n_hidden=n, batch_size=None, random_state=0,
                                        tol=0.0, max_iter=cfg["ggn_iter"],
                                        standardize_target=False)
                t0 = time.perf_counter()
                est.fit(Xd, yd, X_val=Xv, y_val=yv)
                walls.append(time.perf_counter() - t0)
                runs.append(est.history_)
            n_it = min(len(h["time"]) for h in runs)
            curves[label] = {
                "time": [median([h["time"][i] for h in runs]) for i in range(n_it)],
                "mse": [2.0 * float(runs[0]["validation_risk"][i])
                        for i in range(n_it)],
                "fit_wall_median": median(walls),
                "linear_solver": est.linear_solver_}
        ggn_t, ggn_v = curves["GGN-SCORE"]["time"], curves["GGN-SCORE"]["mse"]

        # GD baseline, one run.
        gd = GGNScoreRegressor(n_hidden=n, batch_size=None, random_state=0,
                               tol=0.0, max_iter=cfg["gd_iter"], solver="gd",
                               standardize_target=False)
        gd.fit(X, y, X_val=X_test, y_val=y_test)
        curves["GD (solver=\"gd\")"] = {
            "time": list(gd.history_["time"]),
            "mse": [2.0 * v for v in gd.history_["validation_risk"]]}

    t_reach = _first_reach(ggn_t, ggn_v, mlp_mse)
    it_reach = (int(np.argmax(np.array(ggn_v) <= mlp_mse)) + 1
                if np.isfinite(t_reach) else None)
    c32 = curves["GGN-SCORE float32"]
    t_reach32 = _first_reach(c32["time"], c32["mse"], mlp_mse)
    raw = {"config": cfg, "mlp_lbfgs": {"fit_times": fit_times,
                                        "median_time": mlp_time,
                                        "test_mse": mlp_mse, "n_iter": mlp_iters},
           "ggn_time_to_mlp_mse": t_reach, "ggn_iters_to_mlp_mse": it_reach,
           "ggn_float32_time_to_mlp_mse": t_reach32,
           "curves": curves}
    body, summary = _report(raw)
    fig = _plot(raw, mode, stamp)
    write_result(NAME, mode, TITLE, stamp, monitor, body, raw, [fig])
    raw["summary"] = summary
    return raw


def _report(raw):
    cfg, mlp = raw["config"], raw["mlp_lbfgs"]
    curves = raw["curves"]
    ggn = curves["GGN-SCORE"]
    t_reach = raw["ggn_time_to_mlp_mse"]
    lines = [
        f"Teacher-student, m = {cfg['m']} train / {cfg['n_test']} test, d = 20, "
        f"n = {cfg['n']} hidden units, float64. Test MSE = mean squared error "
        "on the test set (GGN-SCORE: 2 × validation_risk).",
        "",
        "## Reference: MLPRegressor(hidden_layer_sizes=(500,), solver=\"lbfgs\")",
        "",
        md_table(["test MSE", "fit time median [s]", "repeats", "n_iter_"],
                 [(mlp["test_mse"], mlp["median_time"], len(mlp["fit_times"]),
                   mlp["n_iter"])]),
        "",
    ]
    reach = (f"GGN-SCORE reaches the MLP's test MSE {mlp['test_mse']:.4g} after "
             f"**{t_reach:.3g} s** (iteration {raw['ggn_iters_to_mlp_mse']}), "
             f"{t_reach / mlp['median_time']:.2f}× the MLP's fit time"
             if np.isfinite(t_reach) else
             f"GGN-SCORE does **not** reach the MLP's test MSE "
             f"{mlp['test_mse']:.4g} within {len(ggn['time'])} iterations "
             f"({ggn['time'][-1]:.3g} s; best {min(ggn['mse']):.4g})")
    lines += [reach + f" (linear_solver_ = {ggn['linear_solver']}; the GGN fit's "
              f"wall time incl. validation passes: {ggn['fit_wall_median']:.3g} s "
              f"for {len(ggn['time'])} iterations).", ""]
    t32 = raw["ggn_float32_time_to_mlp_mse"]
    lines += [("The same fit on float32 copies of the data (curve \"GGN-SCORE "
               "float32\") reaches it after "
               f"**{t32:.3g} s**, {t32 / mlp['median_time']:.2f}× the MLP's time."
               if np.isfinite(t32) else
               "The same fit on float32 copies of the data does not reach it."),
              ""]
    checkpoints = [("MLP lbfgs fit time", mlp["median_time"])]
    if np.isfinite(t_reach):
        checkpoints.append(("GGN reaches MLP MSE", t_reach))
    checkpoints.append(("GGN budget end", ggn["time"][-1]))
    headers = ["method"] + [f"{name} ({t:.3g} s)" for name, t in checkpoints] + [
        "final test MSE", "final time [s]", "points"]
    rows = []
    for method, c in curves.items():
        rows.append([method] + [_value_at(c["time"], c["mse"], t)
                                for _, t in checkpoints]
                    + [c["mse"][-1], c["time"][-1], len(c["time"])])
    lines += ["## Test MSE at equal wall time", "",
              "Each cell is the test MSE of the last checkpoint finished by that "
              "time (n/a: none finished yet).", "", md_table(headers, rows), "",
              "Curves: MLP lbfgs = refits from scratch with max_iter in "
              f"{cfg['lbfgs_grid']} (time of each refit); MLP adam = cumulative "
              "time of one-epoch `partial_fit` calls (batch_size=200, evaluation "
              "untimed); GGN-SCORE = `history_[\"time\"]` (median over "
              f"{cfg['ggn_repeats']} fits; excludes validation and the fit's "
              "set-up); GGN-SCORE float32 = the same on float32 data; GD = one "
              "fit's history."]
    ratio = t_reach / mlp["median_time"] if np.isfinite(t_reach) else float("nan")
    summary = (f"MLP lbfgs: test MSE {fmt(mlp['test_mse'])} in "
               f"{fmt(mlp['median_time'])} s; GGN-SCORE reaches it in "
               f"{fmt(t_reach)} s ({fmt(ratio, 3)}× the MLP's time; float32 "
               f"{fmt(t32)} s).")
    return "\n".join(lines), summary


def _plot(raw, mode, stamp):
    fig, (ax,) = new_figure(1, width=7.5, height=5)
    styles = {"GGN-SCORE": "C0o-", "GGN-SCORE float32": "C4^-",
              "GD (solver=\"gd\")": "C1-",
              "MLP lbfgs": "C2s-", "MLP adam": "C3-"}
    for method, c in raw["curves"].items():
        style = styles.get(method, "-")
        ax.plot(c["time"], c["mse"], style, label=method, ms=3, lw=1.2)
    mlp = raw["mlp_lbfgs"]
    ax.axhline(mlp["test_mse"], color="C2", ls=":", lw=1,
               label=f"MLP lbfgs default stop: {mlp['test_mse']:.3g}")
    ax.axvline(mlp["median_time"], color="C2", ls=":", lw=1)
    if np.isfinite(raw["ggn_time_to_mlp_mse"]):
        ax.axvline(raw["ggn_time_to_mlp_mse"], color="C0", ls=":", lw=1,
                   label="GGN-SCORE reaches it")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("wall time [s]")
    ax.set_ylabel("test MSE")
    ax.set_title(f"teacher-student m={raw['config']['m']}, d=20, "
                 f"n={raw['config']['n']}")
    ax.legend(fontsize=8)
    return save_figure(fig, NAME, mode, stamp)
