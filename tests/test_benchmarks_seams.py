"""The benchmarks reach the package through public or documented seams only.

``benchmarks/`` may use the estimators' public API and the public names of
``sklearn_ggn``, ``sklearn_ggn.engine``, ``sklearn_ggn.datasets`` and
``sklearn_ggn.diagnostics`` (timers may wrap the public methods of
``sklearn_ggn.engine``'s classes: the profiling seam that module documents).
A private module (``sklearn_ggn._solver``, ``sklearn_ggn.engine._problem``),
a private name imported from the package, a private attribute of one of
its objects (``est._network``, ``getattr(est, "_rng")``) or of any other
object not the benchmark's own fails here, in code, docstrings and in the
Python code a benchmark runs in a subprocess. The benchmarks' own private
helpers (``from ._common import ...``, ``self._stack`` in their own
classes) are allowed.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
PACKAGE = ROOT / "sklearn_ggn"
PUBLIC_MODULES = {"sklearn_ggn", "sklearn_ggn.engine", "sklearn_ggn.datasets",
                  "sklearn_ggn.diagnostics"}

# sklearn_ggn.<anything>._private, in code or text (dunders such as
# sklearn_ggn.__version__ are fine).
PRIVATE_PATH = re.compile(r"\bsklearn_ggn(?:\.[A-Za-z]\w*)*\._(?!_)\w*")


def _private(name):
    return name.startswith("_") and not name.startswith("__")


def _package_private_names():
    """Private names the package defines: functions, classes, module
    constants, attributes assigned on objects, keywords of ``dict``/
    ``update`` calls and strings such as ``hasattr(self, "_rng")``."""
    names = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                found = [node.name]
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                found = [node.attr]
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                found = [node.id]
            elif isinstance(node, ast.keyword) and node.arg:
                found = [node.arg]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                found = [node.value] if re.fullmatch(r"_\w+", node.value) else []
            else:
                found = []
            names.update(n for n in found if _private(n) and n != "_")
    return names


def _own_private_attributes(tree):
    """Private attributes the benchmarks' own classes define or assign."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            names.update(item.name for item in node.body
                         if isinstance(item, ast.FunctionDef) and _private(item.name))
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.value, ast.Name) and node.value.id == "self":
            names.add(node.attr)
    return {n for n in names if _private(n)}


