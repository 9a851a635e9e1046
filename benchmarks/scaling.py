"""Benchmark 8 — time per step against m and n, dual vs primal, and "auto".

Time of ``Linearization.direction`` (``sklearn_ggn.engine``; the step's
linear algebra: gradient, sensitivities, Gram or GN matrix, Cholesky,
solves; no forward pass or line search — identical for both forms; see
``_common.StepProblem``) on full-batch teacher-student problems,
float64, ``fit_intercept=False``, default τ and μ, for
``form="dual"`` and ``form="primal"``, interleaved at each point; the
median over repeats (fewer repeats at slow points: each point/form stops
after ``repeats`` calls or once its calls took ``point_budget`` seconds).

* against m: d = 20, n = 100 (p = 2 100), m from 100 to 4000 — the dual /
  primal crossover (m ≈ p) lies inside the range;
* against n: m = 1000, d = 20 (p = 21 n), n from 64 to 2048.

A primal point is skipped when its p × p matrix alone would exceed 2 GiB
(8 p² bytes). At every point the form
``sklearn_ggn.engine.choose_linear_solver(..., "auto")``
picks is recorded (the same call ``fit`` makes) and checked against the
measured faster form.
"""

import time

import numpy as np

from ._common import (
    LoadMonitor,
    StepProblem,
    md_table,
    median,
    new_figure,
    save_figure,
    write_result,
)

NAME = "scaling"
TITLE = "Benchmark 8: step time vs m and n, dual vs primal, and the auto choice"
PRIMAL_LIMIT_BYTES = 2 * 2**30
# auto's pick counts as wrong when it is slower than the other form by more
# than this factor (below it, the difference is within run-to-run noise).
NOISE = 1.10

CONFIG = {
    "smoke": {"m_values": [100, 300], "n_fixed": 50, "n_values": [32, 64],
              "m_fixed": 200, "repeats": 2, "point_budget": 1.0},
    "quick": {"m_values": [100, 400, 1000, 2000, 4000], "n_fixed": 100,
              "n_values": [64, 128, 256, 512, 1024, 2048], "m_fixed": 1000,
              "repeats": 3, "point_budget": 6.0},
    "full": {"m_values": [100, 200, 400, 700, 1000, 1500, 2000, 3000, 4000],
             "n_fixed": 100,
             "n_values": [64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048],
             "m_fixed": 1000, "repeats": 7, "point_budget": 40.0},
}
D = 20


def _measure(problem, forms, repeats, budget):
    times = {f: [] for f in forms}
    spent = {f: 0.0 for f in forms}
    for _ in range(repeats):
        for form in forms:
            if times[form] and spent[form] >= budget:
                continue
            t0 = time.perf_counter()
            problem.direction(form)
            dt = time.perf_counter() - t0
            times[form].append(dt)
            spent[form] += dt
    return times


def _point(m, n, cfg):
    problem = StepProblem(m, D, n)
    p = problem.p
    forms = ["dual"]
    primal_skipped = 8.0 * p * p > PRIMAL_LIMIT_BYTES
    if not primal_skipped:
        forms.append("primal")
    times = _measure(problem, forms, cfg["repeats"], cfg["point_budget"])
    costs = problem.network.step_costs(m)
    row = {"m": m, "n": n, "p": p, "auto": problem.auto_form(),
           "primal_skipped": primal_skipped,
           "dual_s": median(times["dual"]), "dual_all": times["dual"],
           "primal_s": median(times["primal"]) if "primal" in times else None,
           "primal_all": times.get("primal", []),
           "model_primal_over_dual": costs["primal"] / costs["dual"]}
    if row["primal_s"] is None:
        row["faster"], row["auto_ok"], row["auto_penalty"] = "dual*", None, None
    else:
        faster = "dual" if row["dual_s"] <= row["primal_s"] else "primal"
        chosen = row[f"{row['auto']}_s"]
        other = row["primal_s" if row["auto"] == "dual" else "dual_s"]
        row["faster"] = faster
        row["auto_penalty"] = chosen / other
        row["auto_ok"] = row["auto_penalty"] <= NOISE
    del problem
    return row


def run(mode, stamp):
    cfg = CONFIG[mode]
    with LoadMonitor() as monitor:
        warm = StepProblem(50, 5, 16)  # compile both forms outside the timers
        warm.direction("dual")
        warm.direction("primal")
        sweep_m = [_point(m, cfg["n_fixed"], cfg) for m in cfg["m_values"]]
        sweep_n = [_point(cfg["m_fixed"], n, cfg) for n in cfg["n_values"]]
    raw = {"config": cfg, "sweep_m": sweep_m, "sweep_n": sweep_n}
    body, summary = _report(raw)
    fig = _plot(raw, mode, stamp)
    write_result(NAME, mode, TITLE, stamp, monitor, body, raw, [fig])
    raw["summary"] = summary
    return raw


