"""RealMLP-TD (``pytabkit``, Holzmüller et al. 2024) as a peer of the
benchmarks, fitted in another Python.

torch is heavy and no dependency of the package, so RealMLP runs in a
separate interpreter that has ``torch`` and ``pytabkit`` installed: its path
comes from ``--realmlp-python PATH`` or the environment variable
``SKLEARN_GGN_REALMLP_PYTHON``. :class:`RealMLP` starts this file as a
script in that interpreter once per benchmark run and keeps it: one JSON
line a job on its standard input, one JSON line an answer on its standard
output, the arrays in a temporary ``.npz``.

What the worker does for a job: ``RealMLP_TD_Classifier`` /
``RealMLP_TD_Regressor`` with the tuned defaults and only
``device="cpu"``, ``n_threads=1``, ``verbosity=0`` and
``random_state=seed`` set (one torch thread: ``torch.set_num_threads(1)``,
``set_num_interop_threads(1)`` and the ``*_NUM_THREADS`` variables at 1).
The table goes in as the authors recommend for the TD defaults: the numeric
columns raw (RealMLP-TD median-centres, robust-scales and smooth-clips them
itself), the categorical columns as strings named in ``cat_col_names``
(one-hot up to 9 levels, embeddings above), the target as it is (the
regressor standardizes it itself). The time is the wall time of ``fit``
alone, measured in the worker (torch's import, the arrays' transfer and
``predict`` excluded); before the first job the worker makes two untimed
fits of 4 epochs on 120 generated rows (a classifier and a regressor), so
that no timed fit pays for lazy imports or first calls. The worker also
reports the fit's CPU seconds, which stay near the wall time at one thread.

Only the standard library and numpy are imported at the top: the worker's
interpreter has no sklearn_ggn.
"""

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ENV_VAR = "SKLEARN_GGN_REALMLP_PYTHON"
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def realmlp_python(option=None):
    """The RealMLP interpreter's path from the option or the environment,
    or None when neither names one."""
    return option or os.environ.get(ENV_VAR) or None


def split_columns(X, categorical=()):
    """``(numeric float64 matrix, categorical str matrix)`` of a DataFrame
    (``categorical``: column names) or an array (``categorical``: column
    indices)."""
    if hasattr(X, "columns"):
        numeric = [c for c in X.columns if c not in categorical]
        return (X[numeric].to_numpy(dtype=np.float64),
                X[list(categorical)].astype(str).to_numpy().astype(str))
    X = np.asarray(X)
    numeric = [j for j in range(X.shape[1]) if j not in categorical]
    codes = X[:, list(categorical)]
    if codes.dtype.kind == "f" and np.all(codes == np.round(codes)):
        codes = codes.astype(np.int64)
    return X[:, numeric].astype(np.float64), codes.astype(str)


class RealMLP:
    """A running worker: ``fit(X_tr, y_tr, X_te, regression, seed,
    categorical)`` returns ``(test predictions, fit seconds, info)``. Use as
    a context manager, so that the worker ends (and its CPU time counts in
    the load report) before the run's load monitor stops."""

    def __init__(self, python):
        self.python = python
        self.proc = None
        self.versions = None
        self.tmp = tempfile.TemporaryDirectory(prefix="realmlp_")

    def __enter__(self):
        return self

    def _start(self):
        """Start the worker (at the first fit: a run whose RealMLP fits are
        all reused starts none)."""
        env = dict(os.environ, **{k: "1" for k in THREAD_VARS})
        env.pop("PYTHONPATH", None)
        self.proc = subprocess.Popen(
            [self.python, os.path.abspath(__file__), "--worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
            cwd=self.tmp.name)
        self.versions = self._answer()["versions"]

    def __exit__(self, *exc):
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait()
        self.tmp.cleanup()
        return False

    def _answer(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the RealMLP worker ended (see its messages "
                               "above)")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise RuntimeError("RealMLP worker: " + answer.get("error", "?"))
        return answer

    def fit(self, X_tr, y_tr, X_te, regression, seed, categorical=()):
        if self.proc is None:
            self._start()
        num_tr, cat_tr = split_columns(X_tr, categorical)
        num_te, cat_te = split_columns(X_te, categorical)
        y_tr = np.asarray(y_tr)
        if y_tr.dtype == object:
            y_tr = y_tr.astype(str)
        path = os.path.join(self.tmp.name, "job.npz")
        np.savez(path, num_tr=num_tr, cat_tr=cat_tr, y_tr=y_tr, num_te=num_te,
                 cat_te=cat_te)
        self.proc.stdin.write(json.dumps(
            {"path": path, "regression": bool(regression), "seed": int(seed)})
            + "\n")
        self.proc.stdin.flush()
        answer = self._answer()
        with np.load(answer["out"], allow_pickle=False) as out:
            pred = out["pred"]
        return pred, answer["fit_s"], {"cpu_s": answer["cpu_s"],
                                       "job": answer["job"]}


# ------------------------------------------------------------------ worker
def _frame(num, cat):
    import pandas as pd

    df = pd.DataFrame(num, columns=[f"x{j}" for j in range(num.shape[1])])
    names = [f"c{j}" for j in range(cat.shape[1])]
    for j, name in enumerate(names):
        df[name] = pd.Series(cat[:, j], dtype=object)
    return df, names


def _model(regression, seed, **extra):
    from pytabkit import RealMLP_TD_Classifier, RealMLP_TD_Regressor

    cls = RealMLP_TD_Regressor if regression else RealMLP_TD_Classifier
    return cls(device="cpu", n_threads=1, verbosity=0, random_state=seed,
               **extra)


def _fit_job(job, count):
    with np.load(job["path"], allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    X_tr, cats = _frame(arrays["num_tr"], arrays["cat_tr"])
    X_te, _ = _frame(arrays["num_te"], arrays["cat_te"])
    model = _model(job["regression"], job["seed"])
    with contextlib.redirect_stdout(sys.stderr):
        c0, t0 = time.process_time(), time.perf_counter()
        model.fit(X_tr, arrays["y_tr"], cat_col_names=cats)
        fit_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
        pred = model.predict(X_te)
    pred = np.asarray(pred)
    if pred.dtype == object:  # (class labels given as strings come back so)
        pred = pred.astype(str)
    out = job["path"] + f".out{count}.npz"
    np.savez(out, pred=pred)
    return {"ok": True, "fit_s": fit_s, "cpu_s": cpu_s, "out": out,
            "job": count}


def _warm_up():
    """Untimed fits of 4 epochs on 120 rows, a classifier and a regressor
    with one categorical column, before any timed fit."""
    rng = np.random.default_rng(0)
    X, cats = _frame(rng.standard_normal((120, 3)),
                     rng.integers(0, 3, (120, 1)).astype(str))
    y = X["x0"].to_numpy() + (X["c0"] == "1")
    with contextlib.redirect_stdout(sys.stderr):
        for regression in (False, True):
            target = y if regression else (y > 0.3).astype(int)
            _model(regression, 0, n_epochs=4).fit(X, target, cat_col_names=cats)


def worker():
    import warnings

    warnings.simplefilter("ignore")
    import torch

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    from importlib.metadata import version

    _warm_up()
    print(json.dumps({"ok": True, "versions": {
        "torch": torch.__version__, "pytabkit": version("pytabkit"),
        "torch threads": torch.get_num_threads(),
        "python": sys.version.split()[0]}}), flush=True)
    for count, line in enumerate(sys.stdin):
        try:
            answer = _fit_job(json.loads(line), count)
        except Exception as exc:  # reported to the benchmark, which stops
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
    worker()