def _embedded_code(tree):
    """String constants that are Python programs (run in a subprocess)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and "\n" in node.value and "import " in node.value:
            try:
                ast.parse(node.value)
            except SyntaxError:
                continue
            yield node.lineno, node.value


def violations(source, package_private, allowed_attributes=None, text=True):
    """``(line, message)`` of every reach past the public seams in ``source``.

    ``allowed_attributes`` are the private attributes the benchmarks' own
    classes define; they may be used on ``self`` only. ``text=False`` skips
    the textual search (done once on the enclosing source of embedded code).
    """
    tree = ast.parse(source)
    own = (_own_private_attributes(tree) if allowed_attributes is None
           else allowed_attributes)
    found = []
    for lineno, line in enumerate(source.splitlines() if text else [], 1):
        for match in PRIVATE_PATH.finditer(line):
            found.append((lineno, f"private module or name {match.group()}"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "sklearn_ggn" \
                        and alias.name not in PUBLIC_MODULES:
                    found.append((node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 \
                and (node.module or "").split(".")[0] == "sklearn_ggn":
            if node.module not in PUBLIC_MODULES:
                found.append((node.lineno, f"from {node.module} import"))
            for alias in node.names:
                if _private(alias.name):
                    found.append((node.lineno,
                                  f"from {node.module} import {alias.name}"))
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            on_self = isinstance(node.value, ast.Name) and node.value.id == "self"
            if not on_self or node.attr not in own or node.attr in package_private:
                found.append((node.lineno,
                              f"private attribute {ast.unparse(node)}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value in package_private:
            found.append((node.lineno, f"private name {node.value!r} as a string"))
    for lineno, program in _embedded_code(tree):
        found.extend((lineno + line - 1, f"{message} (in embedded code)")
                     for line, message in violations(program, package_private,
                                                     set(), text=False))
    return found


@pytest.fixture(scope="module")
def package_private():
    return _package_private_names()


def test_benchmarks_use_public_seams_only(package_private):
    if not BENCHMARKS.is_dir():
        pytest.skip("the benchmarks are not part of this installation")
    sources = sorted(BENCHMARKS.glob("*.py"))
    assert sources
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in sources}
    own = set().union(*(_own_private_attributes(t) for t in trees.values()))
    problems = [f"{path.relative_to(ROOT)}:{line}: {message}"
                for path in sources
                for line, message in violations(path.read_text(encoding="utf-8"),
                                                 package_private, own)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("snippet", [
    "import sklearn_ggn._solver as solver",
    "from sklearn_ggn._losses import SquaredError",
    "from sklearn_ggn.engine._problem import Problem",
    "from sklearn_ggn.engine import _finite",
    "from sklearn_ggn import _base",
    "net = est._network(3, 1)",
    "loss = est._loss_object()",
    "state = getattr(est, '_solver_state')",
    "lin._W = None",
    "recorder._stack.append(1)",
    'CHILD = """\nimport sklearn_ggn\nfrom sklearn_ggn import _kernels\n"""',
    '"""Time of ``sklearn_ggn._solver.ggn_direction``."""',
])
def test_the_rule_catches(snippet, package_private):
    assert violations(snippet, package_private), snippet


@pytest.mark.parametrize("snippet", [
    "from ._common import StepProblem, md_table",
    "from sklearn_ggn.engine import Problem, Linearization, LOSSES",
    "from sklearn_ggn import GGNScoreRegressor",
    "import sklearn_ggn\nversion = sklearn_ggn.__version__",
    "est.fit(X, y); w = est.hidden_weights_; h = est.history_['objective']",
    "class Recorder:\n    def __init__(self):\n        self._stack = []\n"
    "    def push(self, x):\n        self._stack.append(x)",
])
def test_the_rule_allows(snippet, package_private):
    assert not violations(snippet, package_private), snippet


def test_tail_benchmark_reproduces_the_watch():
    """benchmarks/tail.py rebuilds the watch's split and τ: its fit's first
    15 epochs are the default fit's watch (the same held-out risks)."""
    import warnings

    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from benchmarks.tail import curves
    from sklearn_ggn import GGNScoreClassifier

    X, y = load_digits(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3,
                                              random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cur = curves("digits", 0, (X_tr, y_tr, X_te, y_te))
        model = make_pipeline(StandardScaler(),
                              GGNScoreClassifier(random_state=0)).fit(X_tr, y_tr)
    watch = model[-1].overfitting_watch_
    assert cur["n_val"] == watch["validation_rows"]
    np.testing.assert_allclose(cur["val_risk"][:watch["epochs"]],
                               watch["validation_loss_curve"], rtol=1e-10)


def test_tail_benchmark_replays_the_regressors_watch():
    """benchmarks/tail.py's replay of the watch on its curves ends where the
    default fit's own watch ends, also past 15 epochs (a regressor's)."""
    import warnings

    import numpy as np
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from benchmarks.tail import curves, replay_watch
    from sklearn_ggn import GGNScoreRegressor

    # one-hot columns and a noisy additive target (as tests/test_watch.py)
    rng = np.random.RandomState(1)
    codes = rng.randint(10, size=(2200, 8))
    X = np.zeros((2200, 80))
    X[np.arange(2200)[:, None], codes + 10 * np.arange(8)] = 1.0
    z = rng.normal(size=(8, 10))[np.arange(8), codes].sum(axis=1)
    y = z + 0.3 * z ** 2 / 8 + 0.35 * rng.normal(size=2200)
    X_tr, y_tr, X_te, y_te = X[:1500], y[:1500], X[1500:], y[1500:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cur = curves("onehot_regression", 1, (X_tr, y_tr, X_te, y_te))
        # (the benchmark standardizes y as the panel's target transform)
        model = make_pipeline(StandardScaler(), GGNScoreRegressor(random_state=1))
        model.fit(X_tr, (y_tr - y_tr.mean()) / y_tr.std())
    watch = model[-1].overfitting_watch_
    end, how, best = replay_watch(cur, watch["rule"])
    assert (end, how == "refit", best) == (watch["epochs"], watch["overfitting"],
                                           watch["best_epoch"])
    assert end > 15
