"""Robust where it says it is: the cost of the first ``return_std`` call and
Huber's loss against the squared error on corrupted targets.

1. First ``return_std`` call. ``GGNScoreRegressor()`` on 20 000 rows of
   ``make_friedman1`` (noise 1): the fit, the first ``predict(X,
   return_std=True)`` on the training rows (it builds the Laplace posterior,
   primal at this size) and a repeat call (the posterior kept), medians
   over repeats with the kernels loaded from a warm on-disk cache. Beside
   the package's posterior (``J̃ᵀJ̃`` by a symmetric rank-k update of the
   explicit rows, predictions through the kept inverse factor), the same
   posterior built as before: the step's Kronecker GEMM for ``J̃ᵀJ̃`` and a
   triangular solve per prediction block (patched in for the measurement).

2. Huber against squared error on the UCI regression sets (when found):
   the first splits of the benchmark's fixed 90/10 splits; on each, 5 % of
   the training targets (at random) moved by 50 standard deviations of the
   training targets, signs at random; defaults in
   ``make_pipeline(StandardScaler(), …)``; test RMSE on the clean test
   targets, beside both losses on the clean training targets.

Run: ``python -m benchmarks.robust [--data-home DIR] [--splits N]
[--repeats R]`` (``DIR`` as ``benchmarks.uncertainty --uci``, default
``$UCI_REGRESSION_DATA``); writes ``results/robust_uci.md`` and ``.json``.
"""

import time

import numpy as np

from ._common import (
    LoadMonitor,
    machine_stamp,
    md_table,
    median,
    quiet_warnings,
    write_result,
)
from .uncertainty import UCI_SETS, uci_splits

NAME = "robust"
TITLE = "Robust where it says it is: first return_std cost, Huber on corrupted targets"


# ------------------------------------------------------------------ 1
def _step_gram_posterior():
    """A context that builds the posterior as the package did before its
    syrk: the step's Kronecker GEMM for J̃ᵀJ̃, and predictions by a
    triangular solve with the kept Cholesky factor."""
    import contextlib

    from sklearn_ggn import _laplace

    @contextlib.contextmanager
    def patched():
        rows, fit = _laplace.gauss_newton_rows, _laplace.fit_posterior
        invert = _laplace._triangular_inverse
        factors = []

        def step_gram(network, theta, Xa, A):
            cache = network.forward(theta, Xa)
            W = network.sensitivities(theta, cache, A)
            return network.gauss_newton_matrix(theta, cache, W, A)

        def keep_factor(L):
            factors.append(L)
            return invert(L)

        def with_factor(*args, **kwargs):
            posterior = fit(*args, **kwargs)
            if posterior.pop("inverse", None) is not None:
                posterior["factor"] = factors[-1]  # (the solve's L)
            return posterior

        _laplace.gauss_newton_rows = step_gram
        _laplace.fit_posterior = with_factor
        _laplace._triangular_inverse = keep_factor
        try:
            yield
        finally:
            _laplace.gauss_newton_rows, _laplace.fit_posterior = rows, fit
            _laplace._triangular_inverse = invert

    return patched()


def first_std_cost(n_samples=20000, repeats=3):
    import contextlib

    from sklearn.datasets import make_friedman1

    from sklearn_ggn import GGNScoreRegressor

    X, y = make_friedman1(n_samples=n_samples, noise=1.0, random_state=0)
    for context in (contextlib.nullcontext, _step_gram_posterior):
        with context():  # (kernels loaded or compiled first, both paths)
            GGNScoreRegressor(max_iter=1, random_state=0).fit(
                X[:200], y[:200]).predict(X[:10], return_std=True)
    out = {"n_samples": n_samples, "repeats": repeats, "runs": []}
    for r in range(repeats):
        for label, context in (("syrk + inverse factor", contextlib.nullcontext),
                               ("Kronecker GEMM + solve", _step_gram_posterior)):
            with context():
                t0 = time.perf_counter()
                est = GGNScoreRegressor(random_state=0).fit(X, y)
                fit_s = time.perf_counter() - t0
                t0 = time.perf_counter()
                est.predict(X, return_std=True)
                first_s = time.perf_counter() - t0
                t0 = time.perf_counter()
                est.predict(X, return_std=True)
                repeat_s = time.perf_counter() - t0
            out["runs"].append({"posterior": label, "repeat": r, "fit_s": fit_s,
                                "first_std_s": first_s, "repeat_std_s": repeat_s,
                                "structure": est.uncertainty_})
            print(f"[robust] {label}: fit {fit_s:.2f} s, first return_std "
                  f"{first_s:.2f} s, repeat {repeat_s:.2f} s", flush=True)
    return out


