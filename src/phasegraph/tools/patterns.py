"""A search pattern's size once compiled, told before it is compiled (SPEC section 5).

The ``regex`` module unrolls a counted repeat of a group: ``(?:a{1000}){1000}`` becomes a
million nodes, and three such levels of 36 characters take the process's memory before any
time limit can act (compiling is not interruptible). `unrolled_size` reads the pattern's
counted repeats and multiplies them as the compiler would; a pattern past `MAX_UNROLLED` is
refused before compiling.
"""

from __future__ import annotations

import re

#: The most nodes a compiled search pattern may unroll to (``(?:a{300}){300}`` is 90,000).
MAX_UNROLLED = 100_000

_COUNTED = re.compile(r"\{(\d*)(?:,(\d*))?\}")
#: Escapes whose argument is in braces (``\p{L}``, ``\x{41}``, ``\N{DASH}``): no repeat count.
_BRACED_ESCAPES = frozenset("pPxNgku")


def unrolled_size(pattern: str) -> int:
    """About how many nodes compiling ``pattern`` makes: atoms times their counted repeats.

    A counted repeat (``{m}``, ``{m,n}``, ``{m,}``) multiplies what it applies to by its
    largest count; ``*``, ``+`` and ``?`` do not unroll. A pattern this reading cannot follow
    (an unbalanced group) is measured as far as it goes: the compiler refuses it anyway.
    """
    stripped = _without_comments(pattern)
    if stripped != pattern:
        # a comment may hide a repeat (a '[' in it), or what looks like one may be none (a '#'
        # in a class, in verbose mode): the larger reading is the one that cannot be fooled
        return max(_size(stripped), _size(pattern))
    return _size(pattern)


def _size(pattern: str) -> int:
    stack: list[int] = [0]  # the size of each open group's contents so far
    last = 0  # the size of the last atom or group, which a repeat applies to
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index = _after_escape(pattern, index)
            last = 1
            stack[-1] += 1
            continue
        if char == "[":
            index = _after_class(pattern, index)
            last = 1
            stack[-1] += 1
            continue
        if char == "(":
            stack.append(0)
            index += 1
            continue
        if char == ")" and len(stack) > 1:
            last = max(stack.pop(), 1)
            stack[-1] += last
            index += 1
            continue
        counted = _COUNTED.match(pattern, index) if char == "{" else None
        if counted is not None and (counted.group(1) or counted.group(2)):
            count = max(int(counted.group(1) or 0), int(counted.group(2) or 0))
            stack[-1] += last * (count - 1) if count else -last
            last *= max(count, 1)
            index = counted.end()
            continue
        if char not in "*+?|^$":
            last = 1
            stack[-1] += 1
        index += 1
    return sum(stack)


_INLINE_COMMENT = re.compile(r"\(\?#[^)]*\)")
_VERBOSE = re.compile(r"\(\?[a-zA-Z]*x")
_VERBOSE_COMMENT = re.compile(r"(?<!\\)#[^\n]*")


def _without_comments(pattern: str) -> str:
    """``pattern`` without what reads as its comments (the compiler skips them).

    ``(?#...)``, and ``#...`` to the line's end in verbose mode.
    """
    pattern = _INLINE_COMMENT.sub("", pattern)
    if _VERBOSE.search(pattern):
        pattern = _VERBOSE_COMMENT.sub("", pattern)
    return pattern


def _after_escape(pattern: str, index: int) -> int:
    """The index after the escape at ``index``, a braced argument (as in p{L}) included."""
    letter = pattern[index + 1 : index + 2]
    end = index + 2
    if letter in _BRACED_ESCAPES and pattern[end : end + 1] == "{":
        close = pattern.find("}", end)
        return len(pattern) if close == -1 else close + 1
    return end


def _after_class(pattern: str, index: int) -> int:
    """The index after the character class that opens at ``index``."""
    end = index + 1
    if pattern[end : end + 1] == "^":
        end += 1
    if pattern[end : end + 1] == "]":
        end += 1  # a ']' first is itself a member
    while end < len(pattern):
        if pattern[end] == "\\":
            end += 2
            continue
        if pattern[end] == "]":
            return end + 1
        end += 1
    return len(pattern)


def pattern_refusal(pattern: str) -> str | None:
    """Why ``pattern`` may not be compiled (it would unroll past `MAX_UNROLLED`), or None."""
    size = unrolled_size(pattern)
    if size > MAX_UNROLLED:
        return (
            f"the pattern {pattern!r} repeats counted groups within each other to about "
            f"{size:,} steps once compiled, past the {MAX_UNROLLED:,} a search may take; use "
            "'+' or '*', or smaller counts"
        )
    return None
