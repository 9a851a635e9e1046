"""Predictive uncertainty: intervals, calibrated probabilities and the evidence.

Regression: ``make_pipeline(StandardScaler(), GGNScoreRegressor())`` at its
defaults, predicting with ``return_std=True``, on data that need no
download (diabetes, make_friedman1/2/3 with noise, the teacher-student
generator of ``sklearn_ggn.datasets`` with Gaussian noise, and a larger
friedman1 whose posterior takes another structure), random 90/10 splits.
Test metrics in the units of y: RMSE, the Gaussian negative log-likelihood
per point and the coverage of the central 95 % interval. Baseline: what a
user would build without this feature, ``make_pipeline(StandardScaler(),
MLPRegressor(max_iter=2000))`` with the standard deviation of its training
residuals as a constant std. The same model with ``tau="gcv"`` is a
third column (τ by GCV alone, without the evidence path), and with
``noise="homoscedastic"`` and ``noise="heteroscedastic"`` the two noises
the default ``noise="auto"`` chooses between (the same fit of the mean).

Classification: ``GGNScoreClassifier()`` on standardized inputs with
``predictive="map"`` (the softmax of the fitted logits) and
``predictive="probit"`` (the linearized Laplace predictive), against
``MLPClassifier(max_iter=1000)``: log-loss and the expected calibration
error (15 equal-width bins of the top-class confidence), 80/20 stratified
splits.

Figures: the metrics per data set, a 1-D regression with its 95 % interval
(``uncertainty_intervals_<mode>.png``), a reliability
diagram and the log evidence ``log_marginal_likelihood_`` of fits over a τ
grid beside the GCV curve of ``tau="auto"``.

Run: ``python -m benchmarks --quick --only uncertainty``.
"""

import time

import numpy as np

from ._common import (
    LoadMonitor,
    md_table,
    new_figure,
    quiet_warnings,
    save_figure,
    write_result,
)

NAME = "uncertainty"
TITLE = "Predictive uncertainty: intervals, calibration and evidence"
CONFIG = {
    "smoke": {"regression": ("diabetes", "friedman1"), "splits": 1,
              "classification": ("breast_cancer",), "class_splits": 1,
              "tau_grid": 3},
    "quick": {"regression": ("diabetes", "friedman1", "friedman2", "friedman3",
                             "teacher", "friedman1_large"),
              "splits": 5,
              "classification": ("digits", "breast_cancer", "generated"),
              "class_splits": 3, "tau_grid": 9},
    "full": {"regression": ("diabetes", "friedman1", "friedman2", "friedman3",
                            "teacher", "friedman1_large"),
             "splits": 10,
             "classification": ("digits", "breast_cancer", "generated"),
             "class_splits": 5, "tau_grid": 13},
}
Z95 = 1.959963984540054


def regression_data(name):
    """(X, y) of a regression task; all offline."""
    from sklearn.datasets import (
        load_diabetes,
        make_friedman1,
        make_friedman2,
        make_friedman3,
    )

    from sklearn_ggn.datasets import make_teacher_student

    if name == "diabetes":
        return load_diabetes(return_X_y=True)
    if name == "friedman1":
        return make_friedman1(1000, noise=1.0, random_state=0)
    if name == "friedman1_large":
        return make_friedman1(5000, noise=1.0, random_state=1)
    if name == "friedman2":
        return make_friedman2(1000, noise=100.0, random_state=0)
    if name == "friedman3":
        return make_friedman3(1000, noise=0.1, random_state=0)
    if name == "teacher":
        X, f, _, _ = make_teacher_student(n_train=1000, n_test=1, n_features=5,
                                          random_state=0)
        rng = np.random.default_rng(0)
        return X, f + 0.1 * rng.standard_normal(f.shape)
    raise ValueError(name)


def classification_data(name):
    from sklearn.datasets import load_breast_cancer, load_digits, make_classification

    if name == "digits":
        return load_digits(return_X_y=True)
    if name == "breast_cancer":
        return load_breast_cancer(return_X_y=True)
    return make_classification(1500, 20, n_informative=8, n_classes=4,
                               flip_y=0.05, random_state=0)


def gaussian_metrics(y, mean, std):
    z = (y - mean) / std
    return {"rmse": float(np.sqrt(np.mean((y - mean) ** 2))),
            "nll": float(np.mean(0.5 * np.log(2 * np.pi * std**2) + 0.5 * z**2)),
            "coverage": float(np.mean(np.abs(z) <= Z95))}


def expected_calibration_error(proba, y, bins=15):
    """ECE of the top-class confidence over equal-width bins."""
    confidence = proba.max(axis=1)
    correct = proba.argmax(axis=1) == y
    edges = np.linspace(0.0, 1.0, bins + 1)
    ece = 0.0
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        inside = (confidence > lo) & (confidence <= hi)
        if inside.any():
            ece += inside.mean() * abs(correct[inside].mean()
                                       - confidence[inside].mean())
    return float(ece)


