"""What a reader of the documentation can rely on, checked: the pages speak
of the current release only (no history, which belongs in CHANGELOG.md),
the defaults they state are the code's (``get_params()``), the pages have
the form the project keeps (a short user guide, a short README, a
deployment page with its size table, the Background part of the site), and
every Python snippet of the user pages runs.

The first checks read the sources only; the snippet test runs each user
page's ``.. code-block:: python`` blocks in order, in one namespace per
page, as a reader following the page would. A block that cannot run here
(it needs worker processes or a running scheduler) is preceded by the
comment ``.. not run by the test suite: <reason>``, and the test lists
those blocks exactly.
"""

import re
from pathlib import Path

import pytest

import sklearn_ggn
from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

ROOT = Path(sklearn_ggn.__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"

pytestmark = pytest.mark.skipif(not (DOCS.is_dir() and README.is_file()),
                                reason="needs the source tree")

USER_PAGES = ["index", "install", "getting_started", "user_guide",
              "deployment", "migrating_from_mlp", "cluster", "api"]
BACKGROUND_PAGES = ["mathematics", "defaults", "rejected", "performance",
                    "reproducing", "architecture"]

# Phrases that tell a story of earlier releases instead of the current one.
# ("used to" only where it is not the passive "is used to compute".)
HISTORY = re.compile(
    r"\bolder\b"
    r"|\b(?:defaults?|rules?|code|settings?|step) of (?:the|its) time\b"
    r"|\bbefore\b[^.;]{0,80}\bbecame\b"
    r"|(?<!\bis )(?<!\bare )(?<!\bbe )(?<!\bbeen )(?<!\bwas )(?<!\bwere )"
    r"\bused to\b"
    r"|\bin the repository's history\b|\brepository history\b"
    r"|\bgit log\b"
    r"|\bthe (?:first|previous|earlier|last) release\b"
    r"|\bno longer\b(?= (?:the|a) default)"
    r"|\bthe default then\b",
    re.I)


def _text(path):
    return path.read_text(encoding="utf-8")


def _pages(names):
    return [DOCS / f"{name}.rst" for name in names]


def _history_phrases(text):
    flat = " ".join(text.split())
    return [match.group() for match in HISTORY.finditer(flat)]


def test_every_page_belongs_to_a_part_of_the_site():
    index = _text(DOCS / "index.rst")
    parts = re.split(r"^\.\. toctree::$", index, flags=re.M)[1:]
    assert len(parts) == 2
    using, background = (re.findall(r"^   (\S+)$", part, re.M) for part in parts)
    assert ":caption: Using the package" in parts[0]
    assert ":caption: Background" in parts[1]
    assert set(USER_PAGES) - {"index"} <= set(using)
    assert background == BACKGROUND_PAGES
    rst = {path.stem for path in DOCS.glob("*.rst")}
    assert rst == set(USER_PAGES) | set(BACKGROUND_PAGES)


@pytest.mark.parametrize("page", USER_PAGES + BACKGROUND_PAGES)
def test_pages_tell_no_history(page):
    assert not _history_phrases(_text(DOCS / f"{page}.rst"))


def test_readme_and_examples_tell_no_history():
    for path in [README, ROOT / "examples" / "README.rst",
                 *sorted((ROOT / "examples").glob("plot_*.py"))]:
        assert not _history_phrases(_text(path)), path.name


@pytest.mark.parametrize("phrase", [
    "the defaults of the time", "the older rules", "in the repository's "
    "history", "before float32 steps became the default", "the solver used to"
    " stop", "find them in git log", "measured on the first release"])
def test_the_history_check_finds_history(phrase):
    assert _history_phrases(f"Some text, {phrase}, and more.")


@pytest.mark.parametrize("phrase", [
    "the folder named by", "the mean of the time ratios", "a holder",
    "the map is used to scale", "which are used to compute"])
def test_the_history_check_leaves_plain_text(phrase):
    assert not _history_phrases(f"Some text, {phrase}, and more.")


# -- the defaults the pages state ------------------------------------------

def _defaults():
    """{parameter: set of default values} over both estimators."""
    found = {}
    for cls in (GGNScoreClassifier, GGNScoreRegressor):
        for name, value in cls().get_params().items():
            found.setdefault(name, set()).add(repr(value))
    return found


def _parameter_table():
    """(parameter, default cell) rows of the user guide's parameter table."""
    text = _text(DOCS / "user_guide.rst")
    start = text.index(".. _parameters:")
    table = text[start:text.index("\n\n**", start)]
    rows = re.findall(r"^   \* - ``(\w+)``\n     - (.+)$", table, re.M)
    assert len(rows) >= 10
    return rows


def test_the_parameter_table_states_the_code_defaults():
    defaults = _defaults()
    for name, cell in _parameter_table():
        stated = {repr(eval(value)) for value in re.findall(r"``([^`]+)``", cell)}
        if cell.strip() == "None":
            stated = {"None"}
        assert stated and stated <= defaults[name], (name, cell, defaults[name])
        assert len(stated) == len(defaults[name]), (name, cell)


# "``name=value``" where the text says it is the default.
_STATED = re.compile(
    r"(?:\bdefaults? (?:is |are )?|\bthe default |\bdefault, )"
    r"``(\w+)=([^`]+)``"
    r"|``(\w+)=([^`]+)``,? \((?:the|its|their) defaults?\b")


def _stated_defaults(text):
    flat = " ".join(text.split())
    for match in _STATED.finditer(flat):
        name = match.group(1) or match.group(3)
        value = match.group(2) or match.group(4)
        yield name, value


@pytest.mark.parametrize("page", USER_PAGES + ["defaults"])
def test_stated_defaults_are_the_code_defaults(page):
    defaults = _defaults()
    text = _text(DOCS / f"{page}.rst")
    wrong = [(name, value) for name, value in _stated_defaults(text)
             if name in defaults and repr(eval(value)) not in defaults[name]]
    assert not wrong, wrong


def test_readme_states_the_code_defaults():
    defaults = _defaults()
    text = _text(README).replace("`", "``")
    wrong = [(name, value) for name, value in _stated_defaults(text)
             if name in defaults and repr(eval(value)) not in defaults[name]]
    assert not wrong, wrong


def test_the_defaults_check_finds_a_wrong_default():
    text = ("The default ``damping=\"auto\"`` is described here, and "
            "``batch_size=25`` (the default) there.")
    defaults = _defaults()
    wrong = [(name, value) for name, value in _stated_defaults(text)
             if repr(eval(value)) not in defaults[name]]
    assert wrong == [("damping", '"auto"'), ("batch_size", "25")]


# -- the form of the pages ------------------------------------------------------

def test_user_guide_is_a_guide():
    text = _text(DOCS / "user_guide.rst")
    assert len(text.splitlines()) <= 800
    assert ".. math::" not in text  # the derivations are in mathematics
    assert "When to use them, and when not" in text


def test_readme_is_short():
    assert len(_text(README).splitlines()) <= 200


def test_deployment_page_has_the_measured_sizes():
    text = _text(DOCS / "deployment.rst")
    results = _text(ROOT / "benchmarks" / "results" / "model_files.md")
    assert "benchmarks/results/model_files.md" in text
    date = re.search(r"\| date \(UTC\) \| (\d{4}-\d{2}-\d{2})", results).group(1)
    assert date in text
    for row in re.findall(r"^\| (.+) \|$", results, re.M):
        cells = [cell.strip() for cell in row.split("|")]
        if cells[0].startswith(("digits", "friedman1", "diabetes")):
            # default, store_posterior=True and uncertainty=None sizes
            for size in cells[3:6]:
                assert f"     - {size}\n" in text, (cells[0], size)


def test_store_posterior_is_documented_once_as_the_code_says():
    # the one true answer on training rows in files, and the error's wording
    text = " ".join(_text(DOCS / "deployment.rst").split())
    assert "neither the Laplace posterior nor the training rows" in text
    assert "names ``set_params(store_posterior=True)``" in text
    assert GGNScoreRegressor().get_params()["store_posterior"] is False


# -- the snippets run ----------------------------------------------------------

_BLOCK = re.compile(
    r"(?:^\.\. not run by the test suite: (?P<reason>.+)\n\n)?"
    r"^\.\. code-block:: python\n\n(?P<code>(?:(?:   .*)?\n)+)", re.M)


def _snippets(page):
    """(code, reason it is not run or None) of each Python block."""
    text = _text(DOCS / f"{page}.rst")
    for match in _BLOCK.finditer(text):
        code = "\n".join(line[3:] for line in match["code"].splitlines())
        yield code, match["reason"]


SNIPPET_PAGES = ["index", "getting_started", "user_guide", "deployment",
                 "migrating_from_mlp", "cluster"]


def test_only_the_listed_snippets_are_not_run():
    skipped = {page: [reason for _, reason in _snippets(page) if reason]
               for page in USER_PAGES}
    assert {page: len(r) for page, r in skipped.items() if r} == {"cluster": 3}
    assert all(_snippets(page) for page in SNIPPET_PAGES)


@pytest.mark.parametrize("page", SNIPPET_PAGES)
def test_snippets_run(page, monkeypatch, tmp_path):
    pytest.importorskip("skl2onnx")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("skops")
    pytest.importorskip("dask_ml")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"docs_{page}"}
    ran = 0
    for number, (code, reason) in enumerate(_snippets(page), 1):
        if reason:
            compile(code, f"{page}.rst block {number}", "exec")  # still valid
            continue
        exec(compile(code, f"{page}.rst block {number}", "exec"), namespace)
        ran += 1
    assert ran
