"""Benchmark 1 — cost of one full-batch GGN-SCORE step against the BLAS floor.

Problem: teacher-student data (``make_teacher_student``), m = 1000 samples,
d = 20, n = 500 hidden units, ``fit_intercept=False`` (p = n·d + n = 10 500),
float64, squared error, default τ, μ, damping. ``linear_solver="auto"``
picks the dual form here (checked and reported).

What is timed, round-robin in the same run (medians over repeats):

* ``floor``: one BLAS rank-k update ``Z @ Z.T`` for a random m × p float64
  ``Z`` (numpy dispatches the product of an array with its own transpose to
  syrk) — the cost of forming the m × m Gram, the dominant term of a dual step.
* ``direction``: ``Linearization.direction("dual")`` of
  ``sklearn_ggn.engine`` on a fresh linearization (``_common.StepProblem``) —
  the step's linear algebra (gradient, sensitivities, Gram, Cholesky, two
  solves with one refinement), no forward pass, no line search.
* ``fit, line_search=False``: ``GGNScoreRegressor(batch_size=None,
  warm_start=True, max_iter=1, line_search=False).fit`` from the same fixed
  weights every time (reset before each call, untimed) — one complete step
  as a user sees it: input validation, forward pass, direction, update, the
  forward pass at the new point.
* ``fit, line_search=True``: the same with the default Armijo line search.

* ``fit float32, line_search=False``: the same step on float32 copies of the
  data and weights (issue item 5; the float32 dual step forms the Gram in
  float32, factorizes it in float64 and refines in float64 when its error
  estimate asks for it), with the float32 syrk ``floor32`` beside it.

Equal accuracy for float32 is checked by training: the same fit
(``max_iter`` full-batch iterations from the same initial weights, line
search on) in float64 and in float32, reporting training objective, test
MSE on 2000 fresh points and the wall time of each.

The headline ratio is ``fit, line_search=False`` / ``floor`` (target ≤ 1.3);
the ``direction`` / ``floor`` ratio is reported beside it. The breakdown
comes from separate, instrumented fits: manual timers wrapped, and restored
afterwards, around public methods only — ``GGNScoreRegressor.fit`` and the
public methods of ``sklearn_ggn.engine``'s exported classes (``Problem``,
``Linearization``, ``TwoLayerNetwork``, ``AdaptiveStepSize``,
``ArmijoLineSearch``), the profiling seam that module documents. The numba
kernels inside the Gram are private and not wrapped: the Gram is one row,
and the cProfile listing of one fit written next to the table splits it
into its kernels and the syrk. The default BLAS threads are used; the same
ratios with one BLAS thread (threadpoolctl) are reported too.
"""

import cProfile
import functools
import inspect
import io
import pstats
import time
from collections import defaultdict

import numpy as np

from ._common import (
    LoadMonitor,
    StepProblem,
    md_table,
    median,
    new_figure,
    result_path,
    save_figure,
    spread,
    time_interleaved,
    write_result,
)

NAME = "step_cost"
TITLE = "Benchmark 1: GGN-SCORE step cost vs the BLAS floor"
TARGET_RATIO = 1.3

CONFIG = {
    "smoke": {"m": 200, "d": 20, "n": 100, "repeats": 3, "breakdown": 2,
              "train_iter": 3},
    "quick": {"m": 1000, "d": 20, "n": 500, "repeats": 9, "breakdown": 5,
              "train_iter": 10},
    "full": {"m": 1000, "d": 20, "n": 500, "repeats": 31, "breakdown": 11,
             "train_iter": 20},
}


