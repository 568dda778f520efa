"""What a request's words say, read by regular expressions, on requests they were not written for.

The expressions in `phasegraph.facts.request` were written from the local suite's requests; these
requests are other kinds of work, phrased as a user would, with what a person reads in them.
"""

from __future__ import annotations

import pytest

from phasegraph.facts.request import named_files

NAMED = [
    ("Rename notes.md to README.md", ["notes.md", "README.md"]),
    ("Update config/settings.yaml and src/main.rs to the new port", ["config/settings.yaml",
                                                                    "src/main.rs"]),
    ("What is in data.json? Tell me in answer.txt.", ["data.json", "answer.txt"]),
    ("Use version 2.0 of the API in client.py", ["client.py"]),
    ("Email bob@example.com the numbers from sales.csv", ["sales.csv"]),
    ("See https://example.org/docs/index.html and write notes.txt", ["notes.txt"]),
    ("Make the logs quieter", []),
]


@pytest.mark.parametrize(("request_text", "files"), NAMED)
def test_named_files(request_text: str, files: list[str]) -> None:
    assert named_files(request_text) == files