def reliability(proba, y, bins=10):
    confidence = proba.max(axis=1)
    correct = proba.argmax(axis=1) == y
    edges = np.linspace(0.0, 1.0, bins + 1)
    mids, accs = [], []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        inside = (confidence > lo) & (confidence <= hi)
        if inside.sum() >= 5:
            mids.append(float(confidence[inside].mean()))
            accs.append(float(correct[inside].mean()))
    return mids, accs


def _regression(names, splits):
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_ggn import GGNScoreRegressor

    results = {}
    for name in names:
        X, y = regression_data(name)
        runs = []
        for seed in range(splits):
            X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.1,
                                                      random_state=seed)
            run = {}
            for label, params in (("ggn", {}), ("ggn_gcv", {"tau": "gcv"}),
                                  ("ggn_homo", {"noise": "homoscedastic"}),
                                  ("ggn_het", {"noise": "heteroscedastic"})):
                model = make_pipeline(StandardScaler(),
                                      GGNScoreRegressor(random_state=seed, **params))
                t0 = time.perf_counter()
                model.fit(X_tr, y_tr)
                fit_s = time.perf_counter() - t0
                mean, std = model.predict(X_te, return_std=True)
                run[label] = {**gaussian_metrics(y_te, mean, std), "fit_s": fit_s,
                              "tau": model[-1].tau_,
                              "structure": model[-1].uncertainty_,
                              "noise": model[-1].noise_,
                              "std_spread": float(std.max() / std.min())}
            # the cost of the posterior: the same fit without it
            plain = make_pipeline(StandardScaler(),
                                  GGNScoreRegressor(random_state=seed,
                                                    uncertainty=None))
            t0 = time.perf_counter()
            plain.fit(X_tr, y_tr)
            run["ggn"]["plain_fit_s"] = time.perf_counter() - t0
            mlp = make_pipeline(StandardScaler(),
                                MLPRegressor(max_iter=2000, random_state=seed))
            mlp.fit(X_tr, y_tr)
            residual_std = float(np.std(y_tr - mlp.predict(X_tr)))
            mean = mlp.predict(X_te)
            run["mlp"] = gaussian_metrics(y_te, mean,
                                          np.full_like(mean, residual_std))
            runs.append(run)
        results[name] = {"n_samples": int(len(y)), "runs": runs}
    return results


def _classification(names, splits):
    from sklearn.metrics import log_loss
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    from sklearn_ggn import GGNScoreClassifier

    results = {}
    for name in names:
        X, y = classification_data(name)
        labels = np.unique(y)
        runs = []
        for seed in range(splits):
            X_tr, X_te, y_tr, y_te = train_test_split(
                X, y, test_size=0.2, random_state=seed, stratify=y)
            scaler = StandardScaler().fit(X_tr)
            X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)
            # fitted with the probit predictive (which computes the
            # posterior); the plain softmax is the same fit's map predictive
            clf = GGNScoreClassifier(random_state=seed,
                                     predictive="probit").fit(X_tr, y_tr)
            run = {"structure": clf.uncertainty_, "tau": clf.tau_}
            probas = {"probit": clf.predict_proba(X_te)}
            clf.set_params(predictive="map")
            probas["map"] = clf.predict_proba(X_te)
            mlp = MLPClassifier(max_iter=1000, random_state=seed).fit(X_tr, y_tr)
            probas["mlp"] = mlp.predict_proba(X_te)
            for label, proba in probas.items():
                run[label] = {"log_loss": float(log_loss(y_te, proba, labels=labels)),
                              "ece": expected_calibration_error(proba, y_te),
                              "accuracy": float(np.mean(proba.argmax(1) == y_te)),
                              "reliability": reliability(proba, y_te)}
            runs.append(run)
        results[name] = {"runs": runs}
    return results


def _evidence_curve(points):
    """log_marginal_likelihood_ of fits over a τ grid on diabetes (one
    90 % split), the held-out NLL at each τ, and the GCV and evidence curves
    of the linearized problem at the initial weights."""
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_ggn import GGNScoreRegressor

    X, y = regression_data("diabetes")
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.1, random_state=0)
    taus = np.logspace(-4, 0, points)
    curve = []
    for tau in taus:
        model = make_pipeline(StandardScaler(),
                              GGNScoreRegressor(tau=float(tau), random_state=0))
        model.fit(X_tr, y_tr)
        mean, std = model.predict(X_te, return_std=True)
        curve.append({"tau": float(tau),
                      "log_evidence": model[-1].log_marginal_likelihood_,
                      **gaussian_metrics(y_te, mean, std)})
    gcv = make_pipeline(StandardScaler(),
                        GGNScoreRegressor(tau="gcv", random_state=0))
    gcv.fit(X_tr, y_tr)
    auto = make_pipeline(StandardScaler(), GGNScoreRegressor(random_state=0))
    auto.fit(X_tr, y_tr)
    path = auto[-1].tau_path_
    return {"fits": curve, "grid": path["tau"], "gcv": path["gcv"],
            "linearized_evidence": path["evidence"],
            "tau_gcv": gcv[-1].tau_, "tau_evidence": auto[-1].tau_}


