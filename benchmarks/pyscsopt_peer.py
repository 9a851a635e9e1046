"""Peer benchmark — one GGN-SCORE step against the authors' Python package.

Peer: ``pyscsopt`` (PyPI, the authors' Python port of
SelfConcordantSmoothOptimization.jl), ``ProxGGNSCORE(use_prox=False)``. It
is not a dependency of sklearn_ggn: install it (and jax, CPU) with
``pip install pyscsopt``; without it this benchmark is skipped with a
message.

Problem: teacher-student data (``make_teacher_student(n_train=1000,
n_test=2000, n_features=20, random_state=0)``), n = 500 SiLU units,
κ = 1/√n, no biases (p = 10 500), squared loss ½·MSE, pseudo-Huber
regularizer with μ = √n and τ = 1e-4, float64 (jax with
``jax_enable_x64``), full batch, one step from the same θ0
(``U ~ N(0, 1/d)``, ``V ~ N(0, 1)``, seed 0).

Matching the two packages (read from pyscsopt's
``algorithms/prox_ggn_score.py``): with m + 1 ≤ p pyscsopt takes its dual
branch, whose curvature is ``H = ḡ''(θ)`` (not τ ḡ'') with the gradient
``τ ḡ'(θ)``, i.e. sklearn_ggn's ``damping=1.0``; its step size is
``min(1, ᾱ / (1 + M_g η))`` with ``ᾱ = min(1/L, 1)`` for ``ss_type=1``
(0.5 when no L is set), so it runs with ``iterate(..., alpha=0.95)``
(L = 1/0.95), sklearn_ggn's default ᾱ. sklearn_ggn runs
``GGNScoreRegressor(n_hidden=500, fit_intercept=False, mu=√500, tau=1e-4,
batch_size=None, warm_start=True, max_iter=1, line_search=False,
damping=1.0)`` with ``hidden_weights_``/``output_weights_`` set to θ0 (one
step from them). pyscsopt is set up as its examples do: a ``Problem`` with
``out_fn`` and the analytic ``jac_yx`` (the explicit m × p Jacobian of this
network, written in jax.numpy below), ``grad_fy``, ``hess_fy`` and
``grad_fx``.

Measured:

* agreement: relative difference of the two θ after one step, of the two
  step sizes α and of the two directions (pyscsopt's direction is recorded
  from ``ggn_score_step``, its α recovered as ``(θ1 − θ0)·d / d·d``);
* seconds per step, medians, round-robin in one process after waiting for a
  1-minute load average below 1.0: sklearn_ggn's one-step ``fit`` (reset
  untimed), pyscsopt's bare ``ProxGGNSCORE.step`` and pyscsopt's
  ``iterate(max_epoch=1)`` (what its examples call; it adds the per-epoch
  bookkeeping: objective values and a dense p × p ``Cmat = np.eye(p)``). The
  headline ratio uses the bare step (the peer's cheaper number);
* peak memory: each case in its own fresh child process, ``ru_maxrss``
  after the step beside the resident memory (VmRSS) and ``ru_maxrss`` just
  before it (libraries, data, a tiny warm-up step that compiles).

Targets: sklearn_ggn ≥ 30× faster per step; its peak memory ≤ half of
pyscsopt's.
"""

import importlib.util
import json
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from ._common import (
    REPO_DIR,
    LoadMonitor,
    fmt,
    loadavg,
    md_table,
    median,
    new_figure,
    save_figure,
    spread,
    wait_for_quiet,
    write_result,
)

NAME = "pyscsopt_peer"
TITLE = "Peer benchmark: one GGN-SCORE step, sklearn_ggn vs pyscsopt"
TARGET_SPEEDUP = 30.0
TARGET_MEMORY_FRACTION = 0.5
STEP_SIZE = 0.95  # ᾱ, sklearn_ggn's default; pyscsopt: iterate(alpha=ᾱ)
TAU = 1e-4

