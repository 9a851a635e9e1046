"""The Sphinx documentation builds without a single warning, and offline.

Needs the ``docs`` extra (``pip install -e ".[docs]"``); skipped otherwise.
The first test renders the examples without executing them
(``-D plot_gallery=0``), well under a minute. The second builds the whole
gallery, every example executed, the way a user without the real data and
without network builds it: ``SKLEARN_GGN_DATA`` unset, the process's
internet sockets refused, and ``SKLEARN_GGN_QUICK=1`` so that each example
runs at smoke-test scale (seconds instead of minutes; the examples' default
scale is the same code with larger grids and budgets). The sources are
copied to a temporary directory first: autosummary and sphinx-gallery write
generated ``.rst`` files next to the sources, and a test must not touch the
checkout.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("sphinx")
pytest.importorskip("numpydoc")
pytest.importorskip("sphinx_gallery")

_GENERATED = ("_build", "generated", "auto_examples", "sg_execution_times.rst")


def _copy_sources(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "docs", src / "docs",
                    ignore=shutil.ignore_patterns(*_GENERATED))
    shutil.copytree(ROOT / "examples", src / "examples",
                    ignore=shutil.ignore_patterns("__pycache__", "*.png"))
    return src


def test_docs_build_without_warnings(tmp_path):
    src = _copy_sources(tmp_path)
    out = tmp_path / "html"
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html",
           "-D", "plot_gallery=0", "-q", str(src / "docs"), str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    assert proc.returncode == 0, (
        f"sphinx-build failed ({proc.returncode}):\n{proc.stderr[-6000:]}"
    )
    for page in ("index", "user_guide", "api", "reproducing", "performance",
                 "defaults", "rejected", "mathematics", "getting_started",
                 "deployment", "migrating_from_mlp", "install",
                 "auto_examples/index",
                 "generated/sklearn_ggn.GGNScoreClassifier"):
        assert (out / f"{page}.html").is_file(), page
    reproducing = (src / "docs" / "reproducing.rst").read_text()
    assert "TODO" not in reproducing  # every section has its measured numbers


# Runs sphinx-build in a process whose internet sockets are refused (local
# AF_UNIX sockets still work): anything that tries to download fails at once
# instead of hanging or quietly using the network.
_OFFLINE_SPHINX = """
import socket
import sys

def _refuse(*args, **kwargs):
    raise OSError("network access is disabled in this documentation build")

_connect = socket.socket.connect

def _connect_local_only(self, address):
    if self.family == getattr(socket, "AF_UNIX", None):
        return _connect(self, address)
    _refuse()

socket.socket.connect = _connect_local_only
socket.socket.connect_ex = _connect_local_only
socket.create_connection = _refuse
socket.getaddrinfo = _refuse

from sphinx.cmd.build import main

sys.exit(main(sys.argv[1:]))
"""


def test_gallery_builds_offline_without_data(tmp_path):
    src = _copy_sources(tmp_path)
    out = tmp_path / "html"
    env = {key: value for key, value in os.environ.items()
           if key not in ("SKLEARN_GGN_DATA", "SKLEARN_GGN_DOWNLOAD",
                          "SKLEARN_GGN_FULL")}
    env.update(MPLBACKEND="Agg", SKLEARN_GGN_QUICK="1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")  # small fits, shared CI cores
    cmd = [sys.executable, "-c", _OFFLINE_SPHINX, "-W", "--keep-going", "-b",
           "html", "-q", str(src / "docs"), str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                          env=env)
    assert proc.returncode == 0, (
        f"offline gallery build failed ({proc.returncode}):\n"
        f"{proc.stderr[-6000:]}"
    )
    examples = sorted(path.stem for path in (ROOT / "examples").glob("plot_*.py"))
    assert examples
    generated = src / "docs" / "auto_examples"
    for name in examples:
        assert (out / "auto_examples" / f"{name}.html").is_file(), name
        # executed: the captured output (warnings included) is embedded, and
        # it shows the reader no error and no warning
        output = _captured_output((generated / f"{name}.rst").read_text())
        assert output.strip(), name
        assert "Traceback" not in output, name
        assert "Warning" not in output, (name, output)
        assert list(generated.glob(f"images/sphx_glr_{name}_*.png")), name
    for name in ("plot_mnist", "plot_uci"):
        output = _captured_output((generated / f"{name}.rst").read_text())
        assert "Note: no local" in output and "stand-in" in output, name


def _captured_output(rst):
    """The example's printed output, as sphinx-gallery embeds it in its page."""
    lines = []
    for block in rst.split(".. rst-class:: sphx-glr-script-out")[1:]:
        for line in block.split("\n")[1:]:
            if line and not line[0].isspace():
                break
            lines.append(line)
    return "\n".join(lines)