# ----------------------------------------------------------- call recorder
class CallRecorder:
    """Wrap public methods of exported classes with timers that record the
    call tree.

    Only the documented profiling seam is wrapped: ``GGNScoreRegressor.fit``
    and the public methods of ``sklearn_ggn.engine``'s classes (see that
    module's docstring). Static methods stay static, properties (the cached
    ``Linearization.gradient`` and ``.W``) get a timed getter; everything is
    restored on exit.
    """

    def __init__(self):
        self.roots = []
        self._stack = []
        self._patches = []

    def _timed(self, function, label):
        stack, roots = self._stack, self.roots

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            entry = {"label": label, "children": [], "t": 0.0}
            if stack:
                stack[-1]["children"].append(entry)
            else:
                roots.append(entry)
            stack.append(entry)
            t0 = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                entry["t"] = time.perf_counter() - t0
                stack.pop()

        return wrapper

    def wrap(self, cls, attr):
        """Time ``cls.attr`` (a method, static method or property) under the
        label ``"<class>.<attr>"``."""
        label = f"{cls.__name__}.{attr}"
        own = attr in vars(cls)
        original = inspect.getattr_static(cls, attr)
        if isinstance(original, staticmethod):
            replacement = staticmethod(self._timed(original.__func__, label))
        elif isinstance(original, property):
            replacement = property(self._timed(original.fget, label),
                                   original.fset, original.fdel, original.__doc__)
        else:
            replacement = self._timed(original, label)
        setattr(cls, attr, replacement)
        self._patches.append((cls, attr, original if own else None))

    def __enter__(self):
        from sklearn_ggn import GGNScoreRegressor
        from sklearn_ggn.engine import (
            AdaptiveStepSize,
            ArmijoLineSearch,
            Linearization,
            Problem,
            TwoLayerNetwork,
        )

        self.wrap(GGNScoreRegressor, "fit")
        for method in ("evaluate", "linearize"):
            self.wrap(Problem, method)
        for method in ("direction", "gradient", "W", "gram", "gauss_newton_matrix",
                       "jvp", "vjp", "factorize", "triangular_solve", "astype"):
            self.wrap(Linearization, method)
        self.wrap(AdaptiveStepSize, "__call__")
        self.wrap(ArmijoLineSearch, "__call__")
        for method in ("forward", "gradient", "sensitivities", "gram", "jvp", "vjp",
                       "gauss_newton_matrix"):
            self.wrap(TwoLayerNetwork, method)
        return self

    def __exit__(self, *exc):
        for cls, attr, original in reversed(self._patches):
            if original is None:  # was inherited: uncover the base's again
                delattr(cls, attr)
            else:
                setattr(cls, attr, original)
        self._patches = []
        return False


FORWARD = "forward passes + risk (objective)"
STEP_PREP = "residual, regularizer derivatives, step-size rule"
GRADIENT = "gradient Jᵀe"
SENSITIVITIES = "sensitivities W"
GRAM = "Gram (form Z, syrk, output part)"
PRIMAL = "primal GN matrix"
CHOLESKY = "Cholesky"
GLUE = "direction glue (vector ops, checks)"
LINE_SEARCH = "line search (Armijo trials)"
OVERHEAD = "fit overhead (validation, set-up, records)"

COMPONENTS = [
    (FORWARD, "Problem.evaluate: forward passes and risk (at θ, and at the new "
     "point when there is no line search)"),
    (STEP_PREP, "Problem.linearize (loss residual and factor, ∇g, D, η) and "
     "AdaptiveStepSize"),
    (GRADIENT, "Linearization.gradient, inside the direction"),
    (SENSITIVITIES, "Linearization.W, inside the direction"),
    (GRAM, "Linearization.gram with its numba kernels; their split is in the "
     "cProfile listing"),
    (PRIMAL, "Linearization.gauss_newton_matrix"),
    (CHOLESKY, "Linearization.factorize: NumPy's LAPACK potrf with the "
     "finiteness check"),
    ("first solve: J̃ products + triangular solves", ""),
    ("refinement: J̃ products + triangular solves", ""),
    (GLUE, "self time of Linearization.direction"),
    (LINE_SEARCH, "ArmijoLineSearch incl. its forward passes"),
    (OVERHEAD, "self time of fit"),
]

