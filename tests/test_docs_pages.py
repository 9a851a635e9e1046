"""The documents stay documents for users: the README a front page, the
release history in the changelog, the user docs about current behaviour,
and every kept benchmark result cited where a reader finds it. Cheap: reads
the sources, builds nothing."""

import re
from pathlib import Path

import pytest

import sklearn_ggn

ROOT = Path(sklearn_ggn.__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
CHANGELOG = ROOT / "CHANGELOG.md"
RESULTS = ROOT / "benchmarks" / "results"

pytestmark = pytest.mark.skipif(not (DOCS.is_dir() and README.is_file()),
                                reason="needs the source tree")

# A version as the text names one: 0.9.3, "version 0.1", "the 0.1 default",
# "since 0.9", a file's tag _v091 (numbers such as 0.5 or 0.95 are not).
_VERSION = re.compile(
    r"\b0\.\d+\.\d+\b"
    r"|\bversions? 0\.\d+\b"
    r"|\b(?:since|until|before|in) 0\.\d+\b(?![-.×%\d])"
    r"|\b0\.\d+(?:'s)? (?:default|defaults|rule|behaviour|panel)\b"
    r"|_v0\d+")
_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{3,}\s*$")


def _user_docs():
    return [README] + sorted(p for p in DOCS.glob("*.rst"))


def test_readme_is_a_front_page():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 350
    assert not re.search(r"^#+ .*what is new", text, re.I | re.M)


def test_changelog_lists_the_current_release():
    text = CHANGELOG.read_text(encoding="utf-8")
    releases = re.findall(r"^## (\d+\.\d+\.\d+)\b", text, re.M)
    assert releases[0] == sklearn_ggn.__version__
    assert len(releases) == len(set(releases))


def test_no_section_of_the_user_docs_is_titled_by_a_version():
    titles = []
    for page in _user_docs():
        lines = page.read_text(encoding="utf-8").splitlines()
        if page.suffix == ".md":
            titles += [(page.name, line) for line in lines if line.startswith("#")]
        else:
            titles += [(page.name, lines[i - 1]) for i in range(1, len(lines))
                       if _UNDERLINE.match(lines[i]) and lines[i - 1].strip()]
    assert not [t for t in titles if re.search(r"\b0\.\d+|\bv0\d+", t[1])], titles


def test_user_docs_seldom_name_a_version():
    hits = [(page.name, match.group()) for page in _user_docs()
            for match in _VERSION.finditer(page.read_text(encoding="utf-8"))]
    assert len(hits) <= 40, hits


def test_every_kept_result_is_cited_by_name():
    citing = [README] + sorted(DOCS.glob("*.rst")) + sorted(
        (ROOT / "examples").glob("*.py")) + sorted(
        (ROOT / "benchmarks").glob("*.py")) + [ROOT / "benchmarks" / "README.md"]
    text = "\n".join(p.read_text(encoding="utf-8") for p in citing if p.is_file())
    files = sorted(p.name for p in RESULTS.iterdir() if p.is_file())
    assert len(files) <= 60
    assert not [name for name in files if name not in text]
