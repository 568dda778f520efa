"""What a request's words say, read by regular expressions: files it names, programs to run.

Each expression is tested on requests it was not written for (tests/unit/test_request_words.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# A file name as requests write one: a name with a short extension, perhaps under folders.
FILE_NAME = re.compile(r"(?<![\w/.:@-])((?:[\w-]+/)*[\w-]+\.[A-Za-z][A-Za-z0-9]{1,7})(?![\w/])")


def named_files(request: str) -> list[str]:
    """The file names a request mentions, in order, each once."""
    return list(dict.fromkeys(m.group(1) for m in FILE_NAME.finditer(request)))


#: "Run wc -l on ...", "then execute the command grep ...": "run" or "execute" as an order (a
#: sentence's first word, or after "please", "then", "and", "first", "also" or a comma), the
#: program right after it, or after "the command" or "the program". Not "the run date", "do not
#: run cat", "tell users to run find", "re-run the date conversion", "run the file names".
_RUN_PROGRAM = re.compile(
    r"(?:^|[.!?;:,]\s+|\b(?:please|then|and|first|also)\s+)(?:run|execute)\s+"
    r"(?:the\s+(?:command|program)\s+)?[`'\"]?([\w+-]+(?:\.[\w+-]+)*)",
    re.I | re.M,
)


def commands_named(request: str, allowed: Sequence[str]) -> list[str]:
    """The allowed programs the request asks to run ("run wc -l on data.csv"), each once."""
    found = (m.group(1) for m in _RUN_PROGRAM.finditer(request))
    return list(dict.fromkeys(name for name in found if name in allowed))


#: Words by which a request asks for a file to be copied as it is.
ASKS_FOR_A_COPY = re.compile(
    r"\b(cop(y|ies|ied|ying)|duplicat\w*|back\s?ups?|clon\w*|mirror\w*)\b", re.I
)

#: A request asking for where a file is: "its path", "the path of"; not "the PATH variable".
ASKS_FOR_A_PATH = re.compile(
    r"\b(?:[Tt]he|[Ii]ts|[Tt]heir|[Ff]ull|[Rr]elative|[Ff]ile)\s+paths?\b|\b[Pp]aths?\s+(?:of|to)\b"
)


def asks_for_copy(request: str) -> bool:
    """Whether the request asks for a file to be copied as it is ("back up", "duplicate")."""
    return ASKS_FOR_A_COPY.search(request) is not None


def asks_for_path(request: str) -> bool:
    """Whether the request asks where a file is ("write its path"), not for its name."""
    return ASKS_FOR_A_PATH.search(request) is not None
