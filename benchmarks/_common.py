"""Shared helpers: machine stamp, load monitor, timers, result writers.

Nothing here asserts speed; it only measures and writes.
"""

import contextlib
import dataclasses
import json
import os
import platform
import statistics
import threading
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

RESULTS_DIR = Path(__file__).resolve().parent / "results"
REPO_DIR = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------ machine
def _cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return platform.processor() or "unknown", None
    model, cores = "unknown", set()
    phys = core = None
    for line in lines:
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "model name" and model == "unknown":
            model = value
        elif key == "physical id":
            phys = value
        elif key == "core id":
            core = value
            cores.add((phys, core))
    return model, (len(cores) or None)


def _commit():
    """The checked-out commit, read from .git without running git (in a
    linked worktree .git is a file naming the worktree's git directory,
    whose branches are in the common git directory)."""
    git = REPO_DIR / ".git"
    try:
        if git.is_file():
            git = Path(git.read_text().split("gitdir:", 1)[1].strip())
        common = git
        if (git / "commondir").exists():
            common = git / (git / "commondir").read_text().strip()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head[:12]
        ref = head[5:]
        ref_file = common / ref
        if ref_file.exists():
            return ref_file.read_text().strip()[:12]
        packed = common / "packed-refs"
        for line in packed.read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0][:12]
    except OSError:
        pass
    return "unknown"


def _blas():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return ["threadpoolctl not installed"]
    out = []
    for info in threadpool_info():
        if info.get("user_api") != "blas":
            continue
        out.append(
            f"{info.get('internal_api')} {info.get('version')} "
            f"({info.get('architecture')}, {info.get('threading_layer')}, "
            f"{info.get('num_threads')} threads; {info.get('prefix')})"
        )
    return out or ["none found by threadpoolctl"]


def machine_stamp():
    """Dict describing the machine, the BLAS and the package versions."""
    import numba
    import scipy
    import sklearn

    import sklearn_ggn

    model, physical = _cpu_model()
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = None
    try:
        import matplotlib

        mpl = matplotlib.__version__
    except ImportError:
        mpl = "not installed"
    env = {k: os.environ[k] for k in (
        "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
        "NUMBA_NUM_THREADS", "SKLEARN_GGN_NUMBA_CACHE") if k in os.environ}
    return {
        "date (UTC)": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
        "CPU": model,
        "cores": f"{os.cpu_count()} logical, {physical} physical, "
                 f"{affinity} usable by this process",
        "memory": _memory(),
        "platform": platform.platform(),
        "BLAS": "; ".join(_blas()),
        "thread env": ", ".join(f"{k}={v}" for k, v in env.items()) or "(none set)",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "numba": numba.__version__,
        "matplotlib": mpl,
        "sklearn_ggn": f"{sklearn_ggn.__version__} (commit {_commit()})",
    }


def _memory():
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def stamp_markdown(stamp):
    rows = [(k, v) for k, v in stamp.items()]
    return md_table(["machine", ""], rows)


# --------------------------------------------------------------------- load
def loadavg():
    try:
        with open("/proc/loadavg") as fh:
            return float(fh.read().split()[0])
    except OSError:
        return float("nan")