# The category of a recorded call (and of its descendants unless they have
# their own); Linearization.direction and the line search are handled apart.
CATEGORY = {
    "Problem.evaluate": FORWARD,
    "TwoLayerNetwork.forward": FORWARD,
    "Problem.linearize": STEP_PREP,
    "AdaptiveStepSize.__call__": STEP_PREP,
    "Linearization.gradient": GRADIENT,
    "TwoLayerNetwork.gradient": GRADIENT,
    "Linearization.W": SENSITIVITIES,
    "TwoLayerNetwork.sensitivities": SENSITIVITIES,
    "Linearization.gram": GRAM,
    "TwoLayerNetwork.gram": GRAM,
    "Linearization.gauss_newton_matrix": PRIMAL,
    "TwoLayerNetwork.gauss_newton_matrix": PRIMAL,
    "Linearization.factorize": CHOLESKY,
}
SOLVE_CALLS = {"Linearization.jvp", "Linearization.vjp",
               "Linearization.triangular_solve"}


def _categorize(fit_entry):
    """Exclusive seconds per component of one recorded ``fit`` call."""
    out = defaultdict(float)

    def self_time(e):
        return e["t"] - sum(c["t"] for c in e["children"])

    def assign(e, inherited):
        label = e["label"]
        if label == "ArmijoLineSearch.__call__":
            out[LINE_SEARCH] += e["t"]
            return
        if label == "Linearization.direction":
            visit_direction(e)
            return
        cat = CATEGORY.get(label, inherited)
        out[cat] += self_time(e)
        for c in e["children"]:
            assign(c, cat)

    def visit_direction(e):
        # The solves' products: first solve (J̃ D r, triangular solves, J̃ᵀ y);
        # the J̃ products and solves after the first solve's J̃ᵀ y belong to
        # the refinement.
        out[GLUE] += self_time(e)
        phase, seen_solve = "first solve", False
        for c in e["children"]:
            label = c["label"]
            if label in SOLVE_CALLS:
                assign(c, f"{phase}: J̃ products + triangular solves")
                if label == "Linearization.triangular_solve":
                    seen_solve = True
                elif label == "Linearization.vjp" and seen_solve:
                    phase = "refinement"
            else:
                assign(c, GLUE)

    out[OVERHEAD] += self_time(fit_entry)
    for child in fit_entry["children"]:
        assign(child, OVERHEAD)
    return dict(out)


# -------------------------------------------------------------------- run
def _make_estimator(n, line_search):
    from sklearn_ggn import GGNScoreRegressor

    return GGNScoreRegressor(n_hidden=n, fit_intercept=False, batch_size=None,
                             warm_start=True, max_iter=1, line_search=line_search,
                             linear_solver="auto", random_state=0)


class _FixedStartFit:
    """A warm-started one-step fit whose start weights are reset each call."""

    def __init__(self, n, line_search, X, y):
        self.est = _make_estimator(n, line_search)
        self.X, self.y = X, y
        self.est.fit(X, y)  # first step from the random init (also compiles)
        self.hidden = self.est.hidden_weights_.copy()
        self.output = self.est.output_weights_.copy()

    def reset(self):
        self.est.hidden_weights_ = self.hidden.copy()
        self.est.output_weights_ = self.output.copy()

    def __call__(self):
        self.est.fit(self.X, self.y)


