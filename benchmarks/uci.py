"""Benchmark 4: the UCI sets of the paper's appendix vs GD and MLPClassifier.

Datasets and settings are those of ``examples/plot_uci.py`` (the paper's
appendix "Comparison with GD", Tables ``tab:datasets`` / ``tab:stability``):
pendigits (7494 / 3498, inputs divided by 100), letter (10500 / 5000, LIBSVM
scaling) and avila (10430 / 10437, z-normalized), labels encoded as 0..K-1.

Methods (all on float64 data):

* **GGN-SCORE**: ``GGNScoreClassifier(loss="squared_error", n_hidden=128,
  activation="relu", fit_intercept=False, tau=1e-4, mu=c·√128,
  batch_size=b, damping="auto", random_state=0)`` with (b, c) = (8, 0.001),
  (64, 10), (64, 10) for pendigits, letter, avila, trained for ``E`` epochs
  (``ggn_epochs``: 1 in ``--quick``, 3 in ``--full``).
* **GD**: the same estimator with ``solver="gd"``, ``learning_rate=1`` (the
  paper's baseline on the unregularized risk), the *same initial weights and
  the same mini-batches* in the same order, run for at least
  ``gd_ratio · E`` epochs (the authors' code: 2000 GD epochs for 50 GGN ones,
  ratio 40) and at least as long as GGN-SCORE took. Reported at E epochs, at
  40·E epochs and at GGN-SCORE's wall time.
* **MLP**: ``MLPClassifier(hidden_layer_sizes=(128,), activation="relu")``,
  all else default (adam, lr 1e-3, batches of 200, log-loss, biases,
  Glorot init; seed 0), run epoch by epoch at least until scikit-learn's own
  stopping rule (training loss not improving by ``tol`` for
  ``n_iter_no_change`` epochs, or ``max_iter=200``) would end ``fit`` and at
  least as long as GGN-SCORE took. Reported at E epochs, at its default
  convergence (the epoch where ``fit`` stops) and at GGN-SCORE's wall time
  (training continued past that stop).

**What is timed.** Every method runs as one *traced run* whose timer covers
only the training calls; test metrics are evaluated between calls, outside
the timer. GGN-SCORE and GD: an epoch is a permutation of the training set
drawn from a fixed seed (the same for both methods) cut into consecutive
mini-batches of b (the last one incomplete, as ``fit`` does); the run feeds
whole-batch chunks of it to ``partial_fit`` (``shuffle=False``), so the
steps are exactly those of ``fit(X[perm], y[perm], shuffle=False)`` epoch by
epoch (checked to give bit-identical weights) and the chunks only add
evaluation points (~30 log-spaced plus 16 per epoch for the first E epochs,
then one per GD epoch). MLP: one ``partial_fit`` (one epoch, its own
shuffling) per call, seeded by one ``RandomState(0)`` instance continued
across the calls (an int seed would repeat the first epoch's order every
epoch); the epoch at which ``fit`` would stop is found by replaying
``fit``'s stopping rule on ``loss_curve_``. "train time" is the cumulative
time of those calls. Untimed warm-up calls on every dataset (both solvers,
``fit`` and ``partial_fit``, a few batches) come first, so numba
compilation is excluded. A traced run whose first time is below
``cheap_s`` is repeated (``repeats``), the same steps each time, and its
times are medians per evaluation point; the other runs are timed once.
Runs of GD and MLP stop at ``cap_s`` seconds even if GGN-SCORE took longer
(the row then says where it was cut). ``CONFIG``: ``--quick`` 1 GGN-SCORE
epoch, repeats 3 below 2 s, cut at 40 s, checks below 5 s; ``--full`` 3
epochs, repeats 3 below 30 s, cut at 150 s, checks below 60 s (3 timings
below 30 s).

As a check of the chunked timing, a plain ``fit`` of the same budget is timed
where that is cheap (traced time below ``check_below_s``): GGN-SCORE
``fit(max_iter=E)`` and GD ``fit(max_iter=40·E)`` (own shuffling with
``random_state=0``) and MLP ``fit()`` (default budget): the same work as the
traced runs in another batch order, so the accuracy may differ a little.

Reported per dataset: train time, test accuracy, test loss ½·mean((Φ −
onehot)²) over samples and classes (the paper's squared loss; for the MLP on
its predicted probabilities), the time and accuracy of each row relative to
GGN-SCORE, the count of ``partial_fit`` calls in which the package detected
divergence (and kept the parameters from before the call), and the time GD
and MLP need to first reach GGN-SCORE's final test accuracy.

Data: ``SKLEARN_GGN_DATA`` or a ``shared/data`` folder beside the repository,
read by :func:`sklearn_ggn.datasets.load_uci` without downloading; a dataset
whose files are absent is skipped with a message. ``--smoke`` uses random
subsets (600 training / 400 test rows) and tiny budgets.
"""

