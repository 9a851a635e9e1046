"""Benchmark 7 — scale-out: ``GridSearchCV`` over μ × τ, sequential and parallel.

The search: :class:`~sklearn.model_selection.GridSearchCV` of a
``GGNScoreClassifier(n_hidden=128, max_iter=epochs, random_state=0)``
(package defaults otherwise: SiLU, log loss, ``damping="adaptive"``, and
``batch_size="auto"``, which for the classifier's default step, one kernel
row per sample, trains in full batch up to 512 rows and in batches of 128
beyond: 128 on every fold of ``--quick`` and ``--full``, full batch on the
400-row folds of ``--smoke``; the user guide's ``batch_size`` states the
rule) over a 5 × 5 grid, ``mu = c·√n`` for c in ``geomspace(1e-2, 1e2, 5)``
(``mu="auto"`` is ``1/κ(n) = √n``, i.e. c = 1) and ``tau`` in
``geomspace(1e-6, 1e-2, 5)``; ``cv=StratifiedKFold(3, shuffle=True,
random_state=0)``, ``refit=True`` (the refit on the whole training set runs
in the main process and is part of every timed search). 75 fits + 1 refit.

Data: the pendigits training file (7494 × 16, 10 classes) from
:func:`sklearn_ggn.datasets.load_uci` without downloading, features divided
by 100 (to [0, 1]); ``--quick`` uses a stratified subsample of 4000 of
them, ``--full`` the whole training set; one epoch a fit in both.
The data folder is ``SKLEARN_GGN_DATA`` or a ``shared/data`` folder beside
the repository; without pendigits the benchmark is skipped and its result
file says so. The best estimator is scored on the pendigits test file.

Timed (wall clock of ``search.fit``, ``time.perf_counter``), round-robin
over repeats (one run each in ``--quick`` and ``--full``):

* ``n_jobs=1``: sequential, in the main process with its default BLAS
  threads (reported);
* ``n_jobs=1, 1 BLAS thread``: the same inside
  ``threadpoolctl.threadpool_limits(1, user_api="blas")`` — the sequential
  baseline without thread contention (on a shared machine, multi-threaded
  BLAS on the small 250 × 250 systems of a mini-batch step can be many times
  slower than one thread);
* ``n_jobs=2``: joblib's default ``loky`` process pool (it starts its
  workers with ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``,
  ``NUMBA_NUM_THREADS``, ... = ``cpu_count() // n_jobs``);
* ``dask``: a real ``distributed.LocalCluster(n_workers=2,
  threads_per_worker=1, processes=True)`` on localhost (scheduler in this
  process, two worker processes) with a ``Client``, the search run under
  ``joblib.parallel_config(backend="dask")`` with ``n_jobs=-1``.

Not timed: the numba kernels are warmed in the main process by one tiny fit;
the loky pool and the dask cluster are started and warmed before timing.
Each warm-up runs a probe once in every worker (the dask one through
``client.run``; the loky one as two tasks that hold their worker for 1 s,
which lands one on each worker) that reports the process id, the BLAS
threads seen by ``threadpoolctl``, the thread environment variables, the
import time of ``sklearn_ggn`` and a first and second tiny fit (first −
second = the first-call overhead: loading the on-disk numba cache), and then
a tiny search (2 × 2 grid, cv=2, 300 samples) on the same pool or cluster.
The cluster start-up and warm-up times are reported beside the timed
searches. Each search's ``best_params_`` and
``cv_results_["mean_test_score"]`` are compared with both sequential ones
(max abs difference and the grid points where they differ). The fits are
bit-for-bit reproducible for a given number of BLAS threads; a different
number can change the round-off, which some grid points amplify.
"""

import contextlib
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
    new_figure,
    save_figure,
    write_result,
)

NAME = "grid_search"
TITLE = "Benchmark 7: scale-out (GridSearchCV over mu × tau)"

CONFIG = {
    "smoke": {"n_train": 600, "n_hidden": 16, "epochs": 1, "grid": 2, "repeats": 1},
    "quick": {"n_train": 4000, "n_hidden": 128, "epochs": 1, "grid": 5,
              "repeats": 1},
    "full": {"n_train": None, "n_hidden": 128, "epochs": 1, "grid": 5,
             "repeats": 1},
}
CV = 3
N_JOBS = 2
CASES = ("n_jobs=1", "n_jobs=1, 1 BLAS thread", "n_jobs=2 (loky)",
         "dask (2 workers x 1 thread)")
_ENV_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS")


def _data_home():
    for candidate in (os.environ.get("SKLEARN_GGN_DATA"),
                      REPO_DIR.parent / "shared" / "data"):
        if candidate and os.path.isdir(os.path.join(candidate, "pendigits")):
            return str(candidate)
    return None