CONFIG = {
    "smoke": {"m": 100, "d": 20, "n": 50, "rounds": 1, "sk_per_round": 2,
              "max_wait": 30.0},
    "quick": {"m": 1000, "d": 20, "n": 500, "rounds": 3, "sk_per_round": 5,
              "max_wait": 600.0},
    "full": {"m": 1000, "d": 20, "n": 500, "rounds": 9, "sk_per_round": 5,
             "max_wait": 1200.0},
}
CASES = (
    ("sklearn_ggn", "sklearn_ggn: fit, one step (warm start, no line search)"),
    ("pyscsopt_step", "pyscsopt: ProxGGNSCORE.step (bare)"),
    ("pyscsopt_iterate", "pyscsopt: iterate(max_epoch=1), as its examples"),
)


# ------------------------------------------------------------------ problem
def _data(m, d, n):
    """Training data and θ0 = (U0, V0) shared by both packages."""
    from sklearn_ggn.datasets import make_teacher_student

    X, y, _, _ = make_teacher_student(n_train=m, n_test=2 * m, n_features=d,
                                      random_state=0)
    rng = np.random.default_rng(0)
    U0 = rng.standard_normal((n, d)) / np.sqrt(d)
    V0 = rng.standard_normal((n, 1))
    return X, y, U0, V0


def _peer_missing():
    """None when pyscsopt (and jax) import, else the reason."""
    if importlib.util.find_spec("pyscsopt") is None:
        return "pyscsopt is not installed (pip install pyscsopt)"
    try:
        import jax  # noqa: F401
        import pyscsopt.algorithms.prox_ggn_score  # noqa: F401
    except Exception as exc:  # jax missing or broken
        return f"pyscsopt does not import ({type(exc).__name__}: {exc})"
    return None


