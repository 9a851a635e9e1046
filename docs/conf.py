"""Sphinx configuration of the sklearn_ggn documentation.

Build (executes the examples of the gallery)::

    sphinx-build -b html docs docs/_build/html

Quick build without running the examples (one of ``tests/test_docs.py``'s
two builds)::

    sphinx-build -W --keep-going -b html -D plot_gallery=0 docs docs/_build/html

The build needs no network. The examples read real data from the folder in
the environment variable ``SKLEARN_GGN_DATA`` and otherwise run on bundled
or generated stand-ins (``SKLEARN_GGN_DOWNLOAD=1`` lets them download);
``SKLEARN_GGN_QUICK=1`` runs each at smoke-test scale, which is how
``tests/test_docs.py`` builds the executed gallery offline, and
``SKLEARN_GGN_FULL=1`` at the paper's scale.
"""

import os
from pathlib import Path

import sklearn_ggn

HERE = Path(__file__).resolve().parent

project = "sklearn_ggn"
author = "The sklearn_ggn developers"
copyright = "The sklearn_ggn developers"  # noqa: A001
release = sklearn_ggn.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
# _paper/ holds the tables that ``python -m benchmarks.paper --full --report``
# writes for reproducing.rst, which includes them: fragments, not pages.
exclude_patterns = ["_build", "**.ipynb_checkpoints", "*.md", "_paper"]
root_doc = "index"
default_role = "literal"

# -- autodoc / autosummary / numpydoc -----------------------------------------
autosummary_generate = True
autodoc_default_options = {"members": False}
# The class template lists the methods itself; numpydoc's member tables would
# duplicate them (and pull in every inherited scikit-learn method).
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# -- sphinx-gallery -------------------------------------------------------------
# A normal build executes every examples/plot_*.py and embeds its output and
# figures; ``-D plot_gallery=0`` only renders the code (seconds instead of
# minutes), which is what the test suite does.
os.environ.setdefault("MPLBACKEND", "Agg")
sphinx_gallery_conf = {
    "examples_dirs": str(HERE.parent / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
    "within_subsection_order": "FileNameSortKey",
}

# -- HTML -------------------------------------------------------------------------
html_theme = "alabaster"
html_static_path = ["_static"]
html_title = f"sklearn_ggn {release}"
html_theme_options = {
    "description": "Regularized Gauss-Newton (GGN-SCORE) training of two-layer "
    "networks as scikit-learn estimators",
    "fixed_sidebar": True,
    "page_width": "1100px",
    "sidebar_width": "230px",
}
html_sidebars = {"**": ["about.html", "navigation.html", "searchbox.html"]}
html_show_sourcelink = False