def _intervals_1d():
    """A 1-D regression with a gap in the data and its 95 % interval."""
    from sklearn_ggn import GGNScoreRegressor

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-3, -1, 60), rng.uniform(1, 3, 60)])
    y = np.sin(2 * x) + 0.5 * x + 0.15 * rng.standard_normal(x.size)
    grid = np.linspace(-5, 5, 400)
    reg = GGNScoreRegressor(n_hidden=50, random_state=0).fit(x[:, None], y)
    mean, std = reg.predict(grid[:, None], return_std=True)
    return {"x": x, "y": y, "grid": grid, "mean": mean, "std": std,
            "structure": reg.uncertainty_}


def _mean(runs, model, key):
    return float(np.mean([r[model][key] for r in runs]))


def _report(raw):
    lines = []
    rows, wins, rmse_ok, coverage_ok = [], 0, 0, 0
    for name, res in raw["regression"].items():
        runs = res["runs"]
        g = {k: _mean(runs, "ggn", k) for k in ("rmse", "nll", "coverage",
                                                "fit_s", "plain_fit_s")}
        e = {k: _mean(runs, "ggn_gcv", k) for k in ("rmse", "nll", "coverage")}
        h = ({k: _mean(runs, "ggn_het", k) for k in ("nll", "coverage")}
             if "ggn_het" in runs[0] else {"nll": np.nan, "coverage": np.nan})
        o = ({k: _mean(runs, "ggn_homo", k) for k in ("nll", "coverage")}
             if "ggn_homo" in runs[0] else {"nll": np.nan, "coverage": np.nan})
        chosen = sum(r["ggn"].get("noise") == "heteroscedastic" for r in runs)
        m = {k: _mean(runs, "mlp", k) for k in ("rmse", "nll", "coverage")}
        cov_min = min(r["ggn"]["coverage"] for r in runs)
        cov_max = max(r["ggn"]["coverage"] for r in runs)
        wins += g["nll"] < m["nll"]
        rmse_ok += g["rmse"] <= 1.05 * m["rmse"]
        coverage_ok += 0.90 <= g["coverage"] <= 0.985
        rows.append((name, res["n_samples"], runs[0]["ggn"]["structure"],
                     g["rmse"], m["rmse"], g["nll"], m["nll"], g["coverage"],
                     f"{cov_min:.2f}-{cov_max:.2f}", m["coverage"],
                     e["rmse"], e["nll"], e["coverage"], o["nll"], h["nll"],
                     h["coverage"], g["nll"] - o["nll"], f"{chosen}/{len(runs)}",
                     g["fit_s"], g["plain_fit_s"]))
    n = len(raw["regression"])
    lines += [
        "## Regression",
        "",
        f"Means over {len(next(iter(raw['regression'].values()))['runs'])} random "
        "90/10 splits, test metrics in the units of y. `ggn`: "
        "`make_pipeline(StandardScaler(), GGNScoreRegressor())`, "
        "`predict(X, return_std=True)`; `mlp`: `MLPRegressor(max_iter=2000)` with "
        "the std of its training residuals; `gcv`: `GGNScoreRegressor("
        "tau=\"gcv\")`; `hom.` and `het.`: `GGNScoreRegressor(noise="
        "\"homoscedastic\")` and `noise=\"heteroscedastic\"` (the same mean "
        "as `ggn`, whose `noise=\"auto\"` chooses between them: `Δ hom.` is "
        "its NLL minus one variance's, `het. chosen` the splits where it took "
        "the variance that depends on x). Coverage of the "
        "central 95 % interval (mean, and "
        "range over the splits). Fit seconds with the posterior and without "
        "it (`uncertainty=None`).",
        "",
        md_table(["data", "rows", "structure", "RMSE ggn", "RMSE mlp", "NLL ggn",
                  "NLL mlp", "cov. ggn", "cov. range", "cov. mlp", "RMSE gcv",
                  "NLL gcv", "cov. gcv", "NLL hom.", "NLL het.", "cov. het.",
                  "Δ hom.", "het. chosen", "fit [s]", "fit w/o [s]"], rows),
        "",
        f"Coverage in [0.90, 0.985] on {coverage_ok}/{n} data sets (mean over "
        f"splits); NLL below the MLP's on {wins}/{n}; RMSE within 5 % of the "
        f"MLP's on {rmse_ok}/{n}.",
        "",
    ]
    rows = []
    for name, res in raw["classification"].items():
        runs = res["runs"]
        row = [name, runs[0]["structure"]]
        for model in ("map", "probit", "mlp"):
            row += [_mean(runs, model, "log_loss"), _mean(runs, model, "ece")]
        row.append(_mean(runs, "map", "accuracy"))
        rows.append(row)
    lines += [
        "## Classification",
        "",
        f"Means over {len(next(iter(raw['classification'].values()))['runs'])} "
        "stratified 80/20 splits of standardized inputs: "
        "`GGNScoreClassifier()` with `predictive=\"map\"` (softmax of the fitted "
        "logits) and `predictive=\"probit\"` (linearized Laplace), and "
        "`MLPClassifier(max_iter=1000)`. ECE: 15 equal-width bins of the "
        "top-class confidence.",
        "",
        md_table(["task", "structure", "log-loss map", "ECE map",
                  "log-loss probit", "ECE probit", "log-loss mlp", "ECE mlp",
                  "accuracy"], rows),
        "",
    ]
    ev = raw["evidence"]
    rows = [(f["tau"], f["log_evidence"], f["nll"], f["rmse"], f["coverage"])
            for f in ev["fits"]]
    lines += [
        "## Evidence over τ (diabetes, one 90/10 split)",
        "",
        f"`tau=\"gcv\"` chose τ = {ev['tau_gcv']:.3g}, "
        f"`tau=\"auto\"` (GCV, then the evidence path) τ = "
        f"{ev['tau_evidence']:.3g}.",
        "",
        md_table(["τ", "log_marginal_likelihood_", "test NLL", "test RMSE",
                  "coverage"], rows),
        "",
    ]
    summary = (f"coverage ok {coverage_ok}/{n}, NLL < MLP {wins}/{n}, "
               f"RMSE within 5 % {rmse_ok}/{n}")
    return "\n".join(lines), summary