class SklearnStep:
    """One warm-started full-batch step of sklearn_ggn from θ0."""

    def __init__(self, X, y, U0, V0):
        from sklearn_ggn import GGNScoreRegressor

        n = U0.shape[0]
        self.X, self.y, self.U0, self.V0 = X, y, U0, V0
        self.est = GGNScoreRegressor(
            n_hidden=n, fit_intercept=False, mu=float(np.sqrt(n)), tau=TAU,
            step_size=STEP_SIZE, batch_size=None, warm_start=True, max_iter=1,
            line_search=False, damping=1.0, standardize_target=False)

    def reset(self):
        self.est.hidden_weights_ = self.U0.copy()
        self.est.output_weights_ = self.V0.copy()

    def __call__(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # max_iter=1 convergence warning
            self.est.fit(self.X, self.y)

    def result(self):
        """(θ1, α) of the last call."""
        theta = np.concatenate([self.est.hidden_weights_.ravel(),
                                self.est.output_weights_.ravel()])
        return theta, float(self.est.history_["step_size"][-1])


class PeerStep:
    """pyscsopt's ProxGGNSCORE(use_prox=False) on the same problem, set up
    as its examples do (``Problem`` with ``out_fn`` and the analytic
    ``jac_yx``, ``grad_fy``, ``hess_fy``, ``grad_fx``)."""

    def __init__(self, X, y, U0, V0):
        import jax

        jax.config.update("jax_enable_x64", True)  # jax defaults to float32
        import jax.numpy as jnp
        from pyscsopt.algorithms.prox_ggn_score import ProxGGNSCORE
        from pyscsopt.problems import Problem
        from pyscsopt.regularizers import PHuberSmootherL1L2

        n, d = U0.shape
        kappa = 1.0 / np.sqrt(n)
        nd = n * d

        def unpack(x):
            return x[:nd].reshape(n, d), x[nd:]

        def out_fn(A, x):
            U, V = unpack(x)
            return kappa * (jax.nn.silu(A @ U.T) @ V)

        def jac_yx(A, y, yhat, x):
            # ∂Φ_k/∂U_ij = κ V_i ρ'(a_ki) x_kj,  ∂Φ_k/∂V_i = κ ρ(a_ki)
            U, V = unpack(x)
            a = A @ U.T
            s = jax.nn.sigmoid(a)
            drho = s * (1.0 + a * (1.0 - s))
            JU = (kappa * V * drho)[:, :, None] * A[:, None, :]
            return jnp.hstack([JU.reshape(A.shape[0], nd), kappa * a * s])

        def grad_fy(A, y, yhat):
            return (yhat - y) / y.shape[0]

        def hess_fy(A, y, yhat):
            return jnp.eye(y.shape[0]) / y.shape[0]

        def f(A, y, x, yhat=None):
            if yhat is None:
                yhat = out_fn(A, x)
            return 0.5 * jnp.mean((yhat - y) ** 2)

        def grad_fx(A, y, x):
            yhat = out_fn(A, x)
            return jac_yx(A, y, yhat, x).T @ grad_fy(A, y, yhat)

        class RecordingGGN(ProxGGNSCORE):
            """Keeps the direction of the last step (for the agreement)."""

            def ggn_score_step(self, *args, **kwargs):
                self.last_direction = super().ggn_score_step(*args, **kwargs)
                return self.last_direction

        self.jnp = jnp
        self.x0 = np.concatenate([U0.ravel(), V0.ravel()])
        self.A, self.yj = jnp.asarray(X), jnp.asarray(y)
        self.method = RecordingGGN(use_prox=False)  # ss_type=1 (default)
        self.problem = Problem(x0=self.x0, f=f, lam=TAU, A=self.A, y=self.yj,
                               out_fn=out_fn, jac_yx=jac_yx, grad_fy=grad_fy,
                               hess_fy=hess_fy, grad_fx=grad_fx)
        self.problem.L = 1.0 / STEP_SIZE  # what iterate(alpha=ᾱ) sets
        self.hmu = PHuberSmootherL1L2(float(np.sqrt(n)))
        self.theta = None

    def step(self):
        """The bare step, ``Cmat`` unused by the pseudo-Huber smoother."""
        x_new, _ = self.method.step(self.problem, "l1", self.hmu, self.A, self.x0,
                                    self.x0, self.yj, None, 0)
        self.theta = np.asarray(x_new)  # blocks until jax is done

    def iterate(self):
        """One iteration of ``pyscsopt.iterate`` as the examples call it."""
        from pyscsopt.algorithms.iterate import iterate

        sol = iterate(self.method, self.problem, "l1", self.hmu, max_epoch=1,
                      verbose=0, alpha=STEP_SIZE)
        self.theta = np.asarray(sol.x)

    def result(self):
        """(θ1, α, d) of the last call; α recovered from θ1 − θ0 along d."""
        d = np.asarray(self.method.last_direction)
        alpha = float(np.dot(self.theta - self.x0, d) / np.dot(d, d))
        return self.theta, alpha, d


# ------------------------------------------------------------ child process
def _status_mb(field):
    """A ``/proc/self/status`` entry (VmRSS: resident now; VmHWM: peak) in MB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _maxrss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _tiny_data(d, m=40, n=10):
    """Random data for the untimed warm-up step (no sklearn_ggn import)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((m, d))
    return (X, np.tanh(X[:, 0]), rng.standard_normal((n, d)) / np.sqrt(d),
            rng.standard_normal((n, 1)))


def _child_main(kind, data_file):
    """Run in a fresh process: tiny warm-up step (compiles), then one step
    at full size; prints RSS before and peak after as JSON. The data come
    from the parent's ``.npz``, so the pyscsopt child imports numpy, jax and
    pyscsopt only (sklearn_ggn's imports would inflate its baseline)."""
    with np.load(data_file) as npz:
        full = tuple(npz[k] for k in ("X", "y", "U0", "V0"))
    tiny = _tiny_data(full[0].shape[1])
    if kind == "sklearn_ggn":
        make = SklearnStep
    else:
        make = PeerStep
    for i, data in enumerate((tiny, full)):
        runner = make(*data)
        if i == 1:
            rss_before, maxrss_before = _status_mb("VmRSS"), _maxrss_mb()
            t0 = time.perf_counter()
        if kind == "sklearn_ggn":
            runner.reset()
            runner()
        elif kind == "pyscsopt_step":
            runner.step()
        else:
            runner.iterate()
    seconds = time.perf_counter() - t0
    print(json.dumps({"kind": kind, "rss_before_mb": rss_before,
                      "maxrss_before_mb": maxrss_before,
                      "maxrss_peak_mb": _maxrss_mb(),
                      "vmhwm_peak_mb": _status_mb("VmHWM"),
                      "cold_seconds": seconds}))


def _child(kind, data_file):
    code = ("import sys; from benchmarks.pyscsopt_peer import _child_main; "
            "_child_main(sys.argv[1], sys.argv[2])")
    # Linux carries the parent's RSS high-water mark into ru_maxrss across
    # fork/vfork + exec; this process holds jax and p × p arrays by now, so
    # the child is started from a small shell that forks it (the ``; exit``
    # keeps the shell from exec-ing it directly): its ru_maxrss then starts
    # from the shell's few MB. VmHWM (per address space) cross-checks it.
    result = subprocess.run(
        ["/bin/sh", "-c", '"$@"; exit $?', "sh", sys.executable, "-c", code, kind,
         str(data_file)],
        capture_output=True, text=True, check=True, cwd=REPO_DIR)
    return json.loads(result.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------- run
def _rel(a, b):
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b))
                 / max(np.linalg.norm(np.asarray(b)), np.finfo(float).tiny))


