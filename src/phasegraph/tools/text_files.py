"""What the file tools do with a file's bytes: lines of a range, decoding, stray characters."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

import regex

#: Bytes read at a time when a read goes past the part the cap keeps.
SCAN_CHUNK = 1 << 16


# Control characters a text file written by a tool does not hold: all but tab, newline,
# carriage return, form feed (page breaks in old sources) and escape (terminal colours).
_STRAY_CONTROL = regex.compile("[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")
_CONTROL_NAMES = {"\x00": "NUL", "\x08": "backspace", "\x0b": "vertical tab"}


def stray_control(text: str, already: Callable[[], str]) -> str | None:
    r"""Why ``text`` cannot be written: a control character that ``already()`` does not hold.

    A model writes a file's text as a JSON string, where ``\b`` is a backspace: a mistyped
    escape ("alpha\beta" for "alpha\nbeta") writes a control character a text file does not
    hold, which a reader of the text may not notice. A text that holds such a character by
    design (the file held it already) is written as asked. None when ``text`` can be written.
    """
    if _STRAY_CONTROL.search(text) is None:
        return None
    held = already()
    for found in _STRAY_CONTROL.finditer(text):
        char = found.group()
        if char not in held:
            line = text.count("\n", 0, found.start()) + 1
            column = found.start() - text.rfind("\n", 0, found.start())
            name = _CONTROL_NAMES.get(char, f"U+{ord(char):04X}")
            return (
                f"it holds a control character ({name}) at line {line}, column {column}, which "
                "a text file does not hold: a mistyped escape (\\b for \\n?); nothing was written"
            )
    return None


@dataclass(frozen=True)
class Part:
    """Lines read of a file: their bytes, the last one's number, how the read ended."""

    data: bytes
    last: int
    capped: bool
    total: int | None  # the file's line count, when the read reached its end


def lines_of(handle: BinaryIO, first: int, last: int | None, cap: int) -> Part:
    """Lines ``first``..``last`` of an open file, stopping before ``cap`` bytes are kept.

    A line longer than the cap on its own is shown cut, so a read always moves on.
    """
    kept = bytearray()
    number = 1  # the line the next bytes belong to
    open_line = False  # the last bytes read did not end their line
    while chunk := handle.readline(SCAN_CHUNK):
        if last is not None and number > last:
            return Part(bytes(kept), last, False, _count_on(handle, chunk, number, cap))
        if number >= first:
            if len(kept) + len(chunk) > cap:
                if b"\n" in kept:
                    del kept[kept.rindex(b"\n") + 1 :]  # a line cut short is not shown
                else:
                    kept = (kept + chunk)[:cap]
                lines = max(kept.count(b"\n"), 1)
                return Part(bytes(kept), first + lines - 1, True, None)
            kept += chunk
        open_line = not chunk.endswith(b"\n")
        number += 0 if open_line else 1
    total = number if open_line else number - 1
    return Part(bytes(kept), min(last or total, total), False, total)


def _count_on(handle: BinaryIO, chunk: bytes, number: int, cap: int) -> int | None:
    """The file's line count, read on from ``chunk`` (line ``number``), if that stays small."""
    read = len(chunk)
    lines = number - 1
    ends_open = True
    while chunk:
        lines += chunk.count(b"\n")
        ends_open = not chunk.endswith(b"\n")
        if read > 16 * cap:
            return None  # too large to count for a note
        chunk = handle.read(SCAN_CHUNK)
        read += len(chunk)
    return lines + (1 if ends_open else 0)


def decode(data: bytes) -> tuple[str, str]:
    """Text of a file; undecodable bytes become U+FFFD and a note says so."""
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3 and exc.reason == "unexpected end of data":
            # the read cap split a multi-byte character
            return data[: exc.start].decode("utf-8", errors="replace"), ""
        return (
            data.decode("utf-8", errors="replace"),
            "the file is not valid UTF-8; undecodable bytes are shown as U+FFFD",
        )


#: Occurrences an ambiguous edit's refusal names, and how much of each line it shows.
OCCURRENCES_SHOWN = 4
OCCURRENCE_LINE_CHARS = 80


