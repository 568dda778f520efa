"""The package's sizes and imports stay within what a reader can hold (issue 34's limits)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph.state import CompiledStateGraph

from phasegraph import ScriptedChatModel, build_graph
from phasegraph.graph.compiled import PhaseGraph

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "phasegraph"
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 400


def _modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported_at_load(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that importing ``name`` imports at once (not in a function, not for
    type checking only)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    pending: list[ast.stmt] = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and not _is_type_checking(node):
            pending.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            pending.extend(node.body + node.orelse + node.finalbody)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                target = f"{base}.{alias.name}"
                out.add(target if target in known else base)
    return {m for m in out if m in known and m != name}


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of ``graph``, or none."""
    state: dict[str, int] = {}
    trail: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        trail.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return trail[trail.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        trail.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_no_module_is_longer_than_400_lines() -> None:
    long = {
        name: n
        for name, path in _modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_no_function_is_longer_than_80_lines() -> None:
    long = {}
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{name}.{node.name}"] = lines
    assert long == {}


def test_the_modules_import_one_another_without_a_circle() -> None:
    modules = _modules()
    known = set(modules)
    graph = {name: _imported_at_load(name, path, known) for name, path in modules.items()}
    assert sum(map(len, graph.values())) > len(graph)  # the reader sees the imports
    assert _cycle(graph) == []


@pytest.mark.parametrize(
    ("graph", "circle"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
        ({"a": {"b"}, "b": set(), "c": {"b"}}, []),
    ],
)
def test_the_circle_finder_finds_a_circle_and_only_one(
    graph: dict[str, set[str]], circle: list[str]
) -> None:
    assert _cycle(graph) == circle


def test_the_import_reader_sees_relative_and_conditional_imports(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "from .b import x\n"
        "try:\n    import p.c\nexcept ImportError:\n    pass\n"
        "if TYPE_CHECKING:\n    from p import d\n"
        "def f():\n    from p import e\n",
        encoding="utf-8",
    )
    known = {"p", "p.b", "p.c", "p.d", "p.e", "p.m"}
    assert _imported_at_load("p.m", module, known) == {"p.b", "p.c"}


def test_the_readme_is_a_guide_of_at_most_300_lines_with_troubleshooting() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    assert "\n## Troubleshooting\n" in readme and "\n## Set up\n" in readme


def _private_imports(source: str) -> list[str]:
    """The imports of LangGraph's or LangChain's private modules or names in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module]
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            modules, names = [alias.name for alias in node.names], []
        else:
            continue
        for module in modules:
            if not module.split(".")[0].startswith(("langgraph", "langchain")):
                continue
            private = [part for part in module.split(".") if part.startswith("_")]
            hidden = [name for name in names if name.startswith("_")]
            if private or hidden:
                found.append(f"{module}: {', '.join(private + hidden)}")
    return found


def _found_in_modules(find: Callable[[str], list[Any]]) -> dict[str, list[Any]]:
    """What ``find`` finds in each module of the package, for the modules where it finds any."""
    return {name: found for name, path in _modules().items() if (found := find(path.read_text()))}


def test_nothing_is_imported_from_langgraphs_private_modules() -> None:
    # each LangGraph release could break such an import silently (issue 60)
    assert _found_in_modules(_private_imports) == {}
    # the reader finds what it is for
    assert _private_imports("from langgraph._internal._constants import CONFIG_KEY_RUNTIME")
    assert _private_imports("from langgraph.pregel import _loop")
    assert not _private_imports("from langgraph.runtime import get_runtime\nimport _thread")


def _class_assignments(source: str) -> list[int]:
    """The lines of ``source`` that assign an object's ``__class__``."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Attribute) and target.attr == "__class__"
    ]


def test_the_compiled_graph_is_built_by_its_constructor_not_reclassed() -> None:
    # a re-classed instance skips its class's constructor, which a LangGraph release may change
    assert _found_in_modules(_class_assignments) == {}
    assert _class_assignments("graph.__class__ = Other\n") == [1]
    graph = build_graph(model=ScriptedChatModel(script={}), builtin_tools=False)
    assert type(graph) is PhaseGraph and isinstance(graph, CompiledStateGraph)
    assert type(graph.copy()) is PhaseGraph  # LangGraph's copy keeps it, settings and all
    assert graph.copy().builtin_tools is False and graph.copy().nodes.keys() == graph.nodes.keys()