def _plots(raw, mode, stamp):
    figures = []
    fig, (ax1, ax2, ax3) = new_figure(3, width=4.6)
    names = list(raw["regression"])
    x = np.arange(len(names))
    for offset, model in ((-0.2, "ggn"), (0.0, "ggn_gcv"), (0.2, "mlp")):
        ax1.bar(x + offset, [_mean(raw["regression"][n]["runs"], model, "coverage")
                             for n in names], 0.2, label=model)
        ax2.bar(x + offset, [_mean(raw["regression"][n]["runs"], model, "nll")
                             for n in names], 0.2, label=model)
    ax1.axhspan(0.90, 0.985, color="0.9", zorder=0)
    ax1.axhline(0.95, color="k", lw=0.8)
    ax1.set_ylim(0.5, 1.0)
    ax1.set_title("coverage of the 95 % interval")
    ax2.set_title("test NLL per point")
    for ax in (ax1, ax2):
        ax.set_xticks(x, names, rotation=30, fontsize=7)
    ax1.legend(fontsize=7)
    ev = raw["evidence"]
    taus = [f["tau"] for f in ev["fits"]]
    ax3.semilogx(taus, [f["log_evidence"] for f in ev["fits"]], "o-",
                 label="log evidence of the fit")
    ax3.set_xlabel("τ")
    ax3.set_ylabel("log evidence")
    twin = ax3.twinx()
    twin.semilogx(taus, [f["nll"] for f in ev["fits"]], "s--", color="C1",
                  label="test NLL")
    twin.set_ylabel("test NLL")
    ax3.axvline(ev["tau_gcv"], color="C2", lw=0.8, label="τ of GCV")
    ax3.axvline(ev["tau_evidence"], color="C3", lw=0.8, ls=":",
                label="τ of tau='auto'")
    ax3.set_title("diabetes: evidence over τ")
    ax3.legend(fontsize=7, loc="lower left")
    figures.append(save_figure(fig, NAME, mode, stamp))

    fig, axes = new_figure(len(raw["classification"]), width=4.0)
    for ax, (name, res) in zip(axes, raw["classification"].items(), strict=True):
        run = res["runs"][0]
        for model in ("map", "probit", "mlp"):
            ax.plot(*run[model]["reliability"], "o-", label=model)
        ax.plot([0, 1], [0, 1], "k:", lw=0.8)
        ax.set_title(f"{name}: reliability")
        ax.set_xlabel("confidence")
        ax.set_ylabel("accuracy")
        ax.legend(fontsize=7)
    figures.append(save_figure(fig, NAME, mode, stamp, "_reliability"))

    one = raw["intervals"]
    fig, (ax,) = new_figure(1, width=6.5)
    ax.fill_between(one["grid"], one["mean"] - Z95 * one["std"],
                    one["mean"] + Z95 * one["std"], color="C0", alpha=0.25,
                    label="95 % predictive interval")
    ax.plot(one["grid"], one["mean"], color="C0", label="predict(X)")
    ax.plot(one["x"], one["y"], "k.", ms=3, label="training data")
    ax.set_title("GGNScoreRegressor().predict(X, return_std=True)")
    ax.legend(fontsize=8, loc="upper left")
    figures.append(save_figure(fig, NAME, mode, stamp, "_intervals"))
    return figures


