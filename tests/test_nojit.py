"""``NUMBA_DISABLE_JIT=1`` runs the very same source as plain Python (for
debugging with pdb or coverage): the fits agree with the compiled ones."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

SCRIPT = """
import json, warnings
import numpy as np
from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor
warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
X = rng.standard_normal((60, 3))
y = np.arange(60) % 3
out = {}
# (float64 steps: the default mini-batch fit computes in float32, which the
# "float32" fit below covers)
for name, params in {"default": {"compute_dtype": "float64"},
                     "exact": {"curvature": "exact", "hessian": "diagonal",
                               "compute_dtype": "float64"}}.items():
    clf = GGNScoreClassifier(n_hidden=4, batch_size=16, max_iter=2,
                             random_state=0, **params).fit(X, y)
    out[name] = clf.hidden_weights_.ravel().tolist()
clf = GGNScoreClassifier(n_hidden=4, batch_size=16, max_iter=2,
                         random_state=0).fit(X.astype(np.float32), y)
out["float32"] = clf.hidden_weights_.ravel().tolist()  # the float32 exp too
reg = GGNScoreRegressor(n_hidden=4, max_iter=2, random_state=0).fit(X, X[:, 0])
out["regressor"] = reg.hidden_weights_.ravel().tolist()
print(json.dumps(out))
"""


def _run(disable_jit):
    env = dict(os.environ)
    env.pop("NUMBA_DISABLE_JIT", None)
    if disable_jit:
        env["NUMBA_DISABLE_JIT"] = "1"
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=root,
                          capture_output=True, text=True, timeout=600, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_disabled_jit_runs_the_same_fits():
    interpreted, compiled = _run(True), _run(False)
    assert set(interpreted) == {"default", "exact", "float32", "regressor"}
    for name in interpreted:  # the compiled mini-batch epoch ("exact") too
        # float32: NumPy 2 rounds a Python float times a float32 scalar to
        # float32 where numba computes it in float64; 8 steps amplify that
        tol = 1e-3 if name == "float32" else 1e-8
        np.testing.assert_allclose(interpreted[name], compiled[name], rtol=tol,
                                   atol=tol / 100, err_msg=name)
