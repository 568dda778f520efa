"""How a stage's answer is read: the base of every result schema and its small readers.

SPEC section 1: validation reads an answer the way a person would. A number where a string id
is asked is that number's text, the seeds' own field names are understood, and a field with a
sensible default may be missing; each schema does its part in ``mode="before"`` validators, so
the JSON schema sent to the model stays the one the SPEC names. What has no sensible reading is
still refused, and the stage re-asks with the error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

#: A sentence's end: its mark, then a space or the text's end.
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def whole_sentences(text: str, bound: int) -> str:
    """``text``, or, when it reaches ``bound`` characters mid-sentence, its whole sentences.

    A grammar closes a bounded string where the bound falls, mid-word as often as not; a reader
    is better served by the sentences before the cut. Text that ends a sentence, or is shorter
    than the bound, is kept as written; one whose sentences end before its last third keeps its
    whole words and ends with an ellipsis.
    """
    kept = text.rstrip()
    if len(text) < bound or kept.endswith((".", "!", "?", "\u2026")):
        return text
    ends = [found.end() for found in _SENTENCE_END.finditer(kept)]
    if ends and ends[-1] * 3 >= len(kept):
        return kept[: ends[-1]]
    return (kept.rsplit(None, 1)[0] if " " in kept else kept) + "\u2026"


def clip(text: str, chars: int, *, between_words: bool = False) -> str:
    """``text`` on one line, cut to ``chars`` characters with an ellipsis.

    ``between_words``: the cut falls after the last whole word that fits (within a word, when
    the first word alone is longer).
    """
    text = " ".join(text.split())
    if len(text) <= chars:
        return text
    cut = text[: chars - 3]
    if between_words and text[chars - 3] != " " and " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip() + "..."


def at_most(chars: int) -> dict[str, Any]:
    """A length the JSON schema states for a free-text field, without validation enforcing it.

    Decoded under a grammar, a model can repeat itself inside a string until the answer is cut
    off, and greedy decoding does it again when asked again; with ``maxLength`` the grammar
    closes the string. A longer answer from a model that reads the schema as a hint is still
    taken: refusing it would cost a step.
    """
    return {"maxLength": chars}


def list_at_most(items: int, chars: int) -> dict[str, Any]:
    """`at_most` for a list of strings: at most ``items`` of them, each of ``chars`` at most."""
    return {"maxItems": items, "items": {"type": "string", **at_most(chars)}}


class Result(BaseModel):
    """Base of the stage results, read the way a person reads an answer (SPEC section 1).

    Extra fields a model adds are dropped, and a number where a string is asked is that number's
    text: the seeds number phases and tasks 1, 2, 3, and their dependencies and task ids with
    them. What else models naturally send (the seeds' own field names, a missing field with a
    sensible default) is read by ``mode="before"`` validators, so the schema sent to the model
    stays the one the SPEC names.
    """

    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True)


def renamed(data: Any, **names: str) -> Any:
    """``data`` with each alias key given under its field name, where the field is missing."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for alias, name in names.items():
        if alias in out and name not in out:
            out[name] = out.pop(alias)
    return out



class _HasId(Protocol):
    id: str


def phase_ids(phases: Any) -> Any:
    """Phases without an id (sentences, the seeds' replan steps) are numbered p1, p2, ..."""
    if not isinstance(phases, list):
        return phases
    out = []
    for number, item in enumerate(phases, start=1):
        if isinstance(item, str):
            item = {"goal": item}
        if isinstance(item, dict) and item.get("id") in (None, ""):
            item = {**item, "id": f"p{number}"}
        out.append(item)
    return out


def number_repeated_ids(items: Sequence[_HasId], reserved: Set[str]) -> None:
    """Give each id already used (earlier in the list, or in ``reserved``) a free suffix: t1-2."""
    taken = set(reserved) | {item.id for item in items}
    seen = set(reserved)
    for item in items:
        if item.id in seen:
            base, n = item.id, 2
            while f"{base}-{n}" in taken:
                n += 1
            item.id = f"{base}-{n}"
            taken.add(item.id)
        seen.add(item.id)


