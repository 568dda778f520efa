"""What the argument checks know of each default program: its options, and which are refused.

Read from each program's ``--help`` (GNU coreutils 9, grep 3, findutils 4.9, diffutils 3, file
5); a program's table is closed: an option it does not list is refused (`argv_rules`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Operands = Literal["read", "none", "grep", "uniq", "date", "files"]

WRITES = "it writes a file; write files with write_file or edit_file"
RUNS = "it runs another program"
FILE_LIST = "it reads a list of paths from a file, which the checks cannot confine"
FOLLOWS = "it follows symlinks, which may lead out of the workspace"
WAITS = "it waits for the file to grow until the command is killed"
DATE_FILE = "it reads date strings from a file, and a date string may name a file (TZ=...)"


@dataclass(frozen=True)
class Spec:
    """What the checks know of one program's options.

    ``flags``: short options without a value; ``valued``: short options that take one (glued or
    the next argument); ``optional``: short options whose value can only be glued. ``long``: each
    long option's name and whether it takes a value ("" none, "=" required, "?" optional).
    ``refused``: options (``-x`` or ``--name``) never let through, and why. ``paths``: options
    whose value is a file to read. ``operand_options``: options whose value is one more operand
    (diff's ``--from-file``: compared with each operand), checked as the operands are.
    ``dates``: options whose value is a date string, whose ``TZ="..."`` may name a file.
    ``operands``: what the program's operands are.
    """

    flags: str = ""
    valued: str = ""
    optional: str = ""
    long: Mapping[str, str] = field(default_factory=dict)
    refused: Mapping[str, str] = field(default_factory=dict)
    paths: frozenset[str] = frozenset()
    operand_options: frozenset[str] = frozenset()
    dates: frozenset[str] = frozenset()
    operands: Operands = "read"
    digits: bool = False  # "-5" is an option (head, tail, grep's context)


def _long(text: str) -> dict[str, str]:
    """``"name name= name?"`` as {name: kind}."""
    table = {}
    for word in text.split():
        kind = word[-1] if word[-1] in "=?" else ""
        table[word.rstrip("=?")] = kind
    return table


_COMMON = "help version"
SPECS: dict[str, Spec] = {
    "cat": Spec(
        flags="AbeEnstTuv",
        long=_long(f"show-all number-nonblank show-ends number squeeze-blank show-tabs "
                   f"show-nonprinting {_COMMON}"),
    ),
    "head": Spec(
        flags="qvz", valued="cn", digits=True,
        long=_long(f"bytes= lines= quiet silent verbose zero-terminated {_COMMON}"),
    ),
    "tail": Spec(
        flags="fFqvz", valued="cns", digits=True,
        long=_long(f"bytes= follow? lines= max-unchanged-stats= pid= quiet silent retry "
                   f"sleep-interval= verbose zero-terminated {_COMMON}"),
        refused={"-f": WAITS, "-F": WAITS, "--follow": WAITS, "--retry": WAITS, "--pid": WAITS},
    ),
    "wc": Spec(
        flags="cmlLw",
        long=_long(f"bytes chars lines files0-from= max-line-length words total= {_COMMON}"),
        refused={"--files0-from": FILE_LIST},
    ),
    "sort": Spec(
        flags="bdfgiMhnRrVcCmsuz", valued="kSotT",
        long=_long(f"ignore-leading-blanks dictionary-order ignore-case general-numeric-sort "
                   f"ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort "
                   f"random-source= reverse sort= version-sort batch-size= check? "
                   f"compress-program= debug files0-from= key= merge output= stable "
                   f"buffer-size= field-separator= temporary-directory= parallel= unique "
                   f"zero-terminated {_COMMON}"),
        refused={"-o": WRITES, "--output": WRITES, "--compress-program": RUNS,
                 "--files0-from": FILE_LIST, "-T": WRITES, "--temporary-directory": WRITES},
        paths=frozenset({"--random-source"}),
    ),
    "uniq": Spec(
        flags="cdDiuz", valued="fsw",
        long=_long(f"count repeated all-repeated? skip-fields= group? ignore-case skip-chars= "
                   f"unique zero-terminated check-chars= {_COMMON}"),
        operands="uniq",
    ),
    "cut": Spec(
        flags="nsz", valued="bcdf",
        long=_long(f"bytes= characters= delimiter= fields= complement only-delimited "
                   f"output-delimiter= zero-terminated {_COMMON}"),
    ),
    "ls": Spec(
        flags="aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ1",
        valued="ITw",
        long=_long(f"all almost-all author escape block-size= ignore-backups color? directory "
                   f"dired classify? file-type format= full-time group-directories-first "
                   f"no-group human-readable si dereference-command-line "
                   f"dereference-command-line-symlink-to-dir hide= hyperlink? "
                   f"indicator-style= inode ignore= kibibytes dereference numeric-uid-gid "
                   f"literal hide-control-chars show-control-chars quote-name quoting-style= "
                   f"reverse recursive size sort= time= time-style= tabsize= width= context "
                   f"zero {_COMMON}"),
        refused={"-L": FOLLOWS, "--dereference": FOLLOWS, "-H": FOLLOWS,
                 "--dereference-command-line": FOLLOWS,
                 "--dereference-command-line-symlink-to-dir": FOLLOWS},
    ),
    "grep": Spec(
        flags="EFGPiywxzsvVbnHhoqaIrRLlcTZU", valued="efmdDABC", digits=True,
        long=_long(f"extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= "
                   f"ignore-case no-ignore-case word-regexp line-regexp null-data no-messages "
                   f"invert-match max-count= byte-offset line-number line-buffered "
                   f"with-filename no-filename label= only-matching quiet silent binary-files= "
                   f"text directories= devices= recursive dereference-recursive include= "
                   f"exclude= exclude-from= exclude-dir= files-without-match "
                   f"files-with-matches count initial-tab null before-context= after-context= "
                   f"context= group-separator= no-group-separator color? colour? binary "
                   f"{_COMMON}"),
        refused={"-R": FOLLOWS, "--dereference-recursive": FOLLOWS,
                 "-D": "it reads devices and FIFOs, which wait for ever",
                 "--devices": "it reads devices and FIFOs, which wait for ever"},
        paths=frozenset({"-f", "--file", "--exclude-from"}),
        operands="grep",
    ),
    "diff": Spec(
        flags="qscueynpytTlrNiEZbwBadv", valued="CUWFxXSID",
        long=_long(f"normal brief report-identical-files context? unified? ed rcs side-by-side "
                   f"width= left-column suppress-common-lines show-c-function "
                   f"show-function-line= label= expand-tabs initial-tab tabsize= "
                   f"suppress-blank-empty paginate recursive no-dereference new-file "
                   f"unidirectional-new-file ignore-file-name-case no-ignore-file-name-case "
                   f"exclude= exclude-from= starting-file= from-file= to-file= ignore-case "
                   f"ignore-tab-expansion ignore-trailing-space ignore-space-change "
                   f"ignore-all-space ignore-blank-lines ignore-matching-lines= text "
                   f"strip-trailing-cr ifdef= old-group-format= new-group-format= "
                   f"changed-group-format= unchanged-group-format= line-format= "
                   f"old-line-format= new-line-format= unchanged-line-format= minimal "
                   f"horizon-lines= speed-large-files color? palette= {_COMMON}"),
        refused={"-l": f"{RUNS} (pr)", "--paginate": f"{RUNS} (pr)",
                 "-r": f"{FOLLOWS} inside folders", "--recursive": f"{FOLLOWS} inside folders"},
        paths=frozenset({"-X", "--exclude-from"}),
        operand_options=frozenset({"--from-file", "--to-file"}),
        operands="files",
    ),
    "date": Spec(
        flags="Ru", valued="dfrs", optional="I",
        long=_long(f"date= debug file= iso-8601? resolution rfc-email rfc-3339= reference= "
                   f"set= utc universal {_COMMON}"),
        refused={"-s": "it sets the clock", "--set": "it sets the clock",
                 "-f": DATE_FILE, "--file": DATE_FILE},
        paths=frozenset({"-r", "--reference"}),
        dates=frozenset({"-d", "--date"}),
        operands="date",
    ),
    "stat": Spec(
        flags="Lft", valued="c",
        long=_long(f"dereference file-system cached= format= printf= terse {_COMMON}"),
        refused={"-L": FOLLOWS, "--dereference": FOLLOWS},
    ),
    "file": Spec(
        flags="vzZbcikhlLnN0prsSCd", valued="mefFP",
        long=_long("help version magic-file= uncompress uncompress-noreport brief "
                   "checking-printout exclude= exclude-quiet= files-from= separator= mime "
                   "apple extension mime-type mime-encoding keep-going list dereference "
                   "no-dereference no-buffer no-pad print0 preserve-date parameter= raw "
                   "special-files no-sandbox compile debug"),
        refused={"-f": FILE_LIST, "--files-from": FILE_LIST,
                 "-m": "it reads magic files of its choosing", "--magic-file": "it reads "
                 "magic files of its choosing", "-C": WRITES, "--compile": WRITES,
                 "-p": "it changes files' access times", "--preserve-date": "it changes "
                 "files' access times", "-L": FOLLOWS, "--dereference": FOLLOWS,
                 "-s": "it reads devices, which wait for ever", "--special-files": "it reads "
                 "devices, which wait for ever", "-S": "it turns off file's own sandbox",
                 "--no-sandbox": "it turns off file's own sandbox",
                 **dict.fromkeys(("-z", "-Z", "--uncompress", "--uncompress-noreport"),
                                 f"{RUNS} (a decompressor)")},
    ),
    "tr": Spec(flags="cCdst", long=_long(f"complement delete squeeze-repeats truncate-set1 "
                                        f"{_COMMON}"), operands="none"),
    "tac": Spec(flags="br", valued="s", long=_long(f"before regex separator= {_COMMON}")),
    "nl": Spec(
        flags="p", valued="bdfhilnsvw",
        long=_long(f"body-numbering= section-delimiter= footer-numbering= header-numbering= "
                   f"line-increment= join-blank-lines= number-format= no-renumber "
                   f"number-separator= starting-line-number= number-width= {_COMMON}"),
    ),
    "paste": Spec(flags="sz", valued="d", long=_long(f"delimiters= serial zero-terminated "
                                                      f"{_COMMON}")),
    "comm": Spec(flags="123z", long=_long(f"check-order nocheck-order output-delimiter= total "
                                          f"zero-terminated {_COMMON}")),
    "rev": Spec(flags="hV", long=_long(_COMMON)),
    "seq": Spec(flags="w", valued="fs", long=_long(f"format= separator= equal-width {_COMMON}"),
                operands="none"),
    "echo": Spec(operands="none"),
    "expr": Spec(operands="none"),
    "true": Spec(operands="none"),
    "false": Spec(operands="none"),
    "sleep": Spec(operands="none"),
    "pwd": Spec(flags="LP", long=_long(_COMMON), operands="none"),
}
_SUMS = Spec(
    flags="bctzw",
    long=_long(f"binary check tag text zero ignore-missing quiet status strict warn {_COMMON}"),
    refused={"-c": FILE_LIST, "--check": FILE_LIST},
)
for _name in ("md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum"):
    SPECS[_name] = _SUMS
#: Programs whose output is made of their own arguments alone: they read no file and no input,
#: so what they print is what the command line typed (``echo 50``, ``expr 17 + 25``).
WORDS_ONLY = frozenset({"echo", "expr", "seq", "printf"})
# echo, expr, true, false and sleep read no option as GNU getopt does: every argument is theirs.
RAW_ARGUMENTS = frozenset({"echo", "expr", "true", "false", "sleep"})


# find's predicates by the number of arguments they take; the ones that name a file to read.
FIND_NO_ARG = frozenset(
    "-print -print0 -ls -prune -quit -true -false -empty -readable -writable -executable "
    "-nouser -nogroup -depth -d -mount -xdev -noleaf -daystart -ignore_readdir_race "
    "-noignore_readdir_race -not -a -o -and -or ! ( ) , -warn -nowarn -help -version".split()
)
FIND_ONE_ARG = frozenset(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -regextype -type -xtype "
    "-size -mtime -mmin -atime -amin -ctime -cmin -used -perm -user -group -uid -gid -links "
    "-inum -lname -ilname -maxdepth -mindepth -printf -fstype -context -newer -anewer -cnewer "
    "-samefile".split()
)
FIND_PATH_ARG = frozenset({"-newer", "-anewer", "-cnewer", "-samefile"})
FIND_REFUSED = {
    **dict.fromkeys(("-exec", "-execdir", "-ok", "-okdir"), RUNS),
    "-delete": "it deletes files",
    **dict.fromkeys(("-fprint", "-fprint0", "-fprintf", "-fls"), WRITES),
    "-files0-from": FILE_LIST,
    **dict.fromkeys(("-L", "-H", "-follow"), FOLLOWS),
}
NEWER_XY = re.compile(r"-newer[aBcm][aBcmt]")
