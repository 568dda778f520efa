"""A command line as a shell user writes it, read by a small closed grammar (SPEC section 5).

    line     := stage ( "|" stage )*
    stage    := ( word | redirect )+
    redirect := "<" word | ">" word | ">>" word | "2>" word | "2>>" word | "2>&1"

A ``$(...)`` (unquoted or in double quotes) is a command line of its own, run first, whose
output, its last newlines dropped, stands in its place (`Word.commands`).

Words are split at blanks and joined from unquoted text, 'single quotes' (taken as they are),
"double quotes" (where a backslash escapes a quote, a backslash and a dollar sign) and
backslash escapes. A word with an unquoted ``*``, ``?`` or ``[`` is a pattern, expanded against
the workspace's files (`Word.pattern`). Nothing else of a shell is read: no variables, no
backticks, no ``;``, ``&&``, ``||``, ``&``, subshells or here-documents. Such a line is
refused with the reason, never handed to a shell, so what runs is exactly the programs and
files the line names.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import PurePosixPath

#: What the grammar refuses, by what starts it, and why.
_REFUSED = {
    ";": "';' runs commands one after another; plan them as separate tasks",
    "&": "'&' and '&&' run commands in the background or one after another; plan separate tasks",
    "(": "subshells are not run; write the pipeline itself",
    ")": "subshells are not run; write the pipeline itself",
    "`": "command substitution is not run; run the inner command as its own task",
    "{": None,  # only '{' alone, a shell group, is refused (a word may hold braces)
}
_BLANKS = " \t\n"
_OPERATORS = "|<>;&()`"
_GLOB = "*?["


#: What stands for a ``$(...)`` part in a word's text until it is run (a NUL: no line holds one).
SUBSTITUTED = "\x00"


class CommandLineError(ValueError):
    """A command line the grammar refuses; the message says why and what to write instead."""


@dataclass(frozen=True)
class Word:
    """One word of a stage: its text, and whether an unquoted glob character makes it a pattern.

    ``commands``: the command lines of its ``$(...)`` parts, in order; each stands in ``text``
    as `SUBSTITUTED` followed by its index, and is replaced by what it prints.
    """

    text: str
    pattern: bool = False
    commands: tuple[str, ...] = ()


@dataclass
class Stage:
    """One program of a pipeline: its words and its redirections."""

    words: list[Word] = field(default_factory=list)
    stdin: str | None = None
    stdout: str | None = None
    append: bool = False
    stderr: str | None = None
    """A file for the program's error output, ``"&1"`` for its standard output."""
    stderr_append: bool = False


def parse(line: str) -> list[Stage]:
    """The stages of ``line``; `CommandLineError` for what the grammar does not take."""
    if not line.strip():
        raise CommandLineError("the command line is empty")
    if "\x00" in line:
        raise CommandLineError("a command line may not contain a NUL byte")
    stages = [Stage()]
    tokens = _tokens(line)
    index = 0
    while index < len(tokens):
        kind, value = tokens[index]
        index += 1
        stage = stages[-1]
        if kind == "word":
            stage.words.append(value)
            continue
        if kind == "|":
            if not stage.words:
                raise CommandLineError("'|' needs a command on each side")
            stages.append(Stage())
            continue
        if kind == "2>&1":
            stage.stderr = "&1"
            continue
        if index >= len(tokens) or tokens[index][0] != "word":
            raise CommandLineError(f"{kind!r} needs a file name after it")
        target = tokens[index][1]
        index += 1
        if target.pattern:
            raise CommandLineError(f"{kind} {target.text!r}: a redirection names one file")
        _redirect(stage, kind, target.text)
    if not stages[-1].words:
        raise CommandLineError("the command line ends in '|' or names no program")
    for position, stage in enumerate(stages):
        if stage.stdin is not None and position > 0:
            raise CommandLineError("'<' may only give the first command of a pipeline its input")
        if stage.stdout is not None and position < len(stages) - 1:
            raise CommandLineError("'>' may only take the last command's output")
    return stages


def _redirect(stage: Stage, kind: str, target: str) -> None:
    if kind == "<":
        stage.stdin = target
    elif kind in (">", ">>"):
        stage.stdout, stage.append = target, kind == ">>"
    else:
        stage.stderr, stage.stderr_append = target, kind == "2>>"


def _tokens(line: str) -> list[tuple[str, Word]]:
    """The line's words and operators, in order (an operator's Word is empty)."""
    tokens: list[tuple[str, Word]] = []
    index = 0
    while index < len(line):
        char = line[index]
        if char in _BLANKS:
            index += 1
            continue
        operator = _operator(line, index)
        if operator:
            tokens.append((operator, Word("")))
            index += len(operator)
            continue
        word, index = _word(line, index)
        tokens.append(("word", word))
    return tokens