# ------------------------------------------------------------------ 2
def huber_uci(data_home, max_splits=3, fraction=0.05, shift=50.0):
    from pathlib import Path

    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_ggn import GGNScoreRegressor

    results = {}
    for name in UCI_SETS:
        folder = Path(data_home) / name
        if not (folder / "data.txt.gz").exists():
            continue
        X, y, splits = uci_splits(folder)
        runs = []
        for seed, (train, test) in enumerate(splits[:max_splits]):
            rng = np.random.default_rng(seed)
            y_train = y[train].copy()
            moved = rng.choice(train.size, int(round(fraction * train.size)),
                               replace=False)
            y_corrupt = y_train.copy()
            y_corrupt[moved] += (rng.choice([-1.0, 1.0], moved.size) * shift
                                 * y_train.std())
            run = {}
            for loss in ("huber", "squared_error"):
                for data, targets in (("corrupted", y_corrupt), ("clean", y_train)):
                    model = make_pipeline(StandardScaler(), GGNScoreRegressor(
                        loss=loss, random_state=seed))
                    t0 = time.perf_counter()
                    model.fit(X[train], targets)
                    fit_s = time.perf_counter() - t0
                    pred = model.predict(X[test])
                    run[f"{loss}_{data}"] = {
                        "rmse": float(np.sqrt(np.mean((pred - y[test]) ** 2))),
                        "fit_s": fit_s,
                        "target_scale": float(model[-1].target_scale_[0])}
            runs.append(run)
            print(f"[robust] {name} split {seed}: " + ", ".join(
                f"{k} {v['rmse']:.3f}" for k, v in run.items()), flush=True)
        results[name] = {"n_samples": int(len(y)), "runs": runs}
    return results


# ------------------------------------------------------------------ report
def _report(first, huber):
    lines = []
    if first is not None:
        rows = []
        for label in ("syrk + inverse factor", "Kronecker GEMM + solve"):
            runs = [r for r in first["runs"] if r["posterior"] == label]
            fit = median([r["fit_s"] for r in runs])
            first_s = median([r["first_std_s"] for r in runs])
            rows.append([label, runs[0]["structure"], f"{fit:.2f}",
                         f"{first_s:.2f}",
                         f"{median([r['repeat_std_s'] for r in runs]):.2f}",
                         f"{first_s / fit:.2f}"])
        lines += [
            f"## First `return_std` call: make_friedman1, {first['n_samples']} "
            "rows", "",
            f"`GGNScoreRegressor()` defaults; `predict(X, return_std=True)` on "
            f"the training rows; medians over {first['repeats']} repeats "
            "(kernels from a warm on-disk cache; both posteriors timed in turn "
            "in one process).", "",
            md_table(["posterior", "structure", "fit [s]", "first return_std [s]",
                      "repeat [s]", "first / fit"], rows), ""]
    if huber:
        rows = []
        for name, res in huber.items():
            runs = res["runs"]

            def mean(key, field="rmse"):
                return float(np.mean([r[key][field] for r in runs]))

            rows.append([name, res["n_samples"], len(runs),
                         f"{mean('squared_error_clean'):.3f}",
                         f"{mean('huber_clean'):.3f}",
                         f"{mean('squared_error_corrupted'):.3f}",
                         f"{mean('huber_corrupted'):.3f}",
                         f"{mean('squared_error_corrupted', 'target_scale'):.3g}",
                         f"{mean('huber_corrupted', 'target_scale'):.3g}"])
        lines += [
            "## Huber against squared error, 5 % of the training targets "
            "corrupted", "",
            "UCI regression sets, the first of the benchmark's fixed 90/10 "
            "splits; on each, 5 % of the training targets (at random) moved by "
            "50 standard deviations of the training targets, signs at random; "
            "`make_pipeline(StandardScaler(), GGNScoreRegressor(loss=...))` "
            "at the defaults. Test RMSE on the clean test targets (units of "
            "y), mean over the splits, and the mean `target_scale_` of the "
            "corrupted fits (squared error: the standard deviation; Huber: "
            "1.4826 × MAD).", "",
            md_table(["set", "rows", "splits", "squared, clean", "Huber, clean",
                      "squared, corrupted", "Huber, corrupted",
                      "target_scale_ squared", "target_scale_ Huber"], rows), ""]
    return "\n".join(lines)


def main(argv=None):
    import argparse
    import os

    parser = argparse.ArgumentParser(prog="python -m benchmarks.robust",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--data-home", default=os.environ.get("UCI_REGRESSION_DATA"))
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-first-std", action="store_true")
    args = parser.parse_args(argv)
    stamp = machine_stamp()
    with LoadMonitor() as monitor, quiet_warnings():
        first = (None if args.skip_first_std
                 else first_std_cost(repeats=args.repeats))
        huber = {}
        if args.data_home and os.path.isdir(args.data_home):
            huber = huber_uci(args.data_home, args.splits)
        else:
            print("[robust] no UCI data folder: the Huber table is skipped")
    body = _report(first, huber)
    print(body)
    write_result(NAME, "uci", TITLE, stamp, monitor, body,
                 {"first_std": first, "huber": huber})
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
