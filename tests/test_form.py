"""The package's form, kept by the suite: short functions, modules of a
readable size, and no import circle between the package's modules."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "sklearn_ggn"
MODULES = sorted(PACKAGE.rglob("*.py"))
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 900


def _name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


@pytest.mark.parametrize("path", MODULES, ids=lambda p: _name(p))
def test_functions_and_modules_are_short(path):
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_MODULE_LINES, path.name
    long = [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in _functions(ast.parse(text))
            if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{path.name}: {', '.join(long)}"


def _imports(path, modules):
    """The package modules that ``path`` imports, at any depth of its code
    (an import inside a function still ties the two modules)."""
    name = _name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # "from . import x" names the module x when there is one
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules
                       else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            # (a module's own packages are imported before it anyway)
            if target and not (name + ".").startswith(target + "."):
                found.add(target)
    return found


def _cycle(graph):
    """One import circle of ``graph`` as a list of modules, or None."""
    state = {}

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return trail[trail.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, trail + [nxt])
                if found:
                    return found
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start, [start])
            if found:
                return found
    return None


def _package_graph():
    modules = {_name(p): p for p in MODULES}
    return {name: _imports(path, modules) for name, path in modules.items()}


def test_no_import_circle():
    graph = _package_graph()
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_the_circle_check_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycle(graph) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