def run(mode, stamp):
    cfg = CONFIG[mode]
    with LoadMonitor() as monitor, quiet_warnings():
        raw = {"regression": _regression(cfg["regression"], cfg["splits"]),
               "classification": _classification(cfg["classification"],
                                                 cfg["class_splits"]),
               "evidence": _evidence_curve(cfg["tau_grid"]),
               "intervals": _intervals_1d()}
    body, summary = _report(raw)
    figures = []
    try:
        figures = _plots(raw, mode, stamp)
    except ImportError:  # matplotlib is optional
        pass
    print(body)
    write_result(NAME, mode, TITLE, stamp, monitor, body, raw, figures)
    raw["summary"] = summary
    return raw


# ------------------------------------------------------------------ UCI
# The standard benchmark of predictive uncertainty on UCI regression sets
# (Hernández-Lobato & Adams 2015): its fixed random 90/10 splits, test RMSE
# and Gaussian NLL per point in the units of y, averaged over the splits.
UCI_SETS = ("yacht", "energy", "concrete", "kin8nm", "power-plant",
            "protein-tertiary-structure")
# sets small enough for an exact Gaussian process on every split
UCI_GP_SETS = ("yacht", "energy", "concrete")
# the published means over the splits, (RMSE, NLL): MC dropout (Gal &
# Ghahramani 2016) and deep ensembles of 5 networks (Lakshminarayanan et al.
# 2017)
UCI_PUBLISHED = {
    "concrete": {"mc_dropout": (5.23, 3.04), "deep_ensemble": (6.03, 3.06)},
    "energy": {"mc_dropout": (1.66, 1.99), "deep_ensemble": (2.09, 1.38)},
    "yacht": {"mc_dropout": (1.11, 1.55), "deep_ensemble": (1.58, 1.18)},
    "kin8nm": {"mc_dropout": (0.10, -0.95), "deep_ensemble": (0.09, -1.20)},
    "power-plant": {"mc_dropout": (4.02, 2.80), "deep_ensemble": (4.11, 2.79)},
    "protein-tertiary-structure": {"mc_dropout": (4.36, 2.89),
                                   "deep_ensemble": (4.71, 2.83)},
}
UCI_MODELS = ("ggn", "ggn_homo", "ggn_het", "mlp", "gp", "ngboost")
# the models of the package among them (with return_std and a posterior),
# as the report names them
UCI_GGN = {"ggn": "defaults", "ggn_homo": "homoscedastic",
           "ggn_het": "heteroscedastic"}


def uci_splits(folder):
    """``(X, y, [(train_rows, test_rows), ...])`` of one set in the layout of
    the benchmark's reference code (``data.txt.gz``, ``index_features.txt``,
    ``index_target.txt``, ``n_splits.txt``, ``splits.tgz``)."""
    import gzip
    import io
    import tarfile
    from pathlib import Path

    folder = Path(folder)
    with gzip.open(folder / "data.txt.gz", "rt") as fh:
        data = np.loadtxt(fh)
    features = np.atleast_1d(np.loadtxt(folder / "index_features.txt")).astype(int)
    target = int(np.loadtxt(folder / "index_target.txt"))
    n_splits = int(np.loadtxt(folder / "n_splits.txt"))
    splits = []
    with tarfile.open(folder / "splits.tgz") as tf:
        names = {Path(m.name).name: m for m in tf.getmembers()}

        def rows(name):
            return np.atleast_1d(np.loadtxt(io.BytesIO(
                tf.extractfile(names[name]).read()))).astype(int)

        for k in range(n_splits):
            splits.append((rows(f"index_train_{k}.txt"),
                           rows(f"index_test_{k}.txt")))
    return data[:, features], data[:, target], splits


def _uci_models(name, seed, n_features):
    """The models of one split: ``{label: (make, predicts_std)}``."""
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_ggn import GGNScoreRegressor

    models = {
        "ggn": lambda: make_pipeline(StandardScaler(),
                                     GGNScoreRegressor(random_state=seed)),
        "ggn_homo": lambda: make_pipeline(StandardScaler(), GGNScoreRegressor(
            random_state=seed, noise="homoscedastic")),
        "ggn_het": lambda: make_pipeline(StandardScaler(), GGNScoreRegressor(
            random_state=seed, noise="heteroscedastic")),
        "mlp": lambda: make_pipeline(StandardScaler(),
                                     MLPRegressor(max_iter=2000,
                                                  random_state=seed)),
    }
    if name in UCI_GP_SETS:
        def gp():
            from sklearn.gaussian_process import GaussianProcessRegressor
            from sklearn.gaussian_process.kernels import RBF, ConstantKernel
            from sklearn.gaussian_process.kernels import WhiteKernel

            # one length scale per feature (ARD)
            kernel = (ConstantKernel() * RBF(length_scale=np.ones(n_features))
                      + WhiteKernel())
            return make_pipeline(StandardScaler(), GaussianProcessRegressor(
                kernel, normalize_y=True, random_state=seed))
        models["gp"] = gp
    try:
        from ngboost import NGBRegressor
    except ImportError:  # optional: the column is left out
        pass
    else:
        models["ngboost"] = lambda: NGBRegressor(random_state=seed, verbose=False)
    return models


