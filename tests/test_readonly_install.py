"""Import and fit from a read-only install with no writable numba cache
(issue 9, item 3).

A copy of the package is made read-only and imported in a subprocess whose
HOME and XDG cache directory are read-only too and without NUMBA_CACHE_DIR,
so that none of numba's cache locators (``NUMBA_CACHE_DIR``, the module's
``__pycache__``, the user-wide cache directory) can write. Read-only means
``chmod`` for ordinary users; root ignores file modes, so as root the copy is
bind-mounted read-only in a private mount namespace (``unshare``), and the
test is skipped when that is not possible.
"""

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import sklearn_ggn

SCRIPT = """
import warnings
import numpy as np
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import sklearn_ggn
    import sklearn_ggn._config as config
    from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor
    rng = np.random.RandomState(0)
    X = rng.standard_normal((30, 3))
    GGNScoreRegressor(n_hidden=3, max_iter=2).fit(X, X[:, 0]).predict(X)
    GGNScoreClassifier(n_hidden=3, max_iter=2, batch_size=8).fit(X, X[:, 0] > 0)
cache_warnings = [str(w.message) for w in caught
                  if type(w.message).__name__ == "NumbaCacheWarning"]
print("CACHE", config.NUMBA_CACHE)
print("WARNINGS", len(cache_warnings))
for message in cache_warnings:
    print("MESSAGE", message)
"""


def _read_only_tree(root):
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o444)
        os.chmod(dirpath, 0o555)


def _writable_again(root):
    for dirpath, _, _ in os.walk(root):
        os.chmod(dirpath, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP)


@pytest.fixture
def read_only_install():
    """``(command prefix, environment)`` running Python on a read-only copy."""
    base = Path(tempfile.mkdtemp(prefix="ggn-readonly-"))
    try:
        shutil.copytree(Path(sklearn_ggn.__file__).parent, base / "sklearn_ggn",
                        ignore=shutil.ignore_patterns("__pycache__", "*.nbi",
                                                      "*.nbc"))
        (base / "home").mkdir()
        _read_only_tree(base)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("NUMBA_", "SKLEARN_GGN_", "XDG_"))}
        env.update(HOME=str(base / "home"), XDG_CACHE_HOME=str(base / "home"),
                   PYTHONPATH=str(base), PYTHONDONTWRITEBYTECODE="1",
                   OPENBLAS_NUM_THREADS="1")
        if os.access(base / "sklearn_ggn", os.W_OK):  # root ignores modes
            unshare = shutil.which("unshare")
            probe = unshare and subprocess.run(
                [unshare, "--mount", "sh", "-c",
                 f"mount --bind {base} {base} && "
                 f"mount -o remount,bind,ro {base} && ! touch {base}/home/x"],
                capture_output=True)
            if not probe or probe.returncode != 0:
                pytest.skip("cannot make a read-only copy as this user")
            prefix = [unshare, "--mount", "sh", "-c",
                      f"mount --bind {base} {base} && "
                      f"mount -o remount,bind,ro {base} && exec \"$0\" \"$@\"",
                      sys.executable]
        else:
            prefix = [sys.executable]
        yield prefix, env
    finally:
        _writable_again(base)
        shutil.rmtree(base, ignore_errors=True)


def _run(prefix, env, extra_env=None):
    result = subprocess.run(
        prefix + ["-c", SCRIPT], env={**env, **(extra_env or {})},
        capture_output=True, text=True, timeout=600, cwd=tempfile.gettempdir())
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_read_only_install_compiles_in_memory_and_warns_once(read_only_install):
    out = _run(*read_only_install)
    assert "CACHE False" in out
    assert "WARNINGS 1" in out
    message = out.split("MESSAGE", 1)[1]
    assert "SKLEARN_GGN_NUMBA_CACHE" in message
    assert "NUMBA_CACHE_DIR" in message


def test_read_only_install_with_cache_off_is_silent(read_only_install):
    prefix, env = read_only_install
    out = _run(prefix, env, {"SKLEARN_GGN_NUMBA_CACHE": "0"})
    assert "CACHE False" in out
    assert "WARNINGS 0" in out


def test_read_only_install_with_numba_cache_dir_caches(read_only_install,
                                                       tmp_path_factory):
    prefix, env = read_only_install
    cache_dir = Path(tempfile.mkdtemp(prefix="ggn-numba-cache-"))
    try:
        out = _run(prefix, env, {"NUMBA_CACHE_DIR": str(cache_dir)})
        assert "CACHE True" in out
        assert "WARNINGS 0" in out
        assert any(cache_dir.rglob("*.nbi"))
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