def _proc_stat():
    """(busy, steal) jiffies summed over all CPUs, or None."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return user + nice + system + irq + softirq + steal, steal


def _own_cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class LoadMonitor:
    """Samples the 1-minute load average every few seconds while running and
    estimates how many cores *other* processes kept busy (from /proc/stat
    minus this process's own CPU time, children included)."""

    def __init__(self, interval=2.0):
        self.interval = interval
        self.samples = []
        self._stop = threading.Event()

    def _run(self):
        while not self._stop.wait(self.interval):
            self.samples.append(loadavg())

    def __enter__(self):
        self.load_before = loadavg()
        self.samples = [self.load_before]
        self._stat0, self._own0 = _proc_stat(), _own_cpu()
        self._t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.wall = time.perf_counter() - self._t0
        self.load_after = loadavg()
        self.samples.append(self.load_after)
        stat1, own1 = _proc_stat(), _own_cpu()
        self.other_cores = self.steal_cores = float("nan")
        if self._stat0 is not None and stat1 is not None and self.wall > 0:
            hz = os.sysconf("SC_CLK_TCK")
            busy = (stat1[0] - self._stat0[0]) / hz
            self.other_cores = max(0.0, busy - (own1 - self._own0)) / self.wall
            self.steal_cores = (stat1[1] - self._stat0[1]) / hz / self.wall
        return False

    def summary(self):
        s = self.samples
        return {
            "wall_s": round(self.wall, 1),
            "load1_before": s[0],
            "load1_after": self.load_after,
            "load1_max_during": max(s),
            "load1_median_during": statistics.median(s),
            "other_processes_cores": round(self.other_cores, 2),
            "steal_cores": round(self.steal_cores, 2),
        }

    def markdown(self):
        d = self.summary()
        return (
            f"Load: 1-min load average {d['load1_before']:.2f} before, "
            f"{d['load1_after']:.2f} after, median {d['load1_median_during']:.2f} "
            f"and max {d['load1_max_during']:.2f} during the {d['wall_s']:.0f} s "
            "run (this process's own threads count in it). Other processes kept "
            f"{d['other_processes_cores']:.2f} cores busy on average (CPU steal "
            f"{d['steal_cores']:.2f} cores), from /proc/stat minus this process."
        )


def wait_for_quiet(threshold=1.0, poll=30.0, max_wait=1200.0):
    """Poll /proc/loadavg until the 1-minute load is below ``threshold``."""
    t0 = time.monotonic()
    while True:
        load = loadavg()
        if load < threshold:
            print(f"load average {load:.2f} < {threshold}: starting", flush=True)
            return True
        if time.monotonic() - t0 > max_wait:
            print(f"load average still {load:.2f} after {max_wait:.0f} s: "
                  "starting anyway (results flagged by the load report)", flush=True)
            return False
        print(f"load average {load:.2f} >= {threshold}; waiting {poll:.0f} s",
              flush=True)
        time.sleep(poll)


# ------------------------------------------------------------------ timing
def time_interleaved(cases, repeats, warmup=1):
    """Time several zero-argument callables round-robin.

    ``cases`` maps name -> callable, or name -> (setup, callable) where the
    untimed ``setup()`` runs right before each timed call. Interleaving puts
    slow drifts of a shared machine on every case alike, so ratios measured
    here are fairer than ones from back-to-back blocks. Returns name -> list
    of seconds.
    """
    norm = {}
    for name, case in cases.items():
        norm[name] = case if isinstance(case, tuple) else (None, case)
    for _ in range(warmup):
        for setup, fn in norm.values():
            if setup is not None:
                setup()
            fn()
    times = {name: [] for name in norm}
    for _ in range(repeats):
        for name, (setup, fn) in norm.items():
            if setup is not None:
                setup()
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return times


def median(values):
    values = [v for v in values if v is not None and np.isfinite(v)]
    return statistics.median(values) if values else float("nan")


def geometric_mean(values):
    """The geometric mean of positive ratios (NaN for none)."""
    values = [v for v in values if v is not None and np.isfinite(v) and v > 0]
    return float(np.exp(np.mean(np.log(values)))) if values else float("nan")


def spread(values):
    """``min-max`` of a list of seconds as text."""
    return f"{min(values):.4g}-{max(values):.4g}"


@contextlib.contextmanager
def quiet_warnings():
    """Silence the convergence warnings of budgeted fits."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# ------------------------------------------------------------------ output
def fmt(value, digits=4):
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return str(value)
    if not np.isfinite(value):
        return "n/a"
    return f"{value:.{digits}g}"


def md_table(headers, rows):
    lines = ["| " + " | ".join(str(h) for h in headers) + " |",
             "|" + "|".join("---" for _ in headers) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(fmt(v) for v in row) + " |")
    return "\n".join(lines)


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return obj


def run_with_package(code, package, *args):
    """Run ``python -c code *args`` in a fresh process that imports
    ``sklearn_ggn`` from the folder ``package`` (a tree's root, or another
    version's extracted package), and return the JSON it prints after
    ``RESULT``. Its stderr (progress) goes to this process's."""
    import subprocess
    import sys
    import tempfile

    env = dict(os.environ, PYTHONPATH=package)
    # (from a neutral folder: "python -c" puts the working directory before
    # PYTHONPATH, and the repository root holds this tree's package)
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env,
                         stdout=subprocess.PIPE, text=True,
                         cwd=tempfile.gettempdir())
    if out.returncode != 0:
        raise RuntimeError(f"the run with the package in {package} failed "
                           f"(exit status {out.returncode}; see above)")
    return json.loads(out.stdout.split("RESULT", 1)[1])


def result_path(name, mode, suffix):
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    return RESULTS_DIR / f"{name}_{mode}{suffix}"


def write_page(name, text):
    """Write a standalone benchmark's Markdown page ``results/<name>``
    (``text`` as it is) and say where."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / name
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return path


def write_result(name, mode, title, stamp, monitor, body, raw, figures=(),
                 command=None):
    """Write ``results/<name>_<mode>.md`` (+ ``.json``); figures are already
    saved PNG paths, linked from the Markdown. ``command``: what generated
    it, when not ``python -m benchmarks --<mode>``."""
    command = command or f"python -m benchmarks --{mode}"
    parts = [f"# {title}", "",
             f"Mode: `--{mode}`. Generated by `{command}`.", "",
             monitor.markdown(), "", body.rstrip(), ""]
    for fig in figures:
        parts += [f"![{fig.stem}]({fig.name})", ""]
    parts += ["## Machine", "", stamp_markdown(stamp), ""]
    md = result_path(name, mode, ".md")
    md.write_text("\n".join(parts))
    payload = {"benchmark": name, "mode": mode, "machine": stamp,
               "load": monitor.summary(), "results": raw}
    result_path(name, mode, ".json").write_text(
        json.dumps(_jsonable(payload), indent=1, allow_nan=True))
    return md


def new_figure(ncols=1, width=6.0, height=4.2):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, height),
                             squeeze=False)
    return fig, list(axes[0])


def save_figure(fig, name, mode, stamp, suffix=""):
    import matplotlib.pyplot as plt

    fig.text(0.01, 0.005, f"{stamp['CPU']} | {stamp['cores']} | "
             f"{stamp['BLAS'].split(')')[0]}) | {stamp['date (UTC)']} UTC",
             fontsize=6, color="0.4")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    path = result_path(name + suffix, mode, ".png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ------------------------------------------------------------ step problem
class StepProblem:
    """The inputs of one full-batch GGN-SCORE step, built through
    ``sklearn_ggn.engine`` as ``GGNScoreRegressor.fit`` builds them:
    teacher-student data, float64, squared error, the estimator's default
    regularizer, activation, scaling (κ = 1/sqrt(n), ``"ntk"``), μ = 1/κ
    (``mu="auto"``) and τ, ``damping="auto"`` (full batch: curvature scale
    λ_H = τ, i.e. H = τ ḡ''(θ)).

    ``linearization`` is ``Problem.linearize`` at fixed weights θ (the
    residual, curvature factor, ∇g and D); ``direction(form)`` calls
    ``Linearization.direction`` on a fresh copy of it, so every call
    recomputes the gradient, sensitivities, Gram or GN matrix, Cholesky and
    solves — the step without forward pass, step-size rule or line search.
    ``auto_form()`` is ``engine.choose_linear_solver(..., "auto")``, the
    call the solver makes.
    """

    def __init__(self, m, d, n, seed=0, fit_intercept=False, tau=1e-4):
        from sklearn_ggn import GGNScoreRegressor
        from sklearn_ggn.datasets import make_teacher_student
        from sklearn_ggn.engine import LOSSES, REGULARIZERS, Problem, TwoLayerNetwork

        X, y, _, _ = make_teacher_student(n_train=m, n_test=1, n_features=d,
                                          random_state=seed)
        self.m, self.d, self.n = m, d, n
        defaults = GGNScoreRegressor().get_params()
        if defaults["scaling"] != "ntk" or defaults["mu"] != "auto":
            raise RuntimeError("StepProblem assumes the defaults scaling='ntk' "
                               "and mu='auto'; update it")
        kappa = 1.0 / np.sqrt(n)
        self.network = net = TwoLayerNetwork(d, n, 1, kappa,
                                             defaults["activation"], fit_intercept)
        rng = np.random.default_rng(seed)
        U = rng.standard_normal((n, d)) / np.sqrt(d)
        V = rng.standard_normal((n, 1))
        self.theta = net.pack(U, V, np.zeros(n), np.zeros(1))
        self.problem = Problem(net, LOSSES["squared_error"](),
                               REGULARIZERS[defaults["regularizer"]](1.0 / kappa),
                               tau, X, y[:, None], np.ones(m))
        batch = self.problem.batch()
        evaluation = self.problem.evaluate(self.theta, batch)
        self.linearization, _ = self.problem.linearize(self.theta, batch,
                                                       evaluation, tau)
        self.p = net.n_params

    def direction(self, form):
        # A new Linearization from the same fields: its gradient and
        # sensitivities are not cached from an earlier call.
        return dataclasses.replace(self.linearization).direction(form)

    def auto_form(self):
        from sklearn_ggn.engine import choose_linear_solver

        return choose_linear_solver(self.network, self.m, "auto")
