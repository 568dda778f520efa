"""The files a request names, read from its words.

A name counts when it is written as files are: a name with a file extension (the last one of
several: ``config.example.yaml``), perhaps under folders; a dotfile (``.gitignore``,
``.env.local``); one of the conventional names without an extension (``Makefile``, ``README``);
a quoted name with a file extension, spaces and all; or a name that is a file of the workspace.
What only looks like one is not: a dotted identifier (``os.path.join``, ``logging.info``), a
domain (``example.com``), a version (``v2.0.1``), two sentences joined without a space
(``done.Then``), a framework's name (``Node.js``, not a file of the workspace). The rule is
measured on requests it was not written for (tests/unit/test_request_words.py: a corpus of 172
requests, at most one in twenty naming something that is not a file).
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: Extensions of the files people ask agents to read, write and change.
EXTENSIONS = frozenset(
    """txt md markdown rst adoc csv tsv json jsonl ndjson yaml yml toml ini cfg conf properties
    env xml html htm css scss sass less js mjs cjs jsx ts tsx vue svelte py pyi ipynb rb php pl
    go mod rs java kt kts scala swift c h cc cpp hpp cs fs vb mm r jl lua dart ex exs erl hs ml
    clj sh bash zsh fish ps1 bat cmd sql graphql proto tf hcl nix gradle cmake mk dockerfile
    lock log out err diff patch j2 jinja tmpl tpl mustache hbs svg png jpg jpeg gif webp ico bmp
    pdf doc docx odt xls xlsx ods ppt pptx csv zip gz tgz bz2 xz tar 7z db sqlite sqlite3 bak
    orig tmp pem crt key pub wasm bin dat parquet avro pkl npy npz h5 onnx""".split()
)
#: Files conventionally named without an extension.
BARE_NAMES = frozenset(
    "Makefile GNUmakefile Dockerfile Containerfile Procfile Gemfile Rakefile Jenkinsfile "
    "Vagrantfile Brewfile Justfile README LICENSE CHANGELOG NOTICE AUTHORS CONTRIBUTING".split()
)

#: Folders on the way to a name, dot-folders (.github/) included; a leading ./ is not kept.
_FOLDERS = r"(?<![\w/.:@~*$-])(?:\./)?((?:\.?[\w-]+/)*"
_TOKEN = re.compile(_FOLDERS + r"[\w-]+(?:\.[\w-]+)+)(?![\w/@]|\.\w)")
_DOTFILE = re.compile(_FOLDERS + r"\.[A-Za-z][\w-]*(?:\.[\w-]+)*)(?![\w/]|\.\w)")
_BARE = re.compile(_FOLDERS + r"[A-Z][A-Za-z]+)(?![\w/]|\.\w)")
_QUOTED = re.compile(r"""(["'`\u2018\u201c])([^"'`\u2019\u201d\n]{1,80})(["'`\u2019\u201d])""")


def named_files(request: str, exists: Callable[[str], bool] | None = None) -> list[str]:
    """The file names a request mentions, in order, each once.

    ``exists``: whether a name is a file of the workspace, which makes it one whatever its
    form (a framework-like ``Build.js`` that is there).
    """
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []
    for match in _QUOTED.finditer(request):
        name = match.group(2).strip()
        if " " in name and _extension(name) in EXTENSIONS:
            found.append((match.start(2), name))
            taken.append(match.span(2))
    for pattern in (_TOKEN, _DOTFILE, _BARE):
        for match in pattern.finditer(request):
            if any(start <= match.start() < end for start, end in taken):
                continue
            name = match.group(1)
            if _is_file(name, pattern, exists):
                found.append((match.start(), name))
    return list(dict.fromkeys(name for _, name in sorted(found)))


def _extension(name: str) -> str:
    stem, dot, extension = name.rpartition(".")
    return extension if dot and stem else ""


def _is_file(name: str, pattern: re.Pattern[str], exists: Callable[[str], bool] | None) -> bool:
    if exists is not None and exists(name):
        return True
    if pattern is _DOTFILE:
        # ".jpg" alone is an extension spoken of, ".env" and ".gitignore" are files
        return name.rsplit("/", 1)[-1][1:] not in EXTENSIONS - {"env"}
    if pattern is _BARE:
        return name.rsplit("/", 1)[-1] in BARE_NAMES
    extension = _extension(name)
    if extension not in EXTENSIONS:
        return False
    base = name.rsplit("/", 1)[-1]
    # a framework's name, written as one (Node.js, D3.js): not a file, unless it is there
    return not (extension == "js" and "/" not in name and base[:1].isupper())
