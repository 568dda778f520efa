"""The schemas of a check (SPEC section 11): a fact about the workspace that code evaluates.

A closed set of kinds, each its own object: a file ``exists``, ``contains`` a text, ``matches``
a regular expression, ``equals`` a text (its whole content), holds one ``number``, ``keeps`` the
lines it had when the run began, is a ``copy`` of another file (the same bytes), or a ``command``
succeeds (optionally with a text in its output). Stage
schemas offer them as a plain ``anyOf`` (`AnyCheck`), which every provider's schema dialect
reads; validation reads them by kind (`Check`), so an error names the fields of that kind.
Evaluating them is `phasegraph.tools.checks`'s business.
"""

from __future__ import annotations

import shlex
from typing import Annotated, Any, Literal

import regex
from pydantic import Field, TypeAdapter, ValidationError, field_validator
from pydantic.json_schema import SkipJsonSchema

from phasegraph.state.result import Result


class ExistsCheck(Result):
    """A file must exist."""

    kind: Literal["exists"]
    path: str = Field(min_length=1, description="File, relative to the workspace root.")


class ContainsCheck(Result):
    """A file must contain a text."""

    kind: Literal["contains"]
    path: str = Field(min_length=1, description="File, relative to the workspace root.")
    text: str = Field(min_length=1, description="Text the file must contain, exactly.")


class MatchesCheck(Result):
    """A file must match a regular expression."""

    kind: Literal["matches"]
    path: str = Field(min_length=1, description="File, relative to the workspace root.")
    pattern: str = Field(min_length=1, description="Regular expression searched in the file.")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            regex.compile(pattern)
        except regex.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from None
        return pattern


class EqualsCheck(Result):
    """A file's whole text must be a given text: nothing missing, nothing more."""

    kind: Literal["equals"]
    path: str = Field(min_length=1, description="File, relative to the workspace root.")
    text: str = Field(
        min_length=1,
        description="The file's whole text; blanks at line ends and the file's end are ignored.",
    )

    @field_validator("text")
    @classmethod
    def _not_blank(cls, text: str) -> str:
        # blanks aside, a blank text would pin an empty file as a deliverable's whole content
        if not text.strip():
            raise ValueError("the whole text of a file must hold more than blank space")
        return text


class NumberCheck(Result):
    """A file must hold one number and nothing else (a count, a sum, a total)."""

    kind: Literal["number"]
    path: str = Field(min_length=1, description="File, relative to the workspace root.")


class KeepsCheck(Result):
    """A file that is there must still hold each line it had when the run began."""

    kind: Literal["keeps"]
    path: str = Field(min_length=1, description="File, relative to the workspace root.")
    text: SkipJsonSchema[str] = Field(default="", exclude=False)
    """The lines it had, one per line; filled by code from the file when the check is set."""


class CopyCheck(Result):
    """A file must hold the same bytes as another file."""

    kind: Literal["copy"]
    path: str = Field(min_length=1, description="The copy, relative to the workspace root.")
    of: str = Field(min_length=1, description="The file it copies, relative to the root.")


class CommandCheck(Result):
    """A command must succeed (exit code 0), optionally with a text in its output."""

    kind: Literal["command"]
    argv: list[str] = Field(min_length=1, description='Program and arguments, e.g. ["pytest"].')
    expect: str = Field(default="", description="Text the output must contain (empty: any).")
    line: str = Field(
        default="", description='A pipeline instead, as written: "sort a.txt | uniq -d".'
    )

    @field_validator("argv", mode="before")
    @classmethod
    def _split_text(cls, value: Any) -> Any:
        # A command given as one string is read as a person types it.
        return shlex.split(value) if isinstance(value, str) else value


AnyCheck = (
    ExistsCheck
    | ContainsCheck
    | MatchesCheck
    | EqualsCheck
    | NumberCheck
    | KeepsCheck
    | CopyCheck
    | CommandCheck
)
"""A check in a stage's schema: a plain ``anyOf``, which every provider's schema dialect reads."""

Check = Annotated[AnyCheck, Field(discriminator="kind")]
"""A check as validation reads it: by its kind, so an error names the fields of that kind."""

ProposedCheck = ExistsCheck | ContainsCheck | MatchesCheck | CommandCheck
"""The kinds the request analysis is offered. ``number``, ``keeps`` and ``copy`` are for callers
and people: a model that proposes one pins what it guessed, and a run held to a wrong check
fails where it would have succeeded (docs/benchmarks.md).
``equals`` is for callers and people too: a whole text the request gives is rare, and a model
that proposes one it guessed would pin a wrong answer."""


#: Checks the analysis may propose; more are dropped with a note.
MAX_PROPOSED_CHECKS = 3

CHECK: TypeAdapter[Any] = TypeAdapter(Check)
PROPOSED: TypeAdapter[Any] = TypeAdapter(Annotated[ProposedCheck, Field(discriminator="kind")])


def first_error(exc: Exception) -> str:
    """The first problem of a validation error (or any error) as one short line."""
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"][1:])
        return f"{loc}: {err['msg']}" if loc else str(err["msg"])
    return str(exc)


def normalise_check(data: Any) -> dict[str, Any]:
    """A check object as people and models write it: ``cmd`` for command, ``command`` for argv."""
    if not isinstance(data, dict):
        raise TypeError("a check is an object with a kind")
    out = dict(data)
    if str(out.get("kind", "")).strip().lower() in ("cmd", "command"):
        out["kind"] = "command"
        if "argv" not in out and "command" in out:
            out["argv"] = out.pop("command")
    return out