def occurrences(text: str, old_text: str) -> str:
    """Where ``old_text`` occurs in ``text``: the lines its first occurrences start on, and each.

    An edit refused as ambiguous says where, so the next call can name one occurrence by the
    text around it without reading the file first. Lines are counted as `read_file` numbers
    them (at line feeds); at most `OCCURRENCES_SHOWN` lines are named, each once.
    """
    named: list[str] = []
    line, counted = 1, 0
    at = text.find(old_text)
    while at != -1 and len(named) < OCCURRENCES_SHOWN:
        line += text.count("\n", counted, at)
        counted = at
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end == -1 else end
        named.append(f"{line} ({_cut(text[start:end].strip())!r})")
        # the next line it occurs on: a line is named once, and a long one is not searched again
        at = text.find(old_text, max(at + len(old_text), end))
    return "on lines " + ", ".join(named) + (" and further down" if at != -1 else "")


#: How much of a file a refused edit's text is compared with: its first lines, each cut short.
COMPARED_LINES = 2_000
COMPARED_CHARS = 200


def not_found(text: str, old_text: str, new_text: str = "") -> str:
    """What an edit whose ``old_text`` is not in ``text`` is told: the lines most like it.

    Up to three of the file's first `COMPARED_LINES` lines that look most like the first line of
    ``old_text`` (each compared by its first `COMPARED_CHARS` characters), as
    `occurrences` numbers them, and how to add text with an edit: a line that is there, then
    that line with the new text after it. A model that guessed the text to replace, or tried
    to add a line by replacing what is not there, has what it needs for its next call. An edit
    whose new text holds its old text means to add it: it is shown that edit's arguments, made
    on the line most like its old text (`_adding_after`).
    """
    # compared cut short, and only the file's first lines: a ratio of two long texts costs
    # the product of their lengths, and one call may not cost the host that
    lines = [line.strip()[:COMPARED_CHARS] for line in text.split("\n", COMPARED_LINES)]
    lines = lines[:COMPARED_LINES]
    first = next((line.strip() for line in old_text.split("\n") if line.strip()), "")
    wanted = first[:COMPARED_CHARS]
    candidates = [line for line in dict.fromkeys(lines) if line]  # a repeated line once
    close = difflib.get_close_matches(wanted, candidates, n=3, cutoff=0.4)
    shown = [f"line {lines.index(line) + 1} ({_cut(line)!r})" for line in close]
    like = f"; most like it: {', '.join(shown)}" if shown else ""
    example = _adding_after(text, lines.index(close[0]), old_text, new_text) if close else ""
    return (
        f"old_text was not found{like}. To add text, give as old_text a line that is there, "
        f"and as new_text that line with the new text after it{example} (nothing was changed)"
    )


#: How alike an edit's old text and the file's line most like it are when the edit is taken to
#: mean that line, mistyped (a change of it), not a text to add after it.
MISTYPED_RATIO = 0.75


def _adding_after(text: str, index: int, old_text: str, new_text: str) -> str:
    """The arguments that add ``new_text`` after line ``index``, when the edit means to add.

    It means to add when its new text holds its old text (which is not in the file), and the
    old text is not that line mistyped (`MISTYPED_RATIO`). The line must occur
    once, so the edit shown is one the tool takes; a line ending in a carriage return gets none,
    since the text added would not end as the file's lines do.
    """
    added = new_text.strip("\n")
    wanted = old_text.strip()
    if not wanted or wanted not in added:
        return ""
    line = text.split("\n", index + 1)[index]
    if not line.strip() or len(line) > COMPARED_CHARS or line.endswith("\r"):
        return ""
    if text.count(line) != 1 or difflib.SequenceMatcher(None, wanted, line.strip()).ratio() >= (
        MISTYPED_RATIO
    ):
        return ""
    return f", here old_text {line!r} and new_text {line + chr(10) + added!r}"


def _cut(line: str, limit: int = OCCURRENCE_LINE_CHARS) -> str:
    return line if len(line) <= limit else line[:limit] + "..."