def _float32_training(m, d, n, iterations):
    """The same full-batch fit in float64 and float32: objective, test MSE,
    time (one fit each, after a warm-up fit of each dtype)."""
    from sklearn_ggn import GGNScoreRegressor
    from sklearn_ggn.datasets import make_teacher_student

    X, y, X_test, y_test = make_teacher_student(n_train=m, n_test=2000,
                                                n_features=d, random_state=0)
    out = {}
    for dtype in (np.float64, np.float32):
        Xd, yd = X.astype(dtype), y.astype(dtype)
        params = dict(n_hidden=n, fit_intercept=False, batch_size=None,
                      max_iter=iterations, tol=0.0, random_state=0)
        GGNScoreRegressor(**{**params, "max_iter": 1}).fit(Xd, yd)  # warm-up
        est = GGNScoreRegressor(**params)
        t0 = time.perf_counter()
        est.fit(Xd, yd)
        seconds = time.perf_counter() - t0
        test_mse = float(np.mean((est.predict(X_test.astype(dtype))
                                  .astype(np.float64) - y_test) ** 2))
        out[np.dtype(dtype).name] = {
            "seconds": seconds, "iterations": int(est.n_iter_),
            "objective": float(est.history_["objective"][-1]),
            "test_mse": test_mse}
    return out


def _timed_block(cases, repeats):
    times = time_interleaved(cases, repeats)
    return {k: {"median": median(v), "all": v} for k, v in times.items()}


