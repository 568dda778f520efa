"""A model's summary with each thing said once (SPEC section 1, `summarize`).

A small model writing under a grammar repeats itself: a sentence of its summary comes again
two sentences later on the same line, a highlight restates a sentence of the summary, the
quality assessment is the summary's first sentence once more. What is said twice is not read
twice: code keeps the first saying. It reads only prose: a line of code, of a table, or a
heading is left as it is, and so is a line that repeats nothing; the same fact said on two
lines (one per phase, say) is kept on both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: Where a sentence ends: after . ! or ? and the space before the next one.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
#: A list item's marker, kept in front of the sentences it carries.
_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_LISTS = ("highlights", "unfinished", "next_steps")


def _key(sentence: str) -> str:
    """A sentence as it is compared: case, spacing and its closing mark left out."""
    return " ".join(sentence.lower().split()).rstrip(".!?:;, ")


def _line_once(line: str) -> str:
    """A prose line without the sentences it says a second time; the line itself if none."""
    marker = _MARKER.match(line)
    head = marker.group(0) if marker else ""
    seen: set[str] = set()
    kept = []
    sentences = _SENTENCE_END.split(line[len(head) :])
    for sentence in sentences:
        key = _key(sentence)
        if key and key in seen:
            continue
        seen.add(key)
        kept.append(sentence)
    return line if len(kept) == len(sentences) else head + " ".join(kept)


def _text_once(text: str) -> str:
    """``text`` with each prose line's repeats left out; code, tables and headings as they are."""
    lines, in_code = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            in_code = not in_code
        prose = not in_code and not line.lstrip().startswith(("|", "#", "```", "~~~", "    "))
        lines.append(_line_once(line) if prose else line)
    return "\n".join(lines)


def _sentences(text: str) -> set[str]:
    return {_key(s) for line in text.split("\n") for s in _SENTENCE_END.split(line) if _key(s)}


def said_once(summary: Mapping[str, Any]) -> dict[str, Any]:
    """``summary`` with what it says twice said once; a summary that repeats nothing, equal.

    In the final summary, a sentence said again on the same prose line goes. A highlight,
    unfinished item or next step that is a sentence the summary already says, or an item
    given before, goes; so does a quality assessment that is one of the summary's sentences.
    Other fields stay as they are.
    """
    out = dict(summary)
    text = str(summary.get("final_summary") or "")
    out["final_summary"] = _text_once(text)
    summarized = _sentences(text)
    said = set(summarized)
    for name in _LISTS:
        items = summary.get(name)
        if isinstance(items, list):
            kept = []
            for item in items:
                if _key(str(item)) not in said:
                    said.add(_key(str(item)))
                    kept.append(item)
            out[name] = kept
    assessment = summary.get("quality_assessment")
    if isinstance(assessment, str) and _key(assessment) in summarized:
        out["quality_assessment"] = ""
    return out
