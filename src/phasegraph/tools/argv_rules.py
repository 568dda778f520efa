"""The argument checks: the second line behind the sandbox (SPEC section 5).

Each default program's options are read the way the program itself reads them (GNU
``getopt_long``: a long option may be any unique prefix of its name, short options may be
glued together and to their value, ``--`` ends the options, options may follow operands), and
the rules are closed: an option the table does not know is refused, not let through. What is
refused: every option that writes a file, runs a program, reads a list of paths from a file,
follows symlinks out of the tree or waits for ever. Every value that names a file, and every
operand that does, must resolve inside the workspace (symlinks included) and be a regular file
or a directory. Programs without a table (a caller's own, such as ``pytest``) get the checks
that need no table: paths that leave the workspace or point into ``.git/`` and ``.phasegraph/``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from phasegraph.tools.argv_specs import (
    FIND_NO_ARG,
    FIND_ONE_ARG,
    FIND_PATH_ARG,
    FIND_REFUSED,
    NEWER_XY,
    RAW_ARGUMENTS,
    SPECS,
    WRITES,
    Spec,
)
from phasegraph.tools.tree import PROTECTED_DIRS
from phasegraph.tools.workspace import Workspace, WorkspaceError


def confined_by_checks(program: str) -> bool:
    """Whether the checks know every option of ``program``, so that it writes no file.

    Such a program (a default one, with its table) writes only where a redirection sends its
    output; any other may write anywhere it can reach.
    """
    return program == "find" or program in SPECS


def check_arguments(program: str, args: Sequence[str], workspace: Workspace) -> None:
    """Raise WorkspaceError for the first argument of ``program`` the checks refuse."""
    if program == "find":
        _check_find(args, workspace)
    elif program in RAW_ARGUMENTS:
        return
    elif program in SPECS:
        _check_spec(program, SPECS[program], args, workspace)
    else:
        _check_unknown(args, workspace)


def _check_spec(program: str, spec: Spec, args: Sequence[str], workspace: Workspace) -> None:
    operands: list[str] = []
    patterns_given = False
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            operands.extend(args[index:])
            break
        if arg == "-" or not arg.startswith("-"):
            operands.append(arg)
            continue
        for option, value, took_next in _options(program, spec, arg, args[index:]):
            index += took_next
            if option in spec.refused:
                raise WorkspaceError(f"{program} {option} is not allowed: {spec.refused[option]}")
            if option in {"-e", "-f", "--regexp", "--file"} and spec.operands == "grep":
                patterns_given = True
            if value is not None and option in spec.paths:
                read_path(value, workspace, f"{program} {option}")
            if value is not None and option in spec.dates:
                _check_time_zone(value, f"{program} {option}")
            if value is not None and option in spec.operand_options:
                operands.append(value)
    _check_operands(program, spec, operands, patterns_given, workspace)


def _options(
    program: str, spec: Spec, arg: str, rest: Sequence[str]
) -> list[tuple[str, str | None, int]]:
    """The options in one argument as ``(option, value, arguments taken after it)``."""
    if arg.startswith("--"):
        name, eq, value = arg[2:].partition("=")
        full = _long_name(program, spec, name)
        kind = spec.long[full]
        if kind == "" and eq:
            raise WorkspaceError(f"{program} --{full} takes no value")
        if kind == "=" and not eq:
            if not rest:
                raise WorkspaceError(f"{program} --{full} needs a value")
            return [(f"--{full}", rest[0], 1)]
        return [(f"--{full}", value if eq else None, 0)]
    counted = re.fullmatch(r"-\d+([a-zA-Z]*)", arg) if spec.digits else None
    if counted:  # "-5", or the obsolete "-5c" (head, tail): a count and its unit or flags
        for letter in counted.group(1):
            if (why := spec.refused.get(f"-{letter}")) is not None:
                raise WorkspaceError(f"{program} -{letter} is not allowed: {why}")
            if letter not in spec.flags + "bcklmn":
                raise WorkspaceError(f"{program} {arg} is not an option the argument checks know")
        return [("-NUM", None, 0)]
    found: list[tuple[str, str | None, int]] = []
    for position, letter in enumerate(arg[1:], start=1):
        option = f"-{letter}"
        glued = arg[position + 1 :]
        if letter in spec.valued:
            if glued:
                return [*found, (option, glued, 0)]
            if not rest:
                raise WorkspaceError(f"{program} {option} needs a value")
            return [*found, (option, rest[0], 1)]
        if letter in spec.optional:
            return [*found, (option, glued or None, 0)]
        if letter not in spec.flags:
            raise WorkspaceError(
                f"{program} {option} is not an option the argument checks know; it is refused"
            )
        found.append((option, None, 0))
    return found


def _long_name(program: str, spec: Spec, name: str) -> str:
    """The long option ``--name`` stands for, read as getopt_long reads an abbreviation."""
    if name in spec.long:
        return name
    matches = [full for full in spec.long if full.startswith(name)] if name else []
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise WorkspaceError(
            f"{program} --{name} is not an option the argument checks know; it is refused"
        )
    raise WorkspaceError(f"{program} --{name} is ambiguous ({', '.join(matches)}); refused")


def _check_operands(
    program: str, spec: Spec, operands: list[str], patterns_given: bool, workspace: Workspace
) -> None:
    if spec.operands == "none":
        return
    if spec.operands == "date":
        for operand in operands:
            if not operand.startswith("+"):
                raise WorkspaceError(f"date {operand!r} is not allowed: it sets the clock")
        return
    if spec.operands == "grep" and not patterns_given and operands:
        operands = operands[1:]  # the pattern
    if spec.operands == "files":
        for operand in operands:
            read_path(operand, workspace, program)
            if os.path.isdir(workspace.real_root / workspace.relative(operand, exact=True)):
                raise WorkspaceError(
                    f"{program} {operand!r} is a folder: {program} reads what the symlinks in a "
                    "folder point to; give it files"
                )
        return
    if spec.operands == "uniq" and len(operands) > 1:
        raise WorkspaceError(f"uniq's second operand {operands[1]!r} is not allowed: {WRITES}")
    for operand in operands:
        if operand != "-":
            read_path(operand, workspace, program)


def _check_find(args: Sequence[str], workspace: Workspace) -> None:
    index = 0
    while index < len(args) and args[index] in {"-P", "-D", "-O"} | FIND_REFUSED.keys():
        option = args[index]
        if option in FIND_REFUSED:
            raise WorkspaceError(f"find {option} is not allowed: {FIND_REFUSED[option]}")
        index += 1 if option == "-P" else 2
    while index < len(args) and not _find_expression_start(args[index]):
        read_path(args[index], workspace, "find")
        index += 1
    while index < len(args):
        word = args[index]
        index += 1
        if word in FIND_REFUSED:
            raise WorkspaceError(f"find {word} is not allowed: {FIND_REFUSED[word]}")
        if word in FIND_NO_ARG:
            continue
        if word not in FIND_ONE_ARG and not NEWER_XY.fullmatch(word):
            raise WorkspaceError(
                f"find {word} is not a predicate the argument checks know; it is refused"
            )
        if index >= len(args):
            raise WorkspaceError(f"find {word} needs a value")
        value = args[index]
        index += 1
        if word in FIND_PATH_ARG or (NEWER_XY.fullmatch(word) and not word.endswith("t")):
            read_path(value, workspace, f"find {word}")
        elif NEWER_XY.fullmatch(word):  # -newermt: a date string, whose TZ may name a file
            _check_time_zone(value, f"find {word}")


def _find_expression_start(word: str) -> bool:
    return word.startswith("-") and word != "-" or word in {"(", ")", "!", ","}


#: A time zone a date string names: ``TZ="..."`` (or unquoted), as GNU date reads it.
_TIME_ZONE = re.compile(r"""TZ=(?:"([^"]*)"|'([^']*)'|(\S*))""")