def _rows(sweep):
    rows = []
    for r in sweep:
        if r["primal_skipped"]:
            primal, ratio = f"skipped (8p² = {8 * r['p'] ** 2 / 2**30:.1f} GiB)", None
            verdict = "- (primal not measured)"
        else:
            primal, ratio = r["primal_s"], r["primal_s"] / r["dual_s"]
            verdict = ("yes" if r["auto"] == r["faster"] else
                       ("within noise" if r["auto_ok"] else
                        f"**NO** ({r['auto_penalty']:.2f}× slower)"))
        rows.append((r["m"], r["n"], r["p"], r["dual_s"], primal, ratio,
                     r["model_primal_over_dual"], r["auto"], r["faster"], verdict,
                     f"{len(r['dual_all'])}/{len(r['primal_all'])}"))
    return rows


HEADERS = ["m", "n", "p", "dual [s]", "primal [s]", "primal ÷ dual (measured)",
           "primal ÷ dual (cost model)", "auto picks", "faster", "auto right?",
           "repeats d/p"]


def _report(raw):
    cfg = raw["config"]
    lines = [
        "Seconds per `Linearization.direction` call (median), teacher-student, d = 20, "
        "fit_intercept=False, float64, default BLAS threads.",
        "",
        f"## Against m (n = {cfg['n_fixed']})", "", md_table(HEADERS,
                                                             _rows(raw["sweep_m"])),
        "",
        f"## Against n (m = {cfg['m_fixed']})", "", md_table(HEADERS,
                                                             _rows(raw["sweep_n"])),
        "",
        f"`auto right?`: yes = picked the measured faster form; within noise = "
        f"picked the slower one but by ≤ {NOISE:.2f}×. Primal points whose p × p "
        "matrix alone exceeds 2 GiB are skipped (auto's own limit, 2 GiB on its "
        "estimate of all primal buffers, is in the `model` columns of the JSON).",
    ]
    wrong = [r for r in raw["sweep_m"] + raw["sweep_n"]
             if r["auto_ok"] is False]
    if wrong:
        lines += ["", "**Points where auto did not pick the faster form:** " +
                  "; ".join(f"m={r['m']}, n={r['n']}: picked {r['auto']}, "
                            f"{r['auto_penalty']:.2f}× slower" for r in wrong)]
    else:
        lines += ["", "Auto picked the faster form (within noise) at every "
                  "point where both were measured."]
    summary = ("auto wrong at " + ", ".join(f"(m={r['m']}, n={r['n']}, "
                                            f"{r['auto_penalty']:.2f}x)"
                                            for r in wrong)
               if wrong else "auto right (within noise) at every measured point")
    return "\n".join(lines), summary


