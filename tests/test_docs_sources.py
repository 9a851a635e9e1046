"""The documentation carries its own mathematics: no page and no docstring
it renders refers to an internal specification ("SPEC"). Cheap: reads the
sources, builds nothing (the warnings-as-errors build is tests/test_docs.py).
"""

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import sklearn_ggn

DOCS = Path(sklearn_ggn.__file__).resolve().parent.parent / "docs"
REFERENCE = re.compile(r"\bSPEC\b")


def _docstrings():
    """(name, docstring) of every module, class, function and method of the
    package: a superset of what the API pages render."""
    names = [sklearn_ggn.__name__] + [
        info.name for info in pkgutil.walk_packages(sklearn_ggn.__path__,
                                                    "sklearn_ggn.")
        if info.name != "sklearn_ggn.__main__"]
    for module_name in names:
        module = importlib.import_module(module_name)
        yield module_name, inspect.getdoc(module) or ""
        for name, obj in vars(module).items():
            if getattr(obj, "__module__", None) != module_name:
                continue
            if inspect.isclass(obj):
                yield f"{module_name}.{name}", inspect.getdoc(obj) or ""
                for attr, member in vars(obj).items():
                    func = getattr(member, "fget", None) or getattr(
                        member, "__func__", member)
                    if callable(func) or isinstance(member, property):
                        yield (f"{module_name}.{name}.{attr}",
                               inspect.getdoc(func) or "")
            elif inspect.isfunction(obj):
                yield f"{module_name}.{name}", inspect.getdoc(obj) or ""


@pytest.mark.skipif(not DOCS.is_dir(), reason="needs the source tree")
def test_docs_pages_do_not_refer_to_an_internal_spec():
    hits = [f"{page.name}:{number}" for page in sorted(DOCS.rglob("*.rst"))
            if "_build" not in page.parts and "generated" not in page.parts
            for number, line in enumerate(page.read_text().splitlines(), 1)
            if REFERENCE.search(line)]
    assert not hits, hits


def test_docstrings_do_not_refer_to_an_internal_spec():
    hits = [name for name, doc in _docstrings() if REFERENCE.search(doc)]
    assert not hits, hits