def _check_time_zone(value: str, who: str) -> None:
    """Refuse a ``TZ="..."`` in a date string that names a file outside the zone database.

    A zone is a name under the system's zone folder (``Europe/Paris``); one that starts with
    ``/`` or climbs with ``..`` (after an optional ``:``) names a file elsewhere, which date
    would open (a FIFO there blocks it): refused as a path outside the workspace is.
    """
    for found in _TIME_ZONE.finditer(value):
        zone = next(g for g in found.groups() if g is not None).removeprefix(":")
        if zone.startswith("/") or ".." in zone.split("/"):
            raise WorkspaceError(
                f"{who}: TZ={zone!r} names a file outside the zone database; name a zone "
                "such as Europe/Paris"
            )


def read_path(value: str, workspace: Workspace, who: str) -> None:
    """Refuse a path to read that leaves the workspace or is neither a file nor a folder."""
    rel = workspace.relative(value, exact=True)  # resolves symlinks; raises for one outside
    full = workspace.real_root / rel
    if os.path.lexists(full) and not (os.path.isfile(full) or os.path.isdir(full)):
        raise WorkspaceError(
            f"{who}: {value!r} is not a regular file or a folder (a FIFO or a device would "
            "wait for ever); it is refused"
        )


def _check_unknown(args: Sequence[str], workspace: Workspace) -> None:
    """A program without a table: paths out of the workspace or into its protected folders."""
    for arg in args:
        for candidate in _path_parts(arg):
            rel = workspace.relative(candidate, exact=True)
            protected = [p for p in rel.parts if p.casefold() in PROTECTED_DIRS]
            if protected:
                raise WorkspaceError(
                    f"{arg!r} names {protected[0]}/, which commands may not touch; refused"
                )


def _path_parts(arg: str) -> list[str]:
    """What of one argument could name a path: itself, a value after '=', a glued value."""
    values = [arg]
    if "=" in arg:
        values.append(arg.split("=", 1)[1])
    if re.match(r"-[A-Za-z]", arg) and not arg.startswith("--") and len(arg) > 2:
        values.append(arg[2:])
    return [v for v in values if v and not (v.startswith("-") and v is arg)]