import os
import time
import warnings

import numpy as np

from ._common import (
    REPO_DIR,
    LoadMonitor,
    fmt,
    md_table,
    median,
    quiet_warnings,
    save_figure,
    write_result,
)

NAME = "uci"
TITLE = "Benchmark 4: UCI sets of the paper's appendix vs GD and MLPClassifier"

N_HIDDEN = 128
TAU = 1e-4
SEED = 0
# dataset: (batch size, c in μ = c·√n, input divisor) -- see examples/plot_uci.py
SETTINGS = {
    "pendigits": (8, 0.001, 100.0),
    "letter": (64, 10.0, 1.0),
    "avila": (64, 10.0, 1.0),
}

CONFIG = {
    "smoke": {"subset": (600, 400), "ggn_epochs": 1, "gd_ratio": 4,
              "mlp_max_iter": 20, "cap_s": 5.0, "max_epochs": 200,
              "repeats": 2, "cheap_s": 1.0, "check_below_s": 10.0,
              "check_repeats": 1},
    "quick": {"subset": None, "ggn_epochs": 1, "gd_ratio": 40,
              "mlp_max_iter": 200, "cap_s": 40.0, "max_epochs": 2000,
              "repeats": 3, "cheap_s": 2.0, "check_below_s": 5.0,
              "check_repeats": 1},
    "full": {"subset": None, "ggn_epochs": 3, "gd_ratio": 40,
             "mlp_max_iter": 200, "cap_s": 150.0, "max_epochs": 2000,
             "repeats": 3, "cheap_s": 30.0, "check_below_s": 60.0,
             "check_repeats": 3},
}


# -------------------------------------------------------------------- data
def _data_home(name):
    for candidate in (os.environ.get("SKLEARN_GGN_DATA"),
                      REPO_DIR.parent / "shared" / "data"):
        if candidate and os.path.isdir(os.path.join(candidate, name)):
            return str(candidate)
    return None


def _load(name, subset):
    """(X, y, X_test, y_test, K) with the example's scaling, labels 0..K-1."""
    from sklearn.preprocessing import LabelEncoder

    from sklearn_ggn.datasets import load_uci

    data_home = _data_home(name)
    if data_home is None:
        raise FileNotFoundError(f"no '{name}/' folder (set SKLEARN_GGN_DATA)")
    X, y, X_test, y_test = load_uci(name, data_home, download_if_missing=False)
    scale = SETTINGS[name][2]
    X, X_test = X / scale, X_test / scale
    encoder = LabelEncoder().fit(y)
    y, y_test = encoder.transform(y), encoder.transform(y_test)
    if subset is not None:
        rng = np.random.default_rng(SEED)
        tr = rng.choice(len(X), min(subset[0], len(X)), replace=False)
        te = rng.choice(len(X_test), min(subset[1], len(X_test)), replace=False)
        X, y, X_test, y_test = X[tr], y[tr], X_test[te], y_test[te]
    return (np.ascontiguousarray(X), y, np.ascontiguousarray(X_test), y_test,
            len(encoder.classes_))