def _operator(line: str, index: int) -> str:
    """The operator that starts at ``index`` ("" for none), or `CommandLineError` if refused."""
    rest = line[index:]
    for operator in ("2>&1", "2>>", "2>", ">>", ">", "<", "|"):
        if rest.startswith(operator) and (operator[0] != "2" or _word_starts(line, index)):
            if operator in ("|", "<") and rest[1:2] in ("|", "<"):
                raise CommandLineError(
                    "'||' and '<<' are not read: plan separate tasks, or write the input to a file"
                )
            if rest.startswith(">&") or rest.startswith(">|") or rest.startswith("<>"):
                raise CommandLineError(f"{rest[:2]!r} is not a redirection this grammar reads")
            return operator
    char = line[index]
    if char in _REFUSED and (char != "{" or line[index + 1 : index + 2] in ("", " ")):
        raise CommandLineError(_REFUSED[char] or "'{ ...; }' groups are not run")
    return ""


def _word_starts(line: str, index: int) -> bool:
    """Whether ``index`` starts a word (a ``2>`` there is a redirection, not part of a word)."""
    return index == 0 or line[index - 1] in _BLANKS + _OPERATORS


def _word(line: str, index: int) -> tuple[Word, int]:
    """The word that starts at ``index`` and where it ends."""
    text: list[str] = []
    pattern = False
    commands: list[str] = []
    while index < len(line):
        char = line[index]
        if char in _BLANKS or char in "|<>;&()`":
            if char in ";&()`":
                _operator(line, index)  # raises with the reason
            break
        if line.startswith("$(", index):
            command, index = _substitution(line, index)
            text.append(f"{SUBSTITUTED}{len(commands)}")
            commands.append(command)
            continue
        if char == "$" and _expands(line, index):
            raise CommandLineError(
                "'$' (a variable or a substitution) is not expanded; write the value itself, "
                "or quote it with single quotes"
            )
        if char == "'":
            end = line.find("'", index + 1)
            if end == -1:
                raise CommandLineError("a single quote is not closed")
            text.append(line[index + 1 : end])
            index = end + 1
            continue
        if char == '"':
            part, index = _double_quoted(line, index + 1, commands)
            text.append(part)
            continue
        if char == "\\":
            if index + 1 < len(line) and line[index + 1] != "\n":
                text.append(line[index + 1])
            index += 2
            continue
        pattern = pattern or char in _GLOB
        text.append(char)
        index += 1
    return Word("".join(text), pattern, tuple(commands)), index


def _substitution(line: str, index: int) -> tuple[str, int]:
    """The command line of the ``$(...)`` at ``index``, and where it ends.

    Quotes inside it are kept for its own reading; one inside another is refused.
    """
    end, quote = index + 2, ""
    while end < len(line):
        char = line[end]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif line.startswith("$(", end):
            raise CommandLineError("a $(...) inside another is not run; plan it as a task")
        elif char == ")":
            inner = line[index + 2 : end].strip()
            if not inner:
                raise CommandLineError("$() runs no command")
            return inner, end + 1
        end += 1
    raise CommandLineError("a $( is not closed")


def _expands(line: str, index: int) -> bool:
    """Whether the ``$`` at ``index`` is one a shell would expand (a name, ``{``, ``(``...)."""
    after = line[index + 1 : index + 2]
    return bool(after) and (after.isalnum() or after in "_{(?#@*!$-")


def _double_quoted(line: str, index: int, commands: list[str]) -> tuple[str, int]:
    """The text of a double-quoted part that starts after its quote, and where it ends."""
    part: list[str] = []
    while index < len(line):
        char = line[index]
        if line.startswith("$(", index):
            command, index = _substitution(line, index)
            part.append(f"{SUBSTITUTED}{len(commands)}")
            commands.append(command)
            continue
        if char == '"':
            return "".join(part), index + 1
        if char == "\\" and line[index + 1 : index + 2] in ('"', "\\", "$", "`"):
            part.append(line[index + 1])
            index += 2
            continue
        if char == "`" or (char == "$" and _expands(line, index)):
            raise CommandLineError(
                f"{char!r} inside double quotes would be expanded by a shell and is not here; "
                "use single quotes for the text as it is"
            )
        part.append(char)
        index += 1
    raise CommandLineError("a double quote is not closed")


def names_a_program(line: str, programs: Collection[str]) -> bool:
    """Whether a command line begins with one of ``programs``.

    It parses, and its first word, folders aside, is one of them.
    """
    try:
        stages = parse(line)
    except CommandLineError:
        return False
    words = stages[0].words
    return bool(words) and PurePosixPath(words[0].text).name in programs


def written_targets(stages: list[Stage]) -> list[str]:
    """The files a parsed line's redirections write (``>``, ``>>``, ``2>``), ``/dev/null`` aside."""
    targets = [s.stdout for s in stages] + [s.stderr for s in stages]
    return [t for t in targets if t and t not in ("&1", "/dev/null")]
