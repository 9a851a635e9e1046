"""The compiled kernels are cached outside the package, installed or not.

In a fresh virtual environment (that sees this environment's numpy, scipy,
scikit-learn and numba) a copy of the source tree
is installed non-editable, imported and fitted from another folder, then
reinstalled editable and imported from another folder. Neither the
installed package folder nor the source tree of the editable install may
gain a file from the import or the fit: the kernels go to the per-user cache
directory (here a temporary ``XDG_CACHE_HOME``).

Python's own bytecode (``__pycache__/*.pyc``) is Python's, not the
package's: the subprocesses run with ``PYTHONDONTWRITEBYTECODE=1``.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

import sklearn_ggn

SOURCE = Path(sklearn_ggn.__file__).resolve().parent.parent

FIT = """
import sys
import numpy as np
import sklearn_ggn
from sklearn_ggn import GGNScoreRegressor
print("FILE", sklearn_ggn.__file__)
if len(sys.argv) > 1:
    X = np.random.RandomState(0).standard_normal((20, 2))
    GGNScoreRegressor(n_hidden=3, max_iter=1).fit(X, X[:, 0]).predict(X)
"""


def _listing(folder):
    return sorted((str(p.relative_to(folder)), p.stat().st_size)
                  for p in Path(folder).rglob("*"))


def _run(args, env, cwd):
    result = subprocess.run(args, env=env, cwd=cwd, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return result.stdout + result.stderr


def _offline_build():
    """Whether this environment can build the package without an index
    (the build requirements of pyproject.toml: setuptools>=68 and wheel)."""
    try:
        import setuptools
        import wheel  # noqa: F401
    except ImportError:
        return False
    return int(setuptools.__version__.split(".")[0]) >= 68


def _install(pip, args, env, cwd):
    """pip install; without the build requirements here, pip fetches them
    into an isolated build environment (skipped when it cannot)."""
    if _offline_build():
        return _run(pip + ["--no-build-isolation", "--no-index"] + args, env, cwd)
    result = subprocess.run(pip + args, env=env, cwd=cwd, capture_output=True,
                            text=True, timeout=900)
    if result.returncode != 0 and "setuptools" in result.stderr and (
            "Could not find a version" in result.stderr
            or "connection" in result.stderr.lower()):
        pytest.skip("no setuptools>=68 and wheel here, and no index to get them")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return result.stdout


@pytest.mark.slow
@pytest.mark.skipif(not (SOURCE / "pyproject.toml").exists(),
                    reason="needs the source tree")
def test_installed_and_editable_packages_stay_unwritten(tmp_path):
    pytest.importorskip("setuptools")
    source = tmp_path / "source"
    shutil.copytree(SOURCE, source, ignore=shutil.ignore_patterns(
        ".git", "__pycache__", "*.nbi", "*.nbc", "*.egg-info", "build", "dist",
        ".venv", "docs", "examples", "benchmarks", "tests", "*.png"))
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = str(env_dir / ("Scripts" if os.name == "nt" else "bin") / "python")
    # numpy, scipy, scikit-learn and numba from this environment (which may
    # itself be a virtual environment: --system-site-packages would reach
    # the base interpreter's packages instead): its site folders go on the
    # new environment's path after its own, without running their .pth
    # files (no editable install of this source tree leaks in)
    inner = subprocess.run([python, "-c", "import sysconfig; "
                            "print(sysconfig.get_paths()['purelib'])"],
                           capture_output=True, text=True, check=True)
    outer = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    Path(inner.stdout.strip(), "outer_environment.pth").write_text(
        "\n".join(sorted(outer)) + "\n")
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NUMBA_", "SKLEARN_GGN_", "PYTHON", "XDG_"))}
    env.update(XDG_CACHE_HOME=str(cache), PYTHONDONTWRITEBYTECODE="1",
               OPENBLAS_NUM_THREADS="1")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "--quiet",
           "--no-deps"]

    # non-editable: import and fit from another folder, compiling and then
    # loading from the cache
    _install(pip, [str(source)], env, elsewhere)
    purelib = _run([python, "-c", "import sysconfig; "
                    "print(sysconfig.get_paths()['purelib'])"], env, elsewhere)
    installed = Path(purelib.strip()) / "sklearn_ggn"
    before = _listing(installed)
    for compiles in (True, False):
        out = _run([python, "-c", FIT, "fit"], env, elsewhere)
        assert Path(out.split("FILE", 1)[1].split()[0]).parent == installed
        # one line on stderr when (and only when) the kernels compile
        assert out.count("compiling the numba kernels") == int(compiles)
    assert _listing(installed) == before
    assert any(cache.joinpath("sklearn_ggn", "numba").rglob("*.nbi"))

    # editable: import from another folder
    _install(pip, ["--editable", str(source)], env, elsewhere)
    before = _listing(source)
    out = _run([python, "-c", FIT], env, elsewhere)
    assert Path(out.split("FILE", 1)[1].split()[0]).parent == source / "sklearn_ggn"
    assert _listing(source) == before


def test_first_compile_note_once_on_stderr_or_to_logging(monkeypatch, capsys,
                                                         caplog):
    """With an empty cache: one line on stderr without logging configured,
    an INFO record of the "sklearn_ggn" logger with it; never a warning;
    nothing when the kernels are cached."""
    import logging
    import warnings

    from sklearn_ggn import _config

    monkeypatch.setattr(_config, "NUMBA_CACHE", True)
    monkeypatch.setattr(_config, "kernels_cached", lambda: False)
    monkeypatch.setattr(logging.getLogger("sklearn_ggn"), "hasHandlers",
                        lambda: False)
    monkeypatch.setattr(_config, "_first_compile_noted", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _config.note_first_compile()
        _config.note_first_compile()
    assert capsys.readouterr().err.count("compiling the numba kernels") == 1

    monkeypatch.undo()
    monkeypatch.setattr(_config, "NUMBA_CACHE", True)
    monkeypatch.setattr(_config, "kernels_cached", lambda: False)
    monkeypatch.setattr(_config, "_first_compile_noted", False)
    with caplog.at_level(logging.INFO, logger="sklearn_ggn"):
        _config.note_first_compile()
    assert [r.levelno for r in caplog.records
            if "compiling the numba kernels" in r.getMessage()] == [logging.INFO]
    assert "compiling" not in capsys.readouterr().err

    monkeypatch.setattr(_config, "kernels_cached", lambda: True)
    monkeypatch.setattr(_config, "_first_compile_noted", False)
    _config.note_first_compile()
    assert "compiling" not in capsys.readouterr().err


def test_cached_kernels_are_stamped_with_every_package_source(monkeypatch,
                                                              tmp_path):
    """numba stamps a cached kernel with its own file only, but a kernel
    holds its callees from other modules compiled in: after an edit of
    ``_activations.py`` the cached step would still run the old activation.
    The package's locator stamps every kernel with all of its sources."""
    from sklearn_ggn import _config

    locator = _config.cache_locator()
    if locator is None:
        pytest.skip("no writable cache directory")
    assert locator.get_source_stamp() == _config._package_stamp()
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    monkeypatch.setattr(_config, "_PACKAGE_DIR", str(tmp_path))
    _config._package_stamp.cache_clear()
    try:
        before = _config._package_stamp()
        (tmp_path / "sub" / "b.py").write_text("y = 3\n")
        _config._package_stamp.cache_clear()
        assert _config._package_stamp() != before
    finally:
        _config._package_stamp.cache_clear()