def _agreement(sk, peer):
    sk.reset()
    sk()
    theta_sk, alpha_sk = sk.result()
    peer.iterate()
    theta_py, alpha_py, d_py = peer.result()
    peer.step()
    theta_step = peer.theta
    x0 = peer.x0
    d_sk = (x0 - theta_sk) / alpha_sk  # sklearn_ggn: θ1 = θ0 − α d
    return {
        "theta_rel_diff": _rel(theta_sk, theta_py),
        "update_rel_diff": _rel(theta_sk - x0, theta_py - x0),
        "direction_rel_diff": _rel(d_sk, -d_py),  # pyscsopt returns −d
        "alpha_sklearn_ggn": alpha_sk,
        "alpha_pyscsopt": alpha_py,
        "alpha_rel_diff": abs(alpha_sk - alpha_py) / abs(alpha_py),
        "update_norm": float(np.linalg.norm(theta_py - x0)),
        "step_vs_iterate_rel_diff": _rel(theta_step, theta_py),
    }


def _time(sk, peer, rounds, sk_per_round):
    """Round-robin: each round one peer step, one peer iterate and
    ``sk_per_round`` sklearn_ggn fits (weights reset untimed)."""
    times = {key: [] for key, _ in CASES}

    def one_round(record):
        for key, fn in (("pyscsopt_step", peer.step),
                        ("pyscsopt_iterate", peer.iterate)):
            t0 = time.perf_counter()
            fn()
            if record:
                times[key].append(time.perf_counter() - t0)
        for _ in range(sk_per_round):
            sk.reset()
            t0 = time.perf_counter()
            sk()
            if record:
                times["sklearn_ggn"].append(time.perf_counter() - t0)

    one_round(False)  # warm-up: numba kernels, jax compiles, BLAS threads
    for _ in range(rounds):
        one_round(True)
    return times


