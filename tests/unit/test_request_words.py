"""What a request's words say, read by regular expressions, on requests they were not written for.

The expressions in `phasegraph.facts.request` were written from the local suite's requests; these
requests are other kinds of work, phrased as a user would, with what a person reads in them.
"""

from __future__ import annotations

import pytest

from phasegraph.facts.request import asks_for_copy, asks_for_path, commands_named, named_files
from phasegraph.tools.commands import DEFAULT_ALLOWED_COMMANDS

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


RUNS = [
    ("Run sort on names.txt and save what it prints to sorted.txt.", ["sort"]),
    ("Please execute the command wc -w essay.txt", ["wc"]),
    ("First run grep -c TODO main.py, then write the count to todo.txt.", ["grep"]),
    ("Check the file, then run md5sum on it and write the hash to hash.txt", ["md5sum"]),
    ("Count the lines in data.csv", []),
    ("The nightly run failed; summarize run.log in summary.md", []),
    ("Don't run anything, just read notes.txt", []),
    ("Write a guide that tells users to run find when they lose a file", []),
    ("Run the tests and report", []),  # "the tests" is no program
]


@pytest.mark.parametrize(("request_text", "programs"), RUNS)
def test_programs_a_request_asks_to_run(request_text: str, programs: list[str]) -> None:
    assert commands_named(request_text, DEFAULT_ALLOWED_COMMANDS) == programs


COPIES = [
    ("Back up settings.ini before you edit it", True),
    ("Create a duplicate of photo.txt called photo2.txt", True),
    ("Make copies of a.txt and b.txt in the archive folder", True),
    ("Clone template.md into new.md", True),
    ("Count the words in essay.txt and write the number to count.txt", False),
    ("Summarize report.md into summary.md", False),
    ("Move the TODO lines of a.py into todo.txt", False),
    ("Sort people.txt into sorted.txt", False),
]


@pytest.mark.parametrize(("request_text", "copy"), COPIES)
def test_requests_that_ask_for_a_copy(request_text: str, copy: bool) -> None:
    assert asks_for_copy(request_text) is copy


PATHS = [
    ("Write the full path of the largest file to out.txt", True),
    ("Which file defines main()? Put its path in answer.txt", True),
    ("Write the path to the config file into where.txt", True),
    ("Save the file paths of all Python files to py.txt", True),
    ("Find the test file and write its relative path to t.txt", True),
    ("Add /usr/local/bin to the PATH variable in env.sh", False),
    ("List the names of the files in docs/ in names.txt", False),
    ("Write the file name of the newest log to newest.txt", False),
]


@pytest.mark.parametrize(("request_text", "path"), PATHS)
def test_requests_that_ask_for_a_path(request_text: str, path: bool) -> None:
    assert asks_for_path(request_text) is path