def _uci_predict(label, model, X):
    """``(mean, std)`` of a fitted model on X."""
    if label in UCI_GGN:
        return model.predict(X, return_std=True)
    if label == "gp":
        return model.predict(X, return_std=True)
    if label == "ngboost":
        dist = model.pred_dist(X)
        return dist.params["loc"], dist.params["scale"]
    return model.predict(X), None


def _uci_split(name, X, y, train, test, seed, labels):
    run = {}
    for label, make in _uci_models(name, seed, X.shape[1]).items():
        if label not in labels:
            continue
        model = make()
        t0 = time.perf_counter()
        model.fit(X[train], y[train])
        fit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        mean, std = _uci_predict(label, model, X[test])
        std_s = time.perf_counter() - t0
        if std is None:  # the MLP plug-in: its training residuals' std
            std = np.full_like(mean, float(np.std(y[train]
                                                  - model.predict(X[train]))))
        record = {**gaussian_metrics(y[test], mean, std), "fit_s": fit_s,
                  "predict_s": std_s}
        if label in UCI_GGN:
            est = model[-1]
            record.update(structure=est.uncertainty_, tau=float(est.tau_),
                          epochs=int(est.n_iter_), noise=est.noise_,
                          noise_scores=est.noise_scores_,
                          input_transform=est.input_transform_)
        run[label] = record
    return run


def uci_benchmark(data_home, sets=UCI_SETS, max_splits=None, labels=UCI_MODELS,
                  on_set=None):
    """Every split of every set found under ``data_home`` (a missing set is
    skipped). ``on_set(results)`` is called after each set."""
    from pathlib import Path

    results = {}
    for name in sets:
        folder = Path(data_home) / name
        if not (folder / "data.txt.gz").exists():
            print(f"[uci] {name}: not found under {data_home}, skipped",
                  flush=True)
            continue
        X, y, splits = uci_splits(folder)
        runs = []
        for seed, (train, test) in enumerate(splits[:max_splits]):
            runs.append(_uci_split(name, X, y, train, test, seed, labels))
            ggn = runs[-1].get("ggn", {})
            print(f"[uci] {name} split {seed}: " + ", ".join(
                f"{k} rmse {v['rmse']:.3f} nll {v['nll']:.3f} cov "
                f"{v['coverage']:.3f}" for k, v in runs[-1].items())
                + (f"; ggn fit {ggn['fit_s']:.1f} s, std {ggn['predict_s']:.1f} s"
                   if ggn else ""), flush=True)
        results[name] = {"n_samples": int(len(y)), "n_features": int(X.shape[1]),
                         "n_splits": len(runs), "runs": runs}
        if on_set is not None:
            on_set(results)
    return results


def _uci_summary(results):
    """Per set and model: the means (and standard errors) over the splits."""
    summary = {}
    for name, res in results.items():
        runs = res["runs"]
        summary[name] = {}
        for label in UCI_MODELS:
            values = [r[label] for r in runs if label in r]
            if not values:
                continue
            entry = {}
            for key in ("rmse", "nll", "coverage", "fit_s", "predict_s"):
                v = np.array([r[key] for r in values], dtype=float)
                entry[key] = float(v.mean())
                entry[key + "_se"] = float(v.std(ddof=1) / np.sqrt(v.size)
                                           if v.size > 1 else 0.0)
            if label in UCI_GGN:
                entry["structure"] = sorted({r["structure"] for r in values})
                entry["heteroscedastic_chosen"] = sum(
                    r.get("noise") == "heteroscedastic" for r in values)
            summary[name][label] = entry
    return summary