def run(mode, stamp):
    from threadpoolctl import threadpool_limits

    from sklearn_ggn.datasets import make_teacher_student

    cfg = CONFIG[mode]
    m, d, n = cfg["m"], cfg["d"], cfg["n"]
    with LoadMonitor() as monitor:
        problem = StepProblem(m, d, n)
        p = problem.p
        auto_form = problem.auto_form()
        X, y, _, _ = make_teacher_student(n_train=m, n_test=1, n_features=d,
                                          random_state=0)
        Z = np.random.default_rng(0).standard_normal((m, p))
        fit_plain = _FixedStartFit(n, False, X, y)
        fit_ls = _FixedStartFit(n, True, X, y)
        Z32 = Z.astype(np.float32)
        fit32 = _FixedStartFit(n, False, X.astype(np.float32),
                               y.astype(np.float32))
        cases = {
            "floor": lambda: Z @ Z.T,
            "floor32": lambda: Z32 @ Z32.T,
            "fit_no_ls_f32": (fit32.reset, fit32),
            "direction": lambda: problem.direction("dual"),
            "fit_no_ls": (fit_plain.reset, fit_plain),
            "fit_ls": (fit_ls.reset, fit_ls),
        }
        timings = {"default": _timed_block(cases, cfg["repeats"])}
        with threadpool_limits(limits=1, user_api="blas"):
            one = {k: cases[k] for k in ("floor", "direction", "fit_no_ls",
                                         "fit_no_ls_f32")}
            timings["1 thread"] = _timed_block(one, max(3, cfg["repeats"] // 2))

        # Breakdown: instrumented fits (separate from the timed ones).
        breakdowns = {}
        for label, fitter in (("line_search=False", fit_plain),
                              ("line_search=True", fit_ls)):
            per_call = []
            fitter.reset()
            fitter()  # BLAS threads were just re-enabled: wake them untimed
            for _ in range(cfg["breakdown"]):
                fitter.reset()
                with CallRecorder() as rec:
                    fitter()
                fit_entry = rec.roots[-1]
                cats = _categorize(fit_entry)
                cats["total"] = fit_entry["t"]
                per_call.append(cats)
            keys = {k for c in per_call for k in c}
            breakdowns[label] = {k: median([c.get(k, 0.0) for c in per_call])
                                 for k in keys}
        float32_training = _float32_training(m, d, n, cfg["train_iter"])
        # Line-search trial count of the timed configuration.
        fit_ls.reset()
        fit_ls()
        ls_alpha = fit_ls.est.history_["step_size"][-1]

        profile_path = result_path(NAME + "_profile", mode, ".txt")
        fit_ls.reset()
        prof = cProfile.Profile()
        prof.enable()
        fit_ls()
        prof.disable()
        buf = io.StringIO()
        stats = pstats.Stats(prof, stream=buf)
        stats.strip_dirs()  # file names only: no paths of this machine
        stats.sort_stats("tottime").print_stats(25)
        profile_path.write_text(
            f"cProfile of one fit(max_iter=1, line_search=True), m={m}, d={d}, "
            f"n={n}, p={p}, sorted by tottime\n\n" + buf.getvalue())

    raw = {"m": m, "d": d, "n": n, "p": p, "auto_form": auto_form,
           "timings": timings, "breakdown": breakdowns,
           "line_search_step_size": ls_alpha, "float32_training": float32_training}
    body, verdict = _report(raw)
    fig_path = _plot(raw, mode, stamp)
    write_result(NAME, mode, TITLE, stamp, monitor, body, raw, [fig_path])
    raw["verdict"] = verdict
    d = verdict["default"]
    raw["summary"] = (
        f"step/floor = {d['fit_no_ls_ratio']:.2f}x (fit, no line search; "
        f"direction only {d['direction_ratio']:.2f}x; 1 thread "
        f"{verdict['1 thread']['fit_no_ls_ratio']:.2f}x) vs target "
        f"{TARGET_RATIO}x: {verdict['status']}; float32 step "
        f"{d['float32_speedup']:.2f}x faster")
    return raw


def _report(raw):
    m, d, n, p = raw["m"], raw["d"], raw["n"], raw["p"]
    lines = [
        f"Teacher-student, m = {m}, d = {d}, n = {n}, fit_intercept=False, "
        f"p = {p}, float64; `linear_solver=\"auto\"` picks **{raw['auto_form']}**. "
        "Floor = one `Z @ Z.T` (syrk) of a random "
        f"{m} × {p} matrix, timed round-robin with the step in the same run.",
        "",
    ]
    rows = []
    verdict = {}
    for threads, block in raw["timings"].items():
        floor = block["floor"]["median"]
        for key, label in (("floor", "floor: Z @ Z.T (syrk)"),
                           ("direction",
                            "Linearization.direction (dual), no forward/LS"),
                           ("fit_no_ls", "fit: one step, line_search=False"),
                           ("fit_ls", "fit: one step, line_search=True"),
                           ("floor32", "float32 floor: Z @ Z.T (syrk)"),
                           ("fit_no_ls_f32",
                            "float32 fit: one step, line_search=False")):
            if key not in block:
                continue
            t = block[key]["median"]
            rows.append((threads, label, t * 1e3, spread([v * 1e3 for v in
                                                          block[key]["all"]]),
                         len(block[key]["all"]), t / floor))
        verdict[threads] = {
            "fit_no_ls_ratio": block["fit_no_ls"]["median"] / floor,
            "direction_ratio": block["direction"]["median"] / floor,
            "float32_speedup": (block["fit_no_ls"]["median"]
                                / block["fit_no_ls_f32"]["median"]),
        }
    lines.append(md_table(["BLAS threads", "what", "median [ms]", "min-max [ms]",
                           "repeats", "÷ floor"], rows))
    head = verdict["default"]["fit_no_ls_ratio"]
    status = "met" if head <= TARGET_RATIO else "not met"
    lines += [
        "",
        f"**Bar (step ≤ {TARGET_RATIO}× floor)**: headline ratio = fit step "
        f"without line search ÷ floor = **{head:.2f}×** → **{status}** "
        f"(direction alone: {verdict['default']['direction_ratio']:.2f}×; "
        f"1 BLAS thread: {verdict['1 thread']['fit_no_ls_ratio']:.2f}× / "
        f"{verdict['1 thread']['direction_ratio']:.2f}×).",
        "",
        "## float32 (issue item 5)",
        "",
        f"One step, line_search=False: float64 ÷ float32 = "
        f"**{verdict['default']['float32_speedup']:.2f}×** (1 BLAS thread: "
        f"{verdict['1 thread']['float32_speedup']:.2f}×; bar ≥ 1.7× at equal "
        "accuracy). The same fit in both dtypes (full batch, line search, "
        "from the same initial weights):",
        "",
        md_table(["dtype", "iterations", "training objective", "test MSE",
                  "seconds"],
                 [(k, v["iterations"], v["objective"], v["test_mse"], v["seconds"])
                  for k, v in raw["float32_training"].items()]),
        "",
        "## Where the step's time goes",
        "",
        "Exclusive time per component, median over instrumented one-step fits "
        "(default BLAS threads; the instrumented fits are separate from the "
        "timed ones above). The line-search step size accepted from these "
        f"weights is α = {raw['line_search_step_size']:.3g}.",
        "",
    ]
    b_plain = raw["breakdown"]["line_search=False"]
    b_ls = raw["breakdown"]["line_search=True"]
    rows = []
    for comp, note in COMPONENTS:
        a, b = b_plain.get(comp, 0.0), b_ls.get(comp, 0.0)
        if a == 0.0 and b == 0.0:
            continue
        rows.append((comp, a * 1e3, 100 * a / b_plain["total"], b * 1e3,
                     100 * b / b_ls["total"], note))
    sums = [sum(b.get(c, 0.0) for c, _ in COMPONENTS) for b in (b_plain, b_ls)]
    rows.append(("sum of the component medians", sums[0] * 1e3,
                 100 * sums[0] / b_plain["total"], sums[1] * 1e3,
                 100 * sums[1] / b_ls["total"], ""))
    rows.append(("total (median instrumented fit)", b_plain["total"] * 1e3, 100.0,
                 b_ls["total"] * 1e3, 100.0,
                 "exceeds the sum when single components spike in some calls"))
    lines.append(md_table(["component", "LS off [ms]", "LS off %", "LS on [ms]",
                           "LS on %", "note"], rows))
    lines += ["", f"cProfile listing: `{NAME}_profile_<mode>.txt`."]
    verdict["status"] = status
    return "\n".join(lines), verdict


def _plot(raw, mode, stamp):
    fig, (ax1, ax2) = new_figure(2, width=6.5)
    labels, vals, colors = [], [], []
    for threads, block in raw["timings"].items():
        for key in ("floor", "direction", "fit_no_ls", "fit_ls", "floor32",
                    "fit_no_ls_f32"):
            if key in block:
                labels.append(f"{key}\n({threads})")
                vals.append(block[key]["median"] * 1e3)
                colors.append("0.5" if key.startswith("floor") else
                              ("C0" if threads == "default" else "C1"))
    ax1.bar(range(len(vals)), vals, color=colors)
    ax1.set_xticks(range(len(vals)), labels, rotation=60, fontsize=7)
    floor = raw["timings"]["default"]["floor"]["median"] * 1e3
    ax1.axhline(TARGET_RATIO * floor, color="r", ls="--", lw=1,
                label=f"{TARGET_RATIO}× floor (default threads)")
    ax1.set_ylabel("median time [ms]")
    ax1.set_title(f"one step, m={raw['m']}, n={raw['n']}, p={raw['p']}")
    ax1.legend(fontsize=7)
    bottom = np.zeros(2)
    for i, (comp, _) in enumerate(COMPONENTS):
        vals = np.array([raw["breakdown"][k].get(comp, 0.0) * 1e3
                         for k in ("line_search=False", "line_search=True")])
        if not vals.any():
            continue
        ax2.bar([0, 1], vals, bottom=bottom, label=comp, color=f"C{i % 10}",
                hatch="//" if i >= 10 else None)
        bottom += vals
    ax2.axhline(floor, color="k", ls=":", lw=1, label="floor (syrk)")
    ax2.set_xticks([0, 1], ["line_search=False", "line_search=True"])
    ax2.set_ylabel("ms (instrumented fit)")
    ax2.set_title("breakdown of one fit step")
    ax2.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return save_figure(fig, NAME, mode, stamp)