def run(mode, stamp):
    reason = _peer_missing()
    if reason is not None:
        message = f"skipped: {reason}"
        print(f"[{NAME}] {message}", flush=True)
        return {"summary": message}
    import jax
    import pyscsopt

    cfg = CONFIG[mode]
    m, d, n = cfg["m"], cfg["d"], cfg["n"]
    with LoadMonitor() as monitor:
        t_wait = time.perf_counter()
        quiet = wait_for_quiet(1.0, poll=10.0, max_wait=cfg["max_wait"])
        waited = time.perf_counter() - t_wait
        X, y, U0, V0 = _data(m, d, n)
        sk, peer = SklearnStep(X, y, U0, V0), PeerStep(X, y, U0, V0)
        with LoadMonitor() as timing_monitor:
            load_start = loadavg()
            times = _time(sk, peer, cfg["rounds"], cfg["sk_per_round"])
        agreement = _agreement(sk, peer)
        with tempfile.TemporaryDirectory() as tmp:
            data_file = Path(tmp) / "problem.npz"
            np.savez(data_file, X=X, y=y, U0=U0, V0=V0)
            memory = {key: _child(key, data_file) for key, _ in CASES}
    p = n * d + n
    raw = {
        "m": m, "d": d, "n": n, "p": p, "tau": TAU, "mu": float(np.sqrt(n)),
        "step_size": STEP_SIZE, "pyscsopt": _version("pyscsopt", pyscsopt),
        "jax": jax.__version__, "waited_s": waited, "quiet": quiet,
        "load_at_timing_start": load_start,
        "timing_load": timing_monitor.summary(),
        "timings": {k: {"median": median(v), "all": v} for k, v in times.items()},
        "agreement": agreement, "memory": memory,
    }
    body, verdict = _report(raw, timing_monitor)
    fig = _plot(raw, mode, stamp)
    write_result(NAME, mode, TITLE, stamp, monitor, body, raw, [fig])
    raw["verdict"] = verdict
    a = agreement
    raw["summary"] = (
        f"θ1 rel. diff {a['theta_rel_diff']:.1e}, α rel. diff "
        f"{a['alpha_rel_diff']:.1e}; speedup {verdict['speedup']:.1f}x vs bare "
        f"pyscsopt step ({verdict['speedup_iterate']:.1f}x vs iterate), target "
        f"≥ {TARGET_SPEEDUP:g}x: {verdict['speed']}; peak RSS "
        f"{verdict['peak_sk']:.0f} vs {verdict['peak_py']:.0f} MB "
        f"({verdict['memory_fraction']:.2f}), target ≤ "
        f"{TARGET_MEMORY_FRACTION:g}: {verdict['memory']}")
    return raw


def _version(dist, module):
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        return getattr(module, "__version__", "unknown")