def _uci_report(results):
    summary = _uci_summary(results)
    names = list(summary)

    def cell(name, label, key, digits):
        entry = summary[name].get(label)
        if entry is None:
            return "-"
        return f"{entry[key]:.{digits}f} ± {entry[key + '_se']:.{digits}f}"

    def published(name, which, index):
        return f"{UCI_PUBLISHED[name][which][index]:.2f}"

    lines = ["Command: `python -m benchmarks.uncertainty --uci --data-home DIR` "
             "(see the module's docstring).", "",
             "Test metrics in the units of y, mean ± standard error over the "
             "splits. GGN-SCORE: `make_pipeline(StandardScaler(), "
             "GGNScoreRegressor())` at its defaults, `predict(X, "
             "return_std=True)` (`noise=\"auto\"`: one variance or one that "
             "depends on x, by their held-out likelihood); homoscedastic and "
             "heteroscedastic: the same with `noise=\"homoscedastic\"` and "
             "`noise=\"heteroscedastic\"` (the same fit of the mean; the "
             "noise networks are fitted on first use); MLP: "
             "`MLPRegressor(max_iter=2000)` with the "
             "standard deviation of its training residuals as a constant std; "
             "GP: `GaussianProcessRegressor` (constant × ARD RBF + white "
             "noise, `normalize_y=True`) on the small sets; NGBoost: `NGBRegressor()` "
             "defaults; MC dropout and deep ensembles: the published means. "
             "`splits`: how many of the set's fixed splits (the first ones) "
             "the run took; the protocol takes all of them (20; 5 for "
             "protein) and `--splits` caps them.", ""]
    for key, title, digits in (("rmse", "RMSE", 3), ("nll", "Gaussian NLL", 3),
                               ("coverage", "95 % interval coverage", 3)):
        headers = ["set", "rows", "splits", "GGN-SCORE", "homoscedastic",
                   "heteroscedastic",
                   "MLP plug-in", "GP", "NGBoost"]
        if key != "coverage":
            headers += ["MC dropout", "deep ensemble"]
        rows = []
        for name in names:
            row = [name, results[name]["n_samples"], results[name]["n_splits"]]
            row += [cell(name, label, key, digits) for label in UCI_MODELS]
            if key != "coverage":
                index = 0 if key == "rmse" else 1
                row += [published(name, "mc_dropout", index),
                        published(name, "deep_ensemble", index)]
            rows.append(row)
        lines += [f"### {title}", "", md_table(headers, rows), ""]
    rows = []
    for name in names:
        for label, model in UCI_GGN.items():
            if label not in summary[name]:  # (a run of the other models only)
                continue
            g = summary[name][label]
            rows.append([name, model, ", ".join(g["structure"]),
                         f"{g['heteroscedastic_chosen']}/"
                         f"{results[name]['n_splits']}",
                         f"{g['fit_s']:.2f}", f"{g['predict_s']:.2f}",
                         f"{g['predict_s'] / g['fit_s']:.2f}"])
    lines += ["### GGN-SCORE's cost and noise", "",
              "Mean seconds per split; the first `return_std` call builds the "
              "posterior (and the noise networks). `het.`: the splits whose "
              "predictive noise depends on x.", "",
              md_table(["set", "model", "posterior", "het.", "fit [s]",
                        "first return_std [s]", "ratio"], rows), ""]
    # the acceptance bar of the benchmark
    checks = []
    for label, model in UCI_GGN.items():
        for name in names:
            s = summary[name]
            if label not in s:
                continue
            g = s[label]
            best_published = min(v[1] for v in UCI_PUBLISHED[name].values())
            checks.append([
                name, model, f"{g['coverage']:.3f}",
                "yes" if 0.90 <= g["coverage"] <= 0.985 else "no",
                f"{g['rmse'] / s['mlp']['rmse']:.3f}" if "mlp" in s else "-",
                ("-" if "mlp" not in s
                 else "yes" if g["rmse"] <= 1.05 * s["mlp"]["rmse"] else "no"),
                ("yes" if g["nll"] <= s["ngboost"]["nll"] else "no")
                if "ngboost" in s else "-",
                "yes" if g["nll"] <= best_published else "no"])
    lines += ["### Where GGN-SCORE stands against the bar", "",
              "Coverage in [0.90, 0.985]; RMSE at most 1.05× the MLP's; NLL at "
              "most NGBoost's and the best published one.", "",
              md_table(["set", "model", "coverage", "in range", "RMSE / MLP",
                        "≤ 1.05", "NLL ≤ NGBoost", "NLL ≤ best published"],
                       checks), ""]
    checks = [r[:1] + r[2:] for r in checks if r[1] == "defaults"]
    n_cov = sum(r[2] == "yes" for r in checks)
    summary_line = (f"coverage in range on {n_cov}/{len(checks)} sets; "
                    f"RMSE within 1.05x MLP on "
                    f"{sum(r[4] == 'yes' for r in checks)}/"
                    f"{sum(r[4] != '-' for r in checks)}")
    return "\n".join(lines), summary_line


class _PartialRun:
    """Stands in for the load monitor in a result written while the run
    goes on."""

    def markdown(self):
        return "Partial result (the run goes on; its load summary comes at the end)."

    def summary(self):
        return {"partial": True}


