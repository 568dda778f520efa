"""What a request's words say, read by a regular expression: the files it names.

Each expression is tested on requests it was not written for (tests/unit/test_request_words.py).
"""

from __future__ import annotations

import re

# A file name as requests write one: a name with a short extension, perhaps under folders.
FILE_NAME = re.compile(r"(?<![\w/.:@-])((?:[\w-]+/)*[\w-]+\.[A-Za-z][A-Za-z0-9]{1,7})(?![\w/])")


def named_files(request: str) -> list[str]:
    """The file names a request mentions, in order, each once."""
    return list(dict.fromkeys(m.group(1) for m in FILE_NAME.finditer(request)))