def _report(raw, timing_monitor):
    t = raw["timings"]
    t_sk = t["sklearn_ggn"]["median"]
    t_py = t["pyscsopt_step"]["median"]
    t_it = t["pyscsopt_iterate"]["median"]
    mem = raw["memory"]
    a = raw["agreement"]
    speedup, speedup_it = t_py / t_sk, t_it / t_sk
    peak_sk = mem["sklearn_ggn"]["maxrss_peak_mb"]
    peak_py = mem["pyscsopt_step"]["maxrss_peak_mb"]
    peak_it = mem["pyscsopt_iterate"]["maxrss_peak_mb"]
    fraction = peak_sk / peak_py
    verdict = {
        "speedup": speedup, "speedup_iterate": speedup_it,
        "speed": "met" if speedup >= TARGET_SPEEDUP else "not met",
        "peak_sk": peak_sk, "peak_py": peak_py, "memory_fraction": fraction,
        "memory_fraction_iterate": peak_sk / peak_it,
        "memory": "met" if fraction <= TARGET_MEMORY_FRACTION else "not met",
    }
    m, n, p = raw["m"], raw["n"], raw["p"]
    # pyscsopt's dual branch multiplies by the dense p × p diag(1/ḡ'') twice.
    dense_flops = 2 * 2 * (m + 1) * p * p
    lines = [
        f"Teacher-student, m = {m}, d = {raw['d']}, n = {n}, SiLU, κ = 1/√n, no "
        f"biases, p = {p}; ½·MSE, pseudo-Huber μ = √n = {raw['mu']:.4g}, "
        f"τ = {raw['tau']:g}, ᾱ = {raw['step_size']}, float64, full batch. "
        f"pyscsopt {raw['pyscsopt']} (jax {raw['jax']}, `jax_enable_x64`), "
        "`ProxGGNSCORE(use_prox=False)`, `ss_type=1`, L = 1/ᾱ; sklearn_ggn "
        "`damping=1.0` (pyscsopt's H = ḡ'' in its dual branch), "
        "`line_search=False`.",
        "",
        "## Agreement (one step from the same θ0)",
        "",
        md_table(["quantity", "value"], [
            ("‖θ1(sklearn_ggn) − θ1(pyscsopt)‖ / ‖θ1(pyscsopt)‖",
             a["theta_rel_diff"]),
            ("same, on the update θ1 − θ0 (‖θ1 − θ0‖ = "
             f"{a['update_norm']:.4g})", a["update_rel_diff"]),
            ("same, on the direction d", a["direction_rel_diff"]),
            ("step size α: sklearn_ggn (history_)", f"{a['alpha_sklearn_ggn']:.17g}"),
            ("step size α: pyscsopt (recovered along its d)",
             f"{a['alpha_pyscsopt']:.17g}"),
            ("|Δα| / α", a["alpha_rel_diff"]),
            ("pyscsopt bare step vs iterate, θ1 rel. diff",
             a["step_vs_iterate_rel_diff"]),
        ]),
        "",
        "## Time per step",
        "",
        f"Waited {raw['waited_s']:.0f} s for the 1-minute load average to fall "
        f"below 1.0 ({'reached' if raw['quiet'] else 'NOT reached; started anyway'}"
        f"); it was {raw['load_at_timing_start']:.2f} when timing started. "
        "During timing: " + timing_monitor.markdown().removeprefix("Load: "),
        "",
    ]
    rows = []
    for key, label in CASES:
        vals = t[key]["all"]
        rows.append((label, t[key]["median"], spread(vals), len(vals),
                     t[key]["median"] / t_sk))
    lines += [
        md_table(["what", "median [s]", "min-max [s]", "repeats",
                  "÷ sklearn_ggn"], rows),
        "",
        f"**Speed target (sklearn_ggn ≥ {TARGET_SPEEDUP:g}× faster per step)**: "
        f"{speedup:.1f}× against pyscsopt's bare step → **{verdict['speed']}** "
        f"({speedup_it:.1f}× against `iterate(max_epoch=1)`). The sklearn_ggn "
        "time is a whole `fit` (validation, forward passes, direction, update), "
        "the peer's bare step only its `step` method. pyscsopt's dual branch "
        "multiplies by the dense p × p `jnp.diag(1/ḡ'')` twice, "
        f"≈ {dense_flops / 1e9:.0f} GFLOP, {dense_flops / 1e9 / t_py:.0f} GFLOP/s "
        "at its median.",
        "",
        "## Peak memory (each in a fresh child process)",
        "",
    ]
    rows = []
    for key, label in CASES:
        r = mem[key]
        rows.append((label, r["rss_before_mb"], r["maxrss_before_mb"],
                     r["maxrss_peak_mb"], r["vmhwm_peak_mb"],
                     r["maxrss_peak_mb"] - r["rss_before_mb"], r["cold_seconds"]))
    lines += [
        md_table(["what", "RSS before step [MB]", "ru_maxrss before [MB]",
                  "ru_maxrss after step [MB]", "VmHWM after step [MB]",
                  "peak − RSS before [MB]", "first full-size step [s]"], rows),
        "",
        "RSS before = VmRSS after imports, data (loaded from a file the "
        "parent wrote; the pyscsopt children never import sklearn_ggn) and a "
        "tiny warm-up step (compiles); ru_maxrss is the process high-water "
        "mark (VmHWM, the address space's, should match it). Each child is "
        "forked by a small shell so that ru_maxrss does not inherit this "
        "process's high-water mark.",
        "",
        f"**Memory target (sklearn_ggn peak ≤ {TARGET_MEMORY_FRACTION:g} × "
        f"pyscsopt's)**: {peak_sk:.0f} MB vs {peak_py:.0f} MB (bare step) = "
        f"{fraction:.3f} → **{verdict['memory']}** (vs `iterate`: {peak_it:.0f} MB, "
        f"{peak_sk / peak_it:.3f}).",
        "",
        "## What pyscsopt computes (read from its source)",
        "",
        "Files under `site-packages/pyscsopt/`; line numbers of 0.1.52.",
        "",
        "* `algorithms/prox_ggn_score.py:28-40` (dual branch, taken when "
        "m + 1 ≤ p): augments J with `λ ḡ'` and the residual with 1, then solves "
        "the non-symmetric (m+1)×(m+1) system `(I + Q̂ Ĵᵀ H⁻¹ Ĵ) B = ê` by LU "
        "(`jnp.linalg.solve`) and sets d = H⁻¹ Ĵ B with H⁻¹ = `jnp.diag(1/ḡ'')` "
        "(`:70-71`). By the push-through identity this is (JᵀQJ + ḡ'')⁻¹(Jᵀe + "
        "τḡ'), the SPEC's direction with λ_H = 1 (damping=1.0).",
        "* `algorithms/prox_ggn_score.py:42` (primal branch, m + 1 > p) uses "
        "`lam * diag(Hr_diag)` = τ ḡ'' (λ_H = τ): the two branches solve "
        "different systems, unlike SPEC section 4 where both forms agree.",
        "* `algorithms/prox_ggn_score.py:71, 38, 40, 90`: H⁻¹ is a dense p × p "
        f"matrix ({p * p * 8 / 2**20:.0f} MiB here) used in dense products "
        "(O(m p²) flops); J (m × p) and Q (m × m, `:33-35`) are explicit as "
        "well — SPEC section 5 forms none of them.",
        "* `algorithms/prox_ggn_score.py:73-76, 89-92`: α = min(1, ᾱ/(1 + M_g η)), "
        "η = sqrt(∇gᵀ diag(1/ḡ'') ∇g), M_g from `regularizers/smoothing.py:13-23` "
        "with p = len(x) — as SPEC; but ᾱ = min(1/L, 1), and 0.5 (not the "
        "paper's 0.95) when no L is given; `iterate(alpha=a)` sets L = 1/a "
        "(`algorithms/iterate.py:52`).",
        "* `algorithms/prox_ggn_score.py:85-86` + `utils/utils.py:6-16` "
        "(`ss_type=3`, not used here): backtracking starts at α = 1, not at the "
        "adaptive α; its objective adds `get_reg(z, \"l1\")` = τ‖z‖₁ "
        "(`regularizers/regularizers.py:10-11`), not the smoothed g; its "
        "Armijo slope uses ∇f only (no ∇g); the accepted α is then divided "
        "by 1 + M_g η again (`:91`). SPEC: start from the adaptive α, objective "
        "and slope of L = R + g.",
        "* `algorithms/iterate.py:101`: every iteration allocates "
        "`Cmat = np.eye(p)` (dense p × p) and evaluates the objective at x and "
        "x_prev for its log; the counter passed to `step` is 0-based.",
        "* jax computes in float32 unless `jax_enable_x64` is set (done here).",
    ]
    return "\n".join(lines), verdict


