"""Names a Python file uses that nothing in it defines, imports or gets from the builtins.

Such a name raises NameError when its line runs: a function renamed in its definition but not
at its call, a variable used under a name it never had. Python's own parser reads the file; a
name counts as defined when anything binds it anywhere in the file (an assignment, a parameter,
a def or class, an import, a ``global``), so code that binds a name only in another scope is
given the benefit of the doubt. A file with ``from module import *`` may get any name, and is
read as using none that it lacks.
"""

from __future__ import annotations

import ast
import builtins

#: Names every module has without defining them.
MODULE_NAMES = frozenset(
    {
        "__name__", "__file__", "__doc__", "__builtins__", "__spec__", "__loader__",
        "__package__", "__path__", "__annotations__", "__dict__", "__debug__", "__class__",
        "__cached__",
    }
)  # fmt: skip


def _bound(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        match node:
            case ast.Name(ctx=ast.Store() | ast.Del()):
                names.add(node.id)
            case ast.FunctionDef() | ast.AsyncFunctionDef() | ast.ClassDef():
                names.add(node.name)
            case ast.arg():
                names.add(node.arg)
            case ast.alias():
                names.add((node.asname or node.name).split(".")[0])
            case ast.Global() | ast.Nonlocal():
                names.update(node.names)
            case ast.ExceptHandler(name=str() as name) | ast.MatchAs(name=str() as name):
                names.add(name)
            case ast.MatchStar(name=str() as name) | ast.MatchMapping(rest=str() as name):
                names.add(name)
            case _ if type(node).__name__ in ("TypeVar", "ParamSpec", "TypeVarTuple"):
                names.add(str(getattr(node, "name", "")))  # type parameters (Python 3.12)
    return names


def unbound_names(text: str) -> dict[str, int]:
    """Each name ``text`` reads that nothing binds, with the first line that reads it.

    Empty for a text that does not parse (its form is another fact) and for one that imports
    ``*``.
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    stars = (
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
    )
    if next(stars, None) is not None:
        return {}
    known = _bound(tree) | set(dir(builtins)) | MODULE_NAMES
    unbound: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in known:
            unbound[node.id] = min(node.lineno, unbound.get(node.id, node.lineno))
    return unbound


def new_unbound_names(before: str, now: str) -> str | None:
    """Why ``now`` fails where ``before`` did not: the names it reads that nothing binds.

    Only names ``before`` did not already lack: a file that relied on names set some other way
    (``globals().update``) is not the run's doing. None when there are none.
    """
    lacking = unbound_names(before)
    new = sorted(
        (line, name) for name, line in unbound_names(now).items() if name not in lacking
    )
    if not new:
        return None
    said = ", ".join(f"{name} (line {line})" for line, name in new[:3])
    return f"does not run as Python: it uses {said}, which nothing in it defines or imports"