def _plot(raw, mode, stamp):
    fig, axes = new_figure(2, width=6.0)
    for ax, key, var, fixed in ((axes[0], "sweep_m", "m", "n"),
                                (axes[1], "sweep_n", "n", "m")):
        sweep = raw[key]
        x = np.array([r[var] for r in sweep])
        dual = np.array([r["dual_s"] for r in sweep])
        ax.plot(x, dual, "C0o-", label="dual")
        xp = [r[var] for r in sweep if not r["primal_skipped"]]
        yp = [r["primal_s"] for r in sweep if not r["primal_skipped"]]
        ax.plot(xp, yp, "C1s-", label="primal")
        chosen_x = [r[var] for r in sweep]
        chosen_y = [r["dual_s"] if r["auto"] == "dual" else r["primal_s"]
                    for r in sweep]
        ax.scatter(chosen_x, chosen_y, s=160, facecolors="none", edgecolors="k",
                   linewidths=1.5, label="auto's choice", zorder=3)
        bad = [(r[var], r[f"{r['auto']}_s"]) for r in sweep if r["auto_ok"] is False]
        if bad:
            ax.scatter(*zip(*bad, strict=True), marker="x", s=120, color="r",
                       label="auto picked the slower form", zorder=4)
        skipped = [r[var] for r in sweep if r["primal_skipped"]]
        if skipped:
            ax.axvspan(min(skipped) * 0.9, max(skipped) * 1.1, color="0.9",
                       label="primal skipped (p×p > 2 GiB)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(var)
        ax.set_ylabel("seconds per Linearization.direction")
        fixed_val = sweep[0][fixed]
        ax.set_title(f"vs {var} ({fixed} = {fixed_val}, d = {D})")
        ax.legend(fontsize=7)
    return save_figure(fig, NAME, mode, stamp)


# ------------------------------------------------------- against the rows
ROWS_DOC = """Fits as the training rows grow: GGN-SCORE and scikit-learn's MLP with
their defaults in ``make_pipeline(StandardScaler(), model)``, one BLAS
thread, on the first ``n`` MNIST training images / 255 (tested on the 10 000
test images), or, without the data, on a generated 10-class task of 200
features. Per size: fit seconds, epochs, seconds per epoch and per epoch
and 1 000 rows, test accuracy; the two models alternate at every size and
seed (warm kernel cache: an untimed fit first).

    python -m benchmarks.scaling --rows [--sizes 5000 10000 ...] [--seeds 0]
"""


def _rows_data(home):
    from sklearn_ggn.datasets import load_mnist

    try:
        X_tr, y_tr, X_te, y_te = load_mnist(data_home=home,
                                            download_if_missing=False)
        return X_tr / 255.0, y_tr, X_te / 255.0, y_te, "MNIST"
    except (FileNotFoundError, OSError):
        from sklearn.datasets import make_classification

        X, y = make_classification(70000, 200, n_informative=60,
                                   n_classes=10, flip_y=0.02, random_state=0)
        return X[:60000], y[:60000], X[60000:], y[60000:], "generated"


def run_rows(sizes, seeds, home, label):
    import json
    import warnings

    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    from sklearn_ggn import GGNScoreClassifier

    from ._common import _jsonable, machine_stamp, result_path, stamp_markdown

    X_tr, y_tr, X_te, y_te, source = _rows_data(home)
    stamp = machine_stamp()
    makers = {"ggn": lambda s: GGNScoreClassifier(random_state=s),
              "mlp": lambda s: MLPClassifier(random_state=s)}
    runs = []
    with threadpool_limits(1), LoadMonitor() as monitor, \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make_pipeline(StandardScaler(), GGNScoreClassifier(max_iter=2)).fit(
            X_tr[:2000], y_tr[:2000])
        for n in sizes:
            for seed in seeds:
                for kind in ("ggn", "mlp"):
                    model = make_pipeline(StandardScaler(), makers[kind](seed))
                    t0 = time.perf_counter()
                    model.fit(X_tr[:n], y_tr[:n])
                    elapsed = time.perf_counter() - t0
                    epochs = model[-1].n_iter_
                    acc = float(model.score(X_te, y_te))
                    runs.append({"rows": n, "seed": seed, "model": kind,
                                 "time": elapsed, "epochs": epochs,
                                 "accuracy": acc})
                    print(f"{n:6d} rows seed {seed} {kind}: {elapsed:7.2f} s, "
                          f"{epochs} epochs, {elapsed / epochs:.3f} s/epoch, "
                          f"accuracy {acc:.4f}", flush=True)
    table = []
    for n in sizes:
        row = [n]
        cells = {}
        for kind in ("ggn", "mlp"):
            rs = [r for r in runs if r["rows"] == n and r["model"] == kind]
            t = median([r["time"] for r in rs])
            e = median([r["epochs"] for r in rs])
            a = median([r["accuracy"] for r in rs])
            per = median([r["time"] / r["epochs"] for r in rs])
            cells[kind] = t
            row += [t, e, per, 1000.0 * per / n, a]
        row.append(cells["ggn"] / cells["mlp"])
        table.append(row)
    headers = ["rows"]
    for kind in ("GGN-SCORE", "MLP"):
        headers += [f"{kind} fit s", f"{kind} epochs", f"{kind} s/epoch",
                    f"{kind} s/epoch/1k rows", f"{kind} accuracy"]
    headers.append("time GGN/MLP")
    body = "\n".join([
        f"# Fits against the training rows ({source})", "",
        ROWS_DOC.split("\n\n")[0], "", f"Seeds {list(seeds)}; medians.", "",
        monitor.markdown(), "", md_table(headers, table), "",
        "## Machine", "", stamp_markdown(stamp), ""])
    result_path("scaling_rows", label, ".md").write_text(body)
    result_path("scaling_rows", label, ".json").write_text(json.dumps(
        _jsonable({"source": source, "runs": runs, "machine": stamp,
                   "load": monitor.summary()}), indent=1))
    try:
        fig, axes = new_figure(2, width=5.0)
        for kind, style in (("ggn", "C0o-"), ("mlp", "C1s-")):
            per = [median([r["time"] / r["epochs"] for r in runs
                           if r["rows"] == n and r["model"] == kind])
                   for n in sizes]
            ep = [median([r["epochs"] for r in runs
                          if r["rows"] == n and r["model"] == kind])
                  for n in sizes]
            name = "GGN-SCORE" if kind == "ggn" else "MLPClassifier"
            axes[0].plot(sizes, per, style, label=name)
            axes[1].plot(sizes, ep, style, label=name)
        for ax, ylabel in ((axes[0], "seconds per epoch"), (axes[1], "epochs")):
            ax.set_xscale("log")
            ax.set_xlabel("training rows")
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
            ax.legend()
        axes[0].set_yscale("log")
        save_figure(fig, "scaling_rows", label, stamp)
    except ImportError:
        print("matplotlib not installed: no plot")
    print(body)


if __name__ == "__main__":
    import argparse
    import os

    parser = argparse.ArgumentParser(prog="python -m benchmarks.scaling",
                                     description=ROWS_DOC.split("\n\n")[0])
    parser.add_argument("--rows", action="store_true", required=True,
                        help="the fits-against-rows study (the step sweeps run "
                             "from python -m benchmarks)")
    parser.add_argument("--sizes", nargs="+", type=int,
                        default=[5000, 10000, 20000, 40000, 60000])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--data-home", default=os.environ.get("SKLEARN_GGN_DATA"))
    parser.add_argument("--label", default="full")
    args = parser.parse_args()
    run_rows(args.sizes, args.seeds, args.data_home, args.label)
