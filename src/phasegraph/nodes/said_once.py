"""A model's summary with each thing said once (SPEC section 1, `summarize`).

A small model writing under a grammar repeats itself: a sentence of its summary comes again
two sentences later, a highlight restates the summary, the quality assessment is the summary's
first sentence once more. What is said twice is not read twice: code keeps the first saying,
whatever the words, and leaves a summary that repeats nothing as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: Where a sentence ends: after . ! or ? and the space before the next one.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LISTS = ("highlights", "unfinished", "next_steps")


def _key(sentence: str) -> str:
    """A sentence as it is compared: case, spacing and its closing mark left out."""
    return " ".join(sentence.lower().split()).rstrip(".!?:;, ")


def _once(text: str, seen: set[str]) -> str:
    """``text`` without the sentences in ``seen`` or said earlier in it; ``seen`` grows."""
    lines = []
    for line in text.split("\n"):
        kept = []
        for sentence in _SENTENCE_END.split(line):
            key = _key(sentence)
            if key and key in seen:
                continue
            seen.add(key)
            kept.append(sentence)
        if kept or not line.strip():
            lines.append(" ".join(kept))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def said_once(summary: Mapping[str, Any]) -> dict[str, Any]:
    """``summary`` with each sentence said once, in the order its fields are read.

    The final summary keeps the first saying of each sentence; a highlight, unfinished item
    or next step that says nothing new goes, and so does a quality assessment that only
    repeats. Other fields stay as they are; a summary that repeats nothing is returned equal.
    """
    seen: set[str] = set()
    out = dict(summary)
    out["final_summary"] = _once(str(summary.get("final_summary") or ""), seen)
    for name in _LISTS:
        items = summary.get(name)
        if isinstance(items, list):
            out[name] = [kept for item in items if (kept := _once(str(item), seen))]
    if isinstance(summary.get("quality_assessment"), str):
        out["quality_assessment"] = _once(summary["quality_assessment"], seen)
    return out