def _make_probe(hold):
    """A probe to run once in a worker; nested, so it is pickled by value
    (workers need not import this module)."""

    def probe():
        import os
        import time

        t0 = time.perf_counter()
        import numpy as np

        from sklearn_ggn import GGNScoreClassifier

        import_s = time.perf_counter() - t0
        from threadpoolctl import threadpool_info

        rng = np.random.default_rng(0)
        X = rng.random((100, 16))
        y = np.arange(100) % 10
        fits = []
        for _ in range(2):
            t0 = time.perf_counter()
            GGNScoreClassifier(n_hidden=16, max_iter=1, random_state=0).fit(X, y)
            fits.append(time.perf_counter() - t0)
        time.sleep(hold)
        return {
            "pid": os.getpid(),
            "import_s": import_s,
            "first_fit_s": fits[0],
            "second_fit_s": fits[1],
            "blas_threads": [(i["internal_api"], i["num_threads"])
                             for i in threadpool_info() if i["user_api"] == "blas"],
            "env": {k: os.environ.get(k) for k in _ENV_VARS},
        }

    return probe


def _threads_text(probe):
    blas = ", ".join(f"{api} {n}" for api, n in probe["blas_threads"]) or "none"
    env = ", ".join(f"{k}={v}" for k, v in probe["env"].items() if v is not None)
    return f"BLAS threads: {blas}; env: {env or '(none set)'}"


def _grid(cfg):
    c = np.geomspace(1e-2, 1e2, cfg["grid"])
    return {"mu": [float(v) for v in c * np.sqrt(cfg["n_hidden"])],
            "tau": [float(v) for v in np.geomspace(1e-6, 1e-2, cfg["grid"])]}


def _search(cfg, grid, n_jobs, cv=CV):
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    from sklearn_ggn import GGNScoreClassifier

    est = GGNScoreClassifier(n_hidden=cfg["n_hidden"], max_iter=cfg["epochs"],
                             random_state=0)
    folds = StratifiedKFold(cv, shuffle=True, random_state=0)
    return GridSearchCV(est, grid, cv=folds, n_jobs=n_jobs, refit=True)


def _skip(mode, stamp, message):
    print(f"[{NAME}] {message}", flush=True)
    with LoadMonitor() as monitor:
        pass
    write_result(NAME, mode, TITLE, stamp, monitor, f"**{message}**",
                 {"skipped": message})
    return {"summary": message}