def run_uci(data_home, max_splits=None, sets=UCI_SETS, mode="uci",
            labels=UCI_MODELS):
    """Run the UCI benchmark and write ``results/uncertainty_<mode>.md``
    (+ ``.json``); sets absent from ``data_home`` are skipped."""
    from ._common import machine_stamp

    stamp = machine_stamp()

    def write(results, monitor):
        body, _ = _uci_report(results)
        write_result(NAME, mode, "Predictive uncertainty on the UCI "
                     "regression benchmark", stamp, monitor, body,
                     {"uci": results, "summary": _uci_summary(results)})

    with LoadMonitor() as monitor, quiet_warnings():
        # (after each set, a partial result without the load summary)
        results = uci_benchmark(data_home, sets, max_splits, labels,
                                on_set=lambda r: write(r, _PartialRun()))
    if not results:
        print("[uci] no data found: nothing to report")
        return {}
    body, summary = _uci_report(results)
    write(results, monitor)
    print(body)
    return {"uci": results, "summary": summary}


class _MergedRuns:
    """The load summaries of the merged runs, in place of one monitor."""

    def __init__(self, loads):
        self.loads = loads

    def markdown(self):
        def package(d):
            return f" sklearn_ggn {d['package']}:" if d.get("package") else ""

        return " ".join(
            f"Run {i + 1} ({', '.join(sets)}):{package(d)} load not recorded."
            if d.get("partial") or "wall_s" not in d else
            f"Run {i + 1} ({', '.join(sets)}):{package(d)} {d['wall_s']:.0f} s, "
            f"1-min load average median {d.get('load1_median_during', float('nan')):.2f}, "
            f"other processes {d.get('other_processes_cores', float('nan')):.2f} cores."
            for i, (sets, d) in enumerate(self.loads))

    def summary(self):
        return {"runs": [{"sets": sets, **d} for sets, d in self.loads]}


def merge_uci(paths, mode="uci"):
    """One report (``results/uncertainty_<mode>.md`` and ``.json``) from the
    ``.json`` results of UCI runs over different sets, in order: a later
    file's runs of a set replace an earlier one's, split by split and model
    by model."""
    import json

    results, loads, stamp = {}, [], None
    for path in paths:
        with open(path) as fh:
            payload = json.load(fh)
        uci = payload["results"]["uci"]
        for name, res in uci.items():
            if name not in results:
                results[name] = res
                continue
            # the same set with other models: merged split by split
            merged = results[name]["runs"]
            for i, run in enumerate(res["runs"]):
                if i < len(merged):
                    merged[i].update(run)
                else:
                    merged.append(run)
            results[name]["n_splits"] = len(merged)
        load = payload.get("load", {})
        stamped = (payload.get("machine") or {}).get("sklearn_ggn")
        if "runs" in load:  # a merged report: its runs, one by one (package unknown)
            for run in load["runs"]:
                run = dict(run)
                loads.append((run.pop("sets"), run))
        else:
            loads.append((list(uci), dict(load, package=stamped)))
        # (the newest run's machine and package stamp the report)
        stamp = payload.get("machine") or stamp
    ordered = {name: results[name] for name in UCI_SETS if name in results}
    body, _ = _uci_report(ordered)
    write_result(NAME, mode, "Predictive uncertainty on the UCI regression "
                 "benchmark", stamp, _MergedRuns(loads), body,
                 {"uci": ordered, "summary": _uci_summary(ordered)},
                 command="python -m benchmarks.uncertainty --merge ...")
    print(body)
    return ordered


def main(argv=None):
    """``python -m benchmarks.uncertainty --uci --data-home DIR``."""
    import argparse
    import os

    parser = argparse.ArgumentParser(prog="python -m benchmarks.uncertainty",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--uci", action="store_true",
                        help="the UCI regression benchmark (fixed splits)")
    parser.add_argument("--data-home", default=os.environ.get("UCI_REGRESSION_DATA"),
                        help="folder holding one subfolder per set "
                             "(default: $UCI_REGRESSION_DATA)")
    parser.add_argument("--splits", type=int, default=None,
                        help="at most this many splits per set")
    parser.add_argument("--sets", nargs="+", default=list(UCI_SETS),
                        choices=UCI_SETS)
    parser.add_argument("--models", nargs="+", default=list(UCI_MODELS),
                        choices=UCI_MODELS,
                        help="the models to run (default: all; NGBoost only "
                             "when installed, the GP on the small sets only)")
    parser.add_argument("--mode", default="uci",
                        help="suffix of the result files (default: uci)")
    parser.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                        help="write one report from the .json results of runs "
                             "that took different sets (e.g. in two processes) "
                             "instead of running")
    args = parser.parse_args(argv)
    if args.merge:
        merge_uci(args.merge, args.mode)
        return 0
    if not args.uci:
        parser.error("only --uci runs from here; the other sections run "
                     "through python -m benchmarks --only uncertainty")
    if not args.data_home or not os.path.isdir(args.data_home):
        print("[uci] no data folder (--data-home or $UCI_REGRESSION_DATA): "
              "skipped")
        return 0
    run_uci(args.data_home, args.splits, tuple(args.sets), args.mode,
            tuple(args.models))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