STAMP = """
import os, sys
from sklearn_ggn import _config
locator = _config.cache_locator()
print("STAMPED", locator.get_source_stamp() == _config._package_stamp())
print("PATH", os.path.realpath(locator.get_cache_path()))
"""


@pytest.mark.parametrize("numba_cache_dir", [True, False])
def test_kernels_keep_the_package_stamp_wherever_they_are_cached(
        tmp_path, numba_cache_dir):
    """With ``NUMBA_CACHE_DIR`` set the kernels are cached there, still
    stamped with every source of the package (numba's own locator for that
    variable would stamp them with their own file only); without it, in the
    package's per-user directory."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NUMBA_", "SKLEARN_GGN_", "XDG_"))}
    env.update(XDG_CACHE_HOME=str(tmp_path / "xdg"), PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=str(Path(sklearn_ggn.__file__).parent.parent))
    if numba_cache_dir:
        env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba")
    out = _run([sys.executable, "-c", STAMP], env, tmp_path)
    assert "STAMPED True" in out
    path = out.split("PATH", 1)[1].split()[0]
    expected = tmp_path / ("numba" if numba_cache_dir else "xdg")
    assert Path(path).is_relative_to(expected.resolve() / "sklearn_ggn")
    # the package's own kernels are found by the same locator
    from numba.core.caching import FunctionCache

    from sklearn_ggn import _activations
    kernel = next(f for f in vars(_activations).values()
                  if hasattr(f, "py_func") and getattr(f, "_cache", None))
    assert type(FunctionCache(kernel.py_func)._impl.locator).__name__ in (
        "PackageCacheLocator",)