def run(mode, stamp):
    """Time the search with each backend; write the tables, plot and JSON."""
    data_home = _data_home()
    if data_home is None:
        return _skip(mode, stamp, "skipped: pendigits not found (set "
                     "SKLEARN_GGN_DATA to a folder with pendigits/ in it, or "
                     "use a shared/data folder beside the repository)")
    import joblib
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import train_test_split
    from threadpoolctl import threadpool_limits

    from sklearn_ggn.datasets import load_uci

    cfg = CONFIG[mode]
    X, y, X_test, y_test = load_uci("pendigits", data_home,
                                    download_if_missing=False)
    X, X_test = X / 100.0, X_test / 100.0
    if cfg["n_train"] is not None and cfg["n_train"] < len(y):
        X, _, y, _ = train_test_split(X, y, train_size=cfg["n_train"],
                                      stratify=y, random_state=0)
    grid = _grid(cfg)
    tiny_grid = {"mu": grid["mu"][:2], "tau": grid["tau"][:2]}
    try:
        import distributed
    except ImportError:
        distributed = None
        print(f"[{NAME}] dask.distributed not installed: dask case skipped",
              flush=True)

    raw = {"config": {**cfg, "cv": CV, "n_samples": len(y), "grid": grid},
           "probes": {}, "warmup_s": {}, "times": {c: [] for c in CASES}}
    searches = {}
    with LoadMonitor() as monitor, contextlib.ExitStack() as stack:
        # budgeted fits (max_iter epochs) may stop before converging; the
        # filter reaches the workers with scikit-learn's delayed
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore", ConvergenceWarning)
        # main process: compile / load the numba kernels, note the threads
        raw["probes"]["main process"] = [_make_probe(0.0)()]
        # loky: start the pool, probe each worker, warm-up search
        stack.callback(_shutdown_loky)
        t0 = time.perf_counter()
        raw["probes"]["loky worker"] = joblib.Parallel(n_jobs=N_JOBS)(
            joblib.delayed(_make_probe(1.0))() for _ in range(N_JOBS))
        _search(cfg, tiny_grid, N_JOBS, cv=2).fit(X[:300], y[:300])
        raw["warmup_s"]["loky"] = time.perf_counter() - t0
        if distributed is not None:
            t0 = time.perf_counter()
            cluster = stack.enter_context(distributed.LocalCluster(
                n_workers=N_JOBS, threads_per_worker=1, processes=True,
                host="127.0.0.1", dashboard_address=None))
            client = stack.enter_context(distributed.Client(cluster))
            raw["cluster_start_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            raw["probes"]["dask worker"] = list(client.run(_make_probe(0.0)).values())
            with joblib.parallel_config(backend="dask"):
                _search(cfg, tiny_grid, -1, cv=2).fit(X[:300], y[:300])
            raw["warmup_s"]["dask"] = time.perf_counter() - t0

        def timed(case):
            if case.startswith("dask"):
                context = joblib.parallel_config(backend="dask")
                search = _search(cfg, grid, -1)
            elif case == "n_jobs=1, 1 BLAS thread":
                context = threadpool_limits(1, user_api="blas")
                search = _search(cfg, grid, 1)
            else:
                context = contextlib.nullcontext()
                search = _search(cfg, grid, N_JOBS if "loky" in case else 1)
            with context:
                t0 = time.perf_counter()
                search.fit(X, y)
                seconds = time.perf_counter() - t0
            raw["times"][case].append(seconds)
            searches[case] = search
            print(f"[{NAME}] {case}: {seconds:.1f} s", flush=True)

        cases = [c for c in CASES if distributed is not None or "dask" not in c]
        for _ in range(cfg["repeats"]):
            for case in cases:
                timed(case)
    _agreement(raw, searches, cases, X_test, y_test)
    body, summary = _report(raw, cases, mode)
    png = _plot(raw, cases, mode, stamp)
    write_result(NAME, mode, TITLE, stamp, monitor, body, raw, figures=[png])
    raw["summary"] = summary
    return raw


def _shutdown_loky():
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor().shutdown(wait=True)


def _agreement(raw, searches, cases, X_test, y_test):
    """Store each search's best parameters, scores and the test accuracy of
    its best estimator in ``raw``, then compare the searches."""
    raw["best"] = {}
    for case in cases:
        s = searches[case]
        raw["best"][case] = {
            "best_params": s.best_params_,
            "best_cv_score": float(s.best_score_),
            "test_accuracy": float(s.best_estimator_.score(X_test, y_test)),
        }
    raw["mean_test_score"] = {c: searches[c].cv_results_["mean_test_score"]
                              for c in cases}
    raw["params"] = [dict(p) for p in searches[cases[0]].cv_results_["params"]]
    _compare(raw, cases)


def _compare(raw, cases):
    """``raw["agreement"]``: each search against both sequential ones — same
    ``best_params_``, max abs difference of ``mean_test_score`` and the grid
    points where the scores differ."""
    raw["agreement"] = {}
    for case in cases:
        scores = np.asarray(raw["mean_test_score"][case])
        out = {}
        for ref in CASES[:2]:
            ref_scores = np.asarray(raw["mean_test_score"][ref])
            diff = np.abs(scores - ref_scores)
            out[ref] = {
                "same_best_params": (raw["best"][case]["best_params"]
                                     == raw["best"][ref]["best_params"]),
                "max_abs_diff": float(diff.max()),
                "differ_at": [raw["params"][k] for k in np.flatnonzero(diff)],
            }
        raw["agreement"][case] = out


def _differ_text(points):
    if not points:
        return "none"
    mus = sorted({p["mu"] for p in points})
    return (f"{len(points)} point(s), mu in "
            f"{{{', '.join(fmt(m, 4) for m in mus)}}}")


def _report(raw, cases, mode):
    """Markdown body and one-line summary from ``raw``."""
    cfg = raw["config"]
    med = {c: median(raw["times"][c]) for c in cases}
    one, single = CASES[:2]
    t1, t1_single = med[one], med[single]
    seq = min(t1, t1_single)
    main_threads = _threads_text(raw["probes"]["main process"][0])
    agree = raw["agreement"]
    rows = []
    for case in cases:
        rows.append((case, med[case], len(raw["times"][case]), t1 / med[case],
                     t1_single / med[case],
                     agree[case][one]["same_best_params"],
                     agree[case][one]["max_abs_diff"],
                     agree[case][single]["same_best_params"],
                     agree[case][single]["max_abs_diff"],
                     raw["best"][case]["test_accuracy"]))
    mus = ", ".join(fmt(m, 3) for m in cfg["grid"]["mu"])
    best = raw["best"][one]
    n_fits = len(cfg["grid"]["mu"]) * len(cfg["grid"]["tau"]) * CV
    subsample = ("the whole training set" if cfg["n_train"] is None else
                 f"a stratified subsample of {cfg['n_samples']}")
    lines = [
        f"pendigits ({subsample}, features / 100), GGNScoreClassifier("
        f"n_hidden={cfg['n_hidden']}, max_iter={cfg['epochs']} epoch(s), "
        "batch_size='auto': a full batch up to 512 rows, else 128, "
        "random_state=0); grid "
        f"{len(cfg['grid']['mu'])} × {len(cfg['grid']['tau'])}: mu = c·√n, "
        f"c in geomspace(1e-2, 1e2) ({mus}), "
        "tau in geomspace(1e-6, 1e-2); cv = 3 stratified shuffled folds; "
        f"{n_fits} fits + 1 refit a search. Wall time of `search.fit`, median "
        "over repeats; speed-up = sequential time / this time. `same best` "
        "and `max abs diff` compare `best_params_` and "
        "`cv_results_['mean_test_score']` with the two sequential searches.", "",
        md_table(["search", "seconds", "repeats", "speed-up vs n_jobs=1",
                  "speed-up vs 1 BLAS thread", "same best as n_jobs=1",
                  "max abs diff vs n_jobs=1", "same best as 1 BLAS thread",
                  "max abs diff vs 1 BLAS thread", "test accuracy of best"], rows),
        "", f"Best parameters (n_jobs=1): `{best['best_params']}`, CV accuracy "
        f"{fmt(best['best_cv_score'])}. Grid points whose score differs from "
        f"the `n_jobs=1` search (the main process's "
        f"{main_threads.split(';')[0]}): "
        + "; ".join(f"{c}: {_differ_text(agree[c][one]['differ_at'])}"
                    for c in cases[1:]) + ".", "",
        "## Threads and first-call overhead", "",
        "A probe run once in each process (see the module docstring): "
        "`first fit` − `second fit` (tiny fit, n_hidden=16, 100 samples) is the "
        "first-call overhead of loading the on-disk numba cache; `import` is "
        "the import of sklearn_ggn.", "",
    ]
    prows = []
    for where, probes in raw["probes"].items():
        for p in probes:
            prows.append((where, p["pid"], _threads_text(p), p["import_s"],
                          p["first_fit_s"], p["second_fit_s"]))
    lines += [md_table(["process", "pid", "threads", "import [s]",
                        "first fit [s]", "second fit [s]"], prows), ""]
    warm = [("loky pool: start + probe + warm-up search",
             raw["warmup_s"]["loky"])]
    if "cluster_start_s" in raw:
        warm += [("dask: LocalCluster + Client start", raw["cluster_start_s"]),
                 ("dask: probe + warm-up search", raw["warmup_s"]["dask"])]
    lines += ["Untimed set-up (before the timed searches; warm-up search = "
              "2 × 2 grid, cv=2, 300 samples):", "",
              md_table(["set-up", "seconds"], warm), ""]
    speed2 = seq / med["n_jobs=2 (loky)"]
    bar = "met" if speed2 >= 1.6 else "not met"
    lines += ["## Bar", "", md_table(["bar", "measured", "verdict"], [(
        "n_jobs=2 ≥ 1.6× faster than sequential",
        f"{fmt(speed2, 3)}× vs the faster sequential search ({fmt(seq, 4)} s)",
        bar)]), ""]
    if mode == "smoke":
        lines += ["`--smoke`: tiny sizes, the times mean nothing.", ""]
    summary = (f"n_jobs=1 {t1:.1f} s ({main_threads.split(';')[0]}), 1 BLAS "
               f"thread {t1_single:.1f} s, n_jobs=2 {med['n_jobs=2 (loky)']:.1f} s "
               f"({speed2:.2f}× vs best sequential)")
    dask_case = CASES[3]
    if dask_case in med:
        summary += (f", dask {med[dask_case]:.1f} s ({seq / med[dask_case]:.2f}×)")
    diff = max(agree[c][single]["max_abs_diff"] for c in cases[1:])
    diff1 = max(agree[c][one]["max_abs_diff"] for c in cases[1:])
    summary += (f"; max |Δ score| vs 1-BLAS-thread search {diff:.2g}, vs "
                f"n_jobs=1 {diff1:.2g}")
    return "\n".join(lines), summary


def _plot(raw, cases, mode, stamp):
    fig, (ax,) = new_figure(1, width=7.5)
    med = [median(raw["times"][c]) for c in cases]
    seq = min(med[:2])
    ax.barh(range(len(cases)), med, color=[f"C{i}" for i in range(len(cases))])
    for i, t in enumerate(med):
        ax.text(t, i, f" {t:.1f} s ({seq / t:.2f}×)", va="center", fontsize=8)
    ax.set_yticks(range(len(cases)), cases)
    ax.invert_yaxis()
    ax.set_xlim(0, max(med) * 1.3)
    ax.set_xlabel("wall time of search.fit [s] (× = speed-up vs faster sequential)")
    n = len(raw["config"]["grid"]["mu"])
    ax.set_title(f"GridSearchCV {n}×{n} mu × tau, cv={CV}, pendigits "
                 f"({raw['config']['n_samples']} samples)")
    return save_figure(fig, NAME, mode, stamp)
