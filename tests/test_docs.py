"""The Sphinx documentation builds without a single warning.

Needs the ``docs`` extra (``pip install -e ".[docs]"``); skipped otherwise.
The examples are rendered but not executed (``-D plot_gallery=0``), which
keeps the build to well under a minute. The sources are copied to a
temporary directory first: autosummary and sphinx-gallery write generated
``.rst`` files next to the sources, and a test must not touch the checkout.
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


def test_docs_build_without_warnings(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "docs", src / "docs",
                    ignore=shutil.ignore_patterns(*_GENERATED))
    shutil.copytree(ROOT / "examples", src / "examples",
                    ignore=shutil.ignore_patterns("__pycache__", "*.png"))
    out = tmp_path / "html"
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html",
           "-D", "plot_gallery=0", "-q", str(src / "docs"), str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    assert proc.returncode == 0, (
        f"sphinx-build failed ({proc.returncode}):\n{proc.stderr[-6000:]}"
    )
    for page in ("index", "user_guide", "api", "reproducing", "performance",
                 "defaults", "quickstart", "install", "auto_examples/index",
                 "generated/sklearn_ggn.GGNScoreClassifier"):
        assert (out / f"{page}.html").is_file(), page
    reproducing = (src / "docs" / "reproducing.rst").read_text()
    assert "TODO" not in reproducing  # every section has its measured numbers