# ------------------------------------------------------------------ models
def _network(name, solver, **extra):
    from sklearn_ggn import GGNScoreClassifier

    batch_size, c, _ = SETTINGS[name]
    params = dict(loss="squared_error", n_hidden=N_HIDDEN, activation="relu",
                  scaling="ntk", fit_intercept=False, mu=c * np.sqrt(N_HIDDEN),
                  tau=TAU, solver=solver, learning_rate=1.0,
                  batch_size=batch_size, shuffle=False, damping="auto",
                  random_state=SEED)
    params.update(extra)
    return GGNScoreClassifier(**params)


def _mlp(random_state, max_iter):
    from sklearn.neural_network import MLPClassifier

    return MLPClassifier(hidden_layer_sizes=(N_HIDDEN,), activation="relu",
                         random_state=random_state, max_iter=max_iter)


def _metrics(scores, y_test, classes):
    """Test accuracy and ½·mean((scores − onehot)²)."""
    onehot = (y_test[:, None] == classes[None, :]).astype(float)
    accuracy = float(np.mean(classes[scores.argmax(axis=1)] == y_test))
    return accuracy, float(0.5 * np.mean((scores - onehot) ** 2))


def _mlp_stop_epoch(loss_curve, tol, n_iter_no_change, max_iter):
    """The epoch at which ``MLPClassifier.fit`` (adam, no early stopping)
    stops: its training-loss rule, replayed on ``loss_curve_``."""
    best, count = np.inf, 0
    for epoch, loss in enumerate(loss_curve, start=1):
        count = count + 1 if loss > best - tol else 0
        best = min(best, loss)
        if count > n_iter_no_change or epoch >= max_iter:
            return epoch
    return None


# ------------------------------------------------------------ traced runs
class _Permutations:
    """Epoch e's order of the n training rows, the same for every method."""

    def __init__(self, n):
        self.n, self._memo = n, {}

    def __call__(self, epoch):
        if epoch not in self._memo:
            self._memo = {epoch: np.random.default_rng([SEED, epoch])
                           .permutation(self.n)}
        return self._memo[epoch]


def _ggn_checkpoints(steps_per_epoch, epochs, n_log=30, per_epoch=16):
    total = steps_per_epoch * epochs
    points = set(np.geomspace(1, total, n_log).astype(int).tolist())
    for e in range(epochs):
        points.update(e * steps_per_epoch
                      + np.linspace(0, steps_per_epoch, per_epoch + 1)[1:]
                      .astype(int))
    return sorted(p for p in points if 1 <= p <= total)