def _plot(raw, mode, stamp):
    fig, (ax1, ax2) = new_figure(2, width=5.5)
    labels = ["sklearn_ggn\nfit", "pyscsopt\nstep", "pyscsopt\niterate"]
    keys = [k for k, _ in CASES]
    vals = [raw["timings"][k]["median"] for k in keys]
    ax1.bar(labels, vals, color=["C0", "C1", "C3"])
    ax1.set_yscale("log")
    ax1.set_ylim(min(vals) / 4, max(vals) * 2)
    for i, v in enumerate(vals):
        ax1.text(i, v, f"{v:.3g} s", ha="center", va="bottom", fontsize=8)
    ax1.axhline(vals[1] / TARGET_SPEEDUP, color="r", ls="--", lw=1,
                label=f"pyscsopt step / {TARGET_SPEEDUP:g}")
    ax1.set_ylabel("median seconds per step")
    ax1.set_title(f"one step, m={raw['m']}, n={raw['n']}, p={raw['p']}")
    ax1.legend(fontsize=7)
    before = [raw["memory"][k]["rss_before_mb"] for k in keys]
    peak = [raw["memory"][k]["maxrss_peak_mb"] for k in keys]
    x = np.arange(len(keys))
    ax2.bar(x - 0.2, before, 0.4, label="RSS before step", color="0.6")
    ax2.bar(x + 0.2, peak, 0.4, label="ru_maxrss after step", color="C0")
    ax2.axhline(TARGET_MEMORY_FRACTION * peak[1], color="r", ls="--", lw=1,
                label=f"{TARGET_MEMORY_FRACTION:g} × pyscsopt step peak")
    ax2.set_xticks(x, labels)
    ax2.set_ylabel("MB")
    ax2.set_title("memory, fresh child process each")
    ax2.legend(fontsize=7)
    for i, v in enumerate(peak):
        ax2.text(i + 0.2, v, fmt(v, 4), ha="center", va="bottom", fontsize=7)
    return save_figure(fig, NAME, mode, stamp)
