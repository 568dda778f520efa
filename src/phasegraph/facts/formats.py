"""Whether a file reads as the format its name gives it: JSON, INI, TOML, YAML or Python.

A run that leaves such a file unreadable to its own kind of reader has broken it, whatever the
request asked for it: a setting added above a file's first section, a JSON object left
unclosed. Code can tell by the file's suffix and the format's own parser, as lenient as the
readers of the format are (an INI key given twice, or without a value, is read).
"""

from __future__ import annotations

import ast
import configparser
import json
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePosixPath

import yaml  # type: ignore[import-untyped]

from phasegraph.context import Context
from phasegraph.facts.files import file_text
from phasegraph.facts.python_names import new_unbound_names
from phasegraph.state.result import clip
from phasegraph.tools.workspace import Workspace, workspace_path

#: The most of a parser's error a reason quotes.
ERROR_CHARS = 160


def _ini(text: str) -> None:
    # as lenient as INI readers commonly are: a key given twice (php.ini's extension lines)
    # or without a value (my.ini's skip-networking) is read
    parser = configparser.ConfigParser(interpolation=None, strict=False, allow_no_value=True)
    parser.read_string(text)


def _python(text: str) -> None:
    # compiled, not run: a syntax error is the file's form, whatever the code does
    compile(text, "<file>", "exec", dont_inherit=True)


#: The formats known by a file's suffix: their name, and a reader that raises on a bad text.
#: (Not .cfg: many such files are not INI, haproxy's and grub's among them.) YAML is read by
#: PyYAML, which langchain-core requires.
FORMATS: dict[str, tuple[str, Callable[[str], object]]] = {
    ".json": ("JSON", json.loads),
    ".ini": ("INI", _ini),
    ".toml": ("TOML", tomllib.loads),
    ".yaml": ("YAML", yaml.safe_load),
    ".yml": ("YAML", yaml.safe_load),
    ".py": ("Python", _python),
}


def format_error(path: str, text: str) -> str | None:
    """Why ``text`` does not read as the format ``path``'s suffix names, in one line.

    None when it reads, when the suffix names no format code knows, and when the parser fails
    otherwise than on the text's form (a nesting too deep for it, say). A leading byte-order
    mark is read past, as readers of these formats commonly do.
    """
    known = FORMATS.get(PurePosixPath(path).suffix.lower())
    if known is None:
        return None
    name, read = known
    try:
        read(text.removeprefix("\ufeff"))
    # JSON's and TOML's errors are ValueErrors; Python's a SyntaxError, YAML's a YAMLError
    except (ValueError, configparser.Error, SyntaxError, yaml.YAMLError) as exc:
        return f"does not read as {name}: {clip(_in_words(exc), ERROR_CHARS)}"
    except Exception:  # RecursionError on deep nesting: not known to be broken
        pass
    return None


def _in_words(exc: Exception) -> str:
    """A parser's error in one line; configparser's name a string source and span lines."""
    match exc:
        case configparser.MissingSectionHeaderError():
            return f"line {exc.lineno} ({exc.line.strip()!r}) comes before any [section] header"
        case configparser.ParsingError() if exc.errors:
            lineno, shown = exc.errors[0]  # the line as its repr
            line = str(ast.literal_eval(shown) if isinstance(shown, str) else shown).strip()
            return f"line {lineno} ({line!r}) is neither a [section] header nor a setting"
    return str(exc)


def broken_formats(
    written: Sequence[str],
    context: Context,
    originals: Mapping[str, str],
    new_files: Sequence[str],
) -> dict[str, str]:
    """Files the run wrote that no longer read as their format, each with why; by workspace path.

    Only files code knows read before, or were not there: a file the request names that read
    as its format when the run began (``originals``: the first few it names, each of
    `files.ORIGINAL_BYTES` at most), or one it names that the run made (``new_files``). A
    file that was already unreadable is not the run's doing, and one the request does not name
    may have been either. A file over `files.COPY_COMPARED_BYTES` now is not read. A Python
    file that parses but now uses a name nothing in it binds is broken too
    (`python_names.new_unbound_names`): it fails when that line runs.
    """
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    made = {workspace_path(space, name) for name in new_files}
    broken: dict[str, str] = {}
    for path in written:
        rel = workspace_path(space, path)
        if rel is None or (rel not in made and rel not in originals):
            continue
        if rel in originals and format_error(rel, originals[rel]) is not None:
            continue
        now = file_text(space, rel)
        error = format_error(rel, now) if now is not None else None
        if error is None and now is not None and PurePosixPath(rel).suffix.lower() == ".py":
            error = new_unbound_names(originals.get(rel, ""), now)
        if error:
            broken[rel] = error
    return broken