def _traced_network(est, data, perms, plan, stop=None):
    """Train ``est`` by ``partial_fit`` up to each global step count of
    ``plan`` (an iterable), evaluating after each; ``stop(steps, epochs,
    elapsed)`` ends the run early. Returns the curve."""
    from sklearn.exceptions import ConvergenceWarning

    X, y, X_test, y_test, K = data
    classes = np.arange(K)
    n, b = len(X), est.batch_size
    spe = -(-n // b)  # steps per epoch, the last batch incomplete
    curve = {"steps": [], "epochs": [], "time": [], "accuracy": [], "loss": [],
             "diverged": 0}
    done, elapsed = 0, 0.0
    for target in plan:
        while done < target:
            epoch, k = divmod(done, spe)
            k_end = min(spe, target - epoch * spe)
            idx = perms(epoch)[k * b: min(k_end * b, n)]
            X_chunk, y_chunk = X[idx], y[idx]
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                start = time.perf_counter()
                est.partial_fit(X_chunk, y_chunk, classes=classes)
                elapsed += time.perf_counter() - start
            curve["diverged"] += sum(issubclass(w.category, ConvergenceWarning)
                                     for w in caught)
            done = epoch * spe + k_end
        accuracy, loss = _metrics(est.decision_function(X_test), y_test, classes)
        for key, value in (("steps", done), ("epochs", done / spe),
                           ("time", elapsed), ("accuracy", accuracy),
                           ("loss", loss)):
            curve[key].append(value)
        if stop is not None and stop(done, done / spe, elapsed):
            break
    return curve


def _traced_mlp(data, max_iter, n_epochs=None, stop=None):
    """Epoch-by-epoch ``partial_fit`` of the MLP; see the module docstring."""
    X, y, X_test, y_test, K = data
    classes = np.arange(K)
    model = _mlp(np.random.RandomState(SEED), max_iter)
    curve = {"epochs": [], "time": [], "accuracy": [], "loss": [],
             "stop_epoch": None}
    elapsed, epoch = 0.0, 0
    with quiet_warnings():
        while n_epochs is None or epoch < n_epochs:
            start = time.perf_counter()
            model.partial_fit(X, y, classes=classes)
            elapsed += time.perf_counter() - start
            epoch += 1
            accuracy, loss = _metrics(model.predict_proba(X_test), y_test,
                                      model.classes_)
            for key, value in (("epochs", epoch), ("time", elapsed),
                               ("accuracy", accuracy), ("loss", loss)):
                curve[key].append(value)
            if curve["stop_epoch"] is None:
                curve["stop_epoch"] = _mlp_stop_epoch(
                    model.loss_curve_, model.tol, model.n_iter_no_change, max_iter)
            if stop is not None and stop(epoch, curve["stop_epoch"], elapsed):
                break
    return curve


def _median_curve(runs):
    """First run's metrics with the median time per evaluation point."""
    curve = dict(runs[0])
    curve["time"] = [median([r["time"][i] for r in runs])
                     for i in range(len(runs[0]["time"]))]
    curve["time_runs"] = [r["time"][-1] for r in runs]
    curve["repeats"] = len(runs)
    return curve


def _repeat(first, again, cfg):
    runs = [first]
    if first["time"][-1] < cfg["cheap_s"]:
        runs += [again() for _ in range(cfg["repeats"] - 1)]
    return _median_curve(runs)


# ------------------------------------------------------------ per dataset
def _at(curve, index, label):
    """Row dict for the curve's point ``index`` (None: not reached)."""
    if index is None:
        return {"label": label, "reached": False}
    return {"label": label, "reached": True,
            "epochs": curve["epochs"][index], "time": curve["time"][index],
            "accuracy": curve["accuracy"][index], "loss": curve["loss"][index]}


def _index_epoch(curve, epochs):
    for i, e in enumerate(curve["epochs"]):
        if e >= epochs - 1e-9:
            return i
    return None


def _index_time(curve, t):
    """Last point finished by time t."""
    idx = None
    for i, ti in enumerate(curve["time"]):
        if ti <= t:
            idx = i
    return idx


def _equal_time_label(method, curve, t_ggn):
    if curve["time_runs"][0] < t_ggn:  # the first run hit cap_s or max_epochs
        return f"{method}, same wall time (cut at {curve['time'][-1]:.3g} s)"
    return f"{method}, same wall time"


def _time_to(curve, accuracy):
    for ti, acc in zip(curve["time"], curve["accuracy"], strict=True):
        if acc >= accuracy:
            return ti
    return float("nan")


def _timed(fn, repeats):
    times, model = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        model = fn()
        times.append(time.perf_counter() - start)
    return times, model


def _dataset(name, cfg):
    data = _load(name, cfg["subset"])
    X, y, X_test, y_test, K = data
    batch_size = SETTINGS[name][0]
    n = len(X)
    spe = -(-n // batch_size)
    E = cfg["ggn_epochs"]
    perms = _Permutations(n)
    classes = np.arange(K)

    with quiet_warnings():  # warm-up: numba compilation, imports
        warm = X[: 3 * batch_size + batch_size // 2], y[: 3 * batch_size
                                                        + batch_size // 2]
        for solver in ("ggn", "gd"):
            _network(name, solver).partial_fit(*warm, classes=classes)
            _network(name, solver, max_iter=1, shuffle=True).fit(*warm)
        _mlp(SEED, 1).fit(*warm)

    # GGN-SCORE: E epochs.
    plan = _ggn_checkpoints(spe, E)
    ggn = _repeat(_traced_network(_network(name, "ggn"), data, perms, plan),
                  lambda: _traced_network(_network(name, "ggn"), data, perms,
                                          plan), cfg)
    t_ggn = ggn["time"][-1]

    # GD: the same mini-batches, ≥ gd_ratio·E epochs and ≥ t_ggn seconds.
    need = cfg["gd_ratio"] * E

    def gd_plan():
        yield from plan
        epoch = E
        while True:
            epoch += 1
            yield epoch * spe

    def gd_stop(steps, epochs, elapsed):
        return ((epochs >= need and elapsed >= t_ggn) or elapsed >= cfg["cap_s"]
                or epochs >= cfg["max_epochs"])

    gd_first = _traced_network(_network(name, "gd"), data, perms, gd_plan(),
                               gd_stop)
    fixed = list(gd_first["steps"])
    gd = _repeat(gd_first, lambda: _traced_network(_network(name, "gd"), data,
                                                   perms, fixed), cfg)

    # MLP: ≥ its fit's stopping epoch and ≥ t_ggn seconds.
    def mlp_stop(epoch, stop_epoch, elapsed):
        return ((stop_epoch is not None and elapsed >= t_ggn)
                or elapsed >= cfg["cap_s"] or epoch >= cfg["max_epochs"])

    mlp_first = _traced_mlp(data, cfg["mlp_max_iter"], stop=mlp_stop)
    mlp = _repeat(mlp_first, lambda: _traced_mlp(
        data, cfg["mlp_max_iter"], n_epochs=len(mlp_first["epochs"])), cfg)
    stop_epoch = mlp["stop_epoch"]

    rows = [
        _at(ggn, len(ggn["time"]) - 1, f"GGN-SCORE, {E} epoch(s)"),
        _at(gd, _index_epoch(gd, E), f"GD, same epochs ({E})"),
        _at(gd, _index_epoch(gd, need), f"GD, {cfg['gd_ratio']}× epochs ({need})"),
        _at(gd, _index_time(gd, t_ggn), _equal_time_label("GD", gd, t_ggn)),
        _at(mlp, _index_epoch(mlp, E), f"MLP adam, same epochs ({E})"),
        _at(mlp, None if stop_epoch is None else stop_epoch - 1,
            "MLP adam, default convergence"),
        _at(mlp, _index_time(mlp, t_ggn),
            _equal_time_label("MLP adam", mlp, t_ggn)),
    ]
    for row in rows:
        row["method"] = row["label"].split(",")[0]
        row["diverged"] = {"GGN-SCORE": ggn["diverged"],
                           "GD": gd["diverged"]}.get(row["method"], 0)
        row["repeats"] = {"GGN-SCORE": ggn["repeats"], "GD": gd["repeats"],
                          "MLP adam": mlp["repeats"]}[row["method"]]

    # Plain fit() checks where cheap.
    checks = []
    reps = cfg["check_repeats"]
    cases = [
        ("GGN-SCORE fit(max_iter=E)", rows[0], lambda: _network(
            name, "ggn", shuffle=True, max_iter=E, n_iter_no_change=E)),
        (f"GD fit(max_iter={need})", rows[2], lambda: _network(
            name, "gd", shuffle=True, max_iter=need, n_iter_no_change=need)),
        ("MLP fit() (defaults)", rows[5], lambda: _mlp(SEED,
                                                       cfg["mlp_max_iter"])),
    ]
    for label, row, make in cases:
        if not row["reached"] or row["time"] >= cfg["check_below_s"]:
            continue
        with quiet_warnings():
            times, model = _timed(lambda make=make: make().fit(X, y),
                                  reps if row["time"] < cfg["cheap_s"] else 1)
        scores = (model.predict_proba(X_test) if label.startswith("MLP")
                  else model.decision_function(X_test))
        accuracy, loss = _metrics(scores, y_test, model.classes_)
        checks.append({"label": label, "times": times, "time": median(times),
                       "accuracy": accuracy, "loss": loss,
                       "n_iter": int(model.n_iter_), "traced_time": row["time"],
                       "traced_accuracy": row["accuracy"]})

    return {"n_train": n, "n_test": len(X_test), "n_features": X.shape[1],
            "n_classes": K, "batch_size": batch_size, "steps_per_epoch": spe,
            "mu": SETTINGS[name][1] * np.sqrt(N_HIDDEN), "t_ggn": t_ggn,
            "rows": rows, "checks": checks,
            "gd_time_to_ggn_accuracy": _time_to(gd, rows[0]["accuracy"]),
            "mlp_time_to_ggn_accuracy": _time_to(mlp, rows[0]["accuracy"]),
            "curves": {"GGN-SCORE": ggn, "GD": gd, "MLP adam": mlp}}


# ------------------------------------------------------------------- run
def run(mode, stamp):
    cfg = CONFIG[mode]
    results, skipped = {}, {}
    with LoadMonitor() as monitor:
        for name in SETTINGS:
            try:
                start = time.perf_counter()
                results[name] = _dataset(name, cfg)
                print(f"[{NAME}] {name}: {time.perf_counter() - start:.1f} s",
                      flush=True)
            except FileNotFoundError as exc:
                skipped[name] = str(exc)
                print(f"[{NAME}] {name} skipped: {exc}", flush=True)
    if not results:
        message = ("skipped: no UCI data found (set SKLEARN_GGN_DATA to a folder "
                   "with pendigits/, letter/, avila/)")
        print(f"[{NAME}] {message}", flush=True)
        return {"summary": message}
    raw = {"config": cfg, "settings": SETTINGS, "datasets": results,
           "skipped": skipped}
    body, summary = _report(raw, cfg)
    png = _plot(results, mode, stamp)
    write_result(NAME, mode, TITLE, stamp, monitor, body, raw, [png])
    raw["summary"] = summary
    return raw


def _ratio(a, b):
    return a / b if b else float("nan")


def _report(raw, cfg):
    E = cfg["ggn_epochs"]
    lines = [
        f"n = {N_HIDDEN} ReLU units, no biases, κ = 1/√n, τ = {TAU}, squared "
        "loss on one-hot targets, μ = c·√n, `damping=\"auto\"` (1.0 for "
        f"mini-batches); GGN-SCORE {E} epoch(s); GD (learning rate 1) on the "
        "same mini-batches; MLPClassifier((128,), relu) with its defaults "
        "(adam). Train time = cumulative time of the training calls, evaluation "
        "outside the timer, numba compiled beforehand; see the module docstring "
        "for exactly what is timed. \"×GGN\" columns: this row ÷ the "
        "GGN-SCORE row. Test loss = ½·mean((outputs − onehot)²) over samples "
        "and classes (MLP: on its probabilities). \"runs\": traced runs whose "
        "median times are shown.", ""]
    if cfg["subset"] is not None:
        lines += [f"**Smoke mode**: random subsets of {cfg['subset'][0]} / "
                  f"{cfg['subset'][1]} rows; numbers mean nothing.", ""]
    for name, why in raw["skipped"].items():
        lines += [f"**{name} skipped**: {why}.", ""]
    summary_rows, summary_parts = [], []
    for name, res in raw["datasets"].items():
        rows = res["rows"]
        ggn = rows[0]
        table = []
        for row in rows:
            if not row["reached"]:
                table.append([row["label"]] + ["not reached"] + ["-"] * 7)
                continue
            table.append([
                row["label"], fmt(row["epochs"], 4), row["time"],
                row["repeats"], row["accuracy"], row["loss"],
                _ratio(row["time"], ggn["time"]),
                _ratio(row["accuracy"], ggn["accuracy"]), row["diverged"]])
        lines += [
            f"## {name}", "",
            f"{res['n_train']} train / {res['n_test']} test rows, "
            f"{res['n_features']} features, {res['n_classes']} classes; batch "
            f"size {res['batch_size']} ({res['steps_per_epoch']} steps per "
            f"epoch), μ = {res['mu']:.4g}.", "",
            md_table(["method, budget", "epochs", "train time [s]", "runs",
                      "test acc", "test loss", "time ×GGN", "acc ×GGN",
                      "diverged"], table), "",
            f"Time to first reach GGN-SCORE's test accuracy "
            f"{ggn['accuracy']:.4f}: GD {fmt(res['gd_time_to_ggn_accuracy'])} s, "
            f"MLP {fmt(res['mlp_time_to_ggn_accuracy'])} s (n/a: not within "
            "the run).", ""]
        if res["checks"]:
            lines += ["Plain `fit` of the same budget (the same work in "
                      "another batch order):", "",
                      md_table(["call", "time [s]", "timings", "n_iter_",
                                "test acc", "traced time [s]", "traced acc"],
                               [(c["label"], c["time"], len(c["times"]),
                                 c["n_iter"], c["accuracy"], c["traced_time"],
                                 c["traced_accuracy"]) for c in res["checks"]]),
                      ""]

        def acc(i, rows=rows):
            return rows[i]["accuracy"] if rows[i]["reached"] else float("nan")

        summary_rows.append((name, ggn["time"], ggn["accuracy"], acc(1),
                             _ratio(ggn["time"], rows[1]["time"])
                             if rows[1]["reached"] else float("nan"),
                             acc(2), acc(3), acc(4), acc(5),
                             rows[5]["time"] if rows[5]["reached"]
                             else float("nan"), acc(6)))
        summary_parts.append(
            f"{name}: GGN {ggn['accuracy']:.3f} in {ggn['time']:.1f} s, "
            f"same time GD {fmt(acc(3), 3)} / MLP {fmt(acc(6), 3)}")
    lines[2:2] = [
        "## Summary", "",
        md_table(["dataset", "GGN time [s]", "GGN acc", "GD acc, same epochs",
                  "GGN time ÷ GD time, same epochs",
                  f"GD acc, {cfg['gd_ratio']}× epochs", "GD acc, same time",
                  "MLP acc, same epochs", "MLP acc, converged",
                  "MLP time to converge [s]", "MLP acc, same time"],
                 summary_rows), ""]
    return "\n".join(lines), "; ".join(summary_parts)


def _plot(results, mode, stamp):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    fig, axes = plt.subplots(2, len(names), figsize=(4.6 * len(names), 7.2),
                             squeeze=False)
    styles = {"GGN-SCORE": ("C0", "o-"), "GD": ("C1", "-"),
              "MLP adam": ("C2", "-")}
    for j, name in enumerate(names):
        res = results[name]
        for method, curve in res["curves"].items():
            color, style = styles[method]
            t = np.maximum(curve["time"], 1e-4)
            axes[0, j].semilogx(t, 100 * np.asarray(curve["accuracy"]), style,
                                color=color, ms=2.5, lw=1.2, label=method)
            axes[1, j].loglog(t, curve["loss"], style, color=color, ms=2.5,
                              lw=1.2, label=method)
        for ax in axes[:, j]:
            ax.axvline(res["t_ggn"], color="C0", ls=":", lw=1)
        axes[0, j].set_title(f"{name} (batch {res['batch_size']})")
        axes[1, j].set_xlabel("train wall time [s]")
    axes[0, 0].set_ylabel("test accuracy [%]")
    axes[1, 0].set_ylabel("test loss ½·mean((out − onehot)²)")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle("GGN-SCORE vs GD (same mini-batches) vs MLPClassifier (adam); "
                 "dotted: GGN-SCORE's time")
    return save_figure(fig, NAME, mode, stamp)
