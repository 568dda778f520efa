"""What enforces the sandbox stays out of the workload's reach (SPEC section 5).

Three rules, each read from resolved paths, never from a folder's name:

- `workspace_refusal`: a workspace that is ``/``, a home folder or a system folder, or one that
  lies inside what runs phasegraph, is refused;
- `guarded_trees`: the running interpreter's prefixes and site-packages, phasegraph's own
  package and the sandbox binary's folder. Wherever they lie inside a workspace, the file tools
  refuse to write there (`guarded_reason`) and commands see them read-only
  (`phasegraph.tools.sandbox`);
- `STARTUP_MODULES`: the modules Python imports at every start from any folder on its path
  (``sitecustomize``, ``usercustomize``); in such a folder inside the workspace they are refused
  as the trees are, and a command that makes one has it taken away.
"""

from __future__ import annotations

import functools
import os
import pwd
import site
import sys
from collections.abc import Iterable
from pathlib import Path

#: Folders that are never a workspace themselves: the top of the system's tree.
TOP_FOLDERS = frozenset(
    "/ /bin /boot /dev /etc /home /lib /lib32 /lib64 /libx32 /media /mnt /opt /proc /root "
    "/run /sbin /srv /sys /tmp /usr /var /var/lib /var/tmp /var/cache /var/log".split()
)
#: System trees no workspace lies in, at any depth: the system's programs and settings.
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
                "/proc", "/run", "/sbin", "/sys", "/usr", "/var/spool", "/var/log",
                "/var/lib/dpkg", "/var/lib/apt", "/var/lib/systemd")  # fmt: skip
#: Folders inside those trees that hold people's projects: the source folder Docker images
#: work in (WORKDIR /usr/src/app), a removable drive's mount point.
PROJECT_TREES = ("/usr/src", "/usr/local/src", "/run/media", "/media")
#: A home's dot-folders that hold no settings (a server's per-thread workspaces lie in one).
CACHE_FOLDERS = frozenset({".cache"})
#: Modules Python imports at its start from any folder on its path.
STARTUP_MODULES = ("sitecustomize", "usercustomize")
#: The least uid of a person's account (Debian's and Fedora's UID_MIN); root's home counts too.
PERSON_UID_MIN = 1000


def workspace_refusal(root: Path) -> str | None:
    """Why ``root`` (a resolved folder) cannot be a workspace, or None when it can.

    Refused: ``/`` and the folders at the top of the system's tree, anything inside a system
    tree (`SYSTEM_TREES`), a person's home folder itself (a project folder inside one is
    fine), and a folder that is, or lies inside, one of the `guarded_trees`.
    """
    text = str(root)
    hint = "; give the run a project folder as its workspace (--workspace, Context(workspace=...))"
    if text in TOP_FOLDERS:
        return f"the workspace {text!r} is a system folder{hint}"
    within_project_tree = any(text.startswith(t + "/") for t in PROJECT_TREES)
    for system in SYSTEM_TREES:
        if (text == system or text.startswith(system + "/")) and not within_project_tree:
            return f"the workspace {text!r} lies inside the system folder {system}{hint}"
    homes = home_folders()
    if root in homes:
        return f"the workspace {text!r} is a home folder{hint}"
    for home in homes:
        inside = root.relative_to(home).parts if root.is_relative_to(home) else ("",)
        if inside[0].startswith(".") and inside[0] not in CACHE_FOLDERS:
            setting = home / inside[0]
            return f"the workspace {text!r} lies in {setting}, a home's settings{hint}"
    if _laid_out_as_repository(root):
        return (
            f"the workspace {text!r} is a git repository's own folder (HEAD, objects, refs), "
            f"whose config git runs{hint}"
        )
    for tree in guarded_trees():
        if root == tree or root.is_relative_to(tree):
            return (
                f"the workspace {text!r} lies inside {tree}, which runs phasegraph (its Python "
                f"environment, its package or its sandbox){hint}"
            )
    return None


def guarded_reason(path: Path) -> str | None:
    """Why the file tools may not write ``path`` (resolved), or None when they may.

    It may not lie in one of the `guarded_trees`, nor be a `STARTUP_MODULES` module (a file
    of any suffix, ``.py``, ``.pyc``, ``.so``..., or a package) in a folder on the
    interpreter's path.
    """
    for tree in guarded_trees():
        if path == tree or path.is_relative_to(tree):
            return f"it lies in {tree}, which runs phasegraph, and is never written"
    for folder in startup_folders():
        if path.parent == folder or path.parent.parent == folder:
            name = path.name if path.parent == folder else path.parent.name
            if name.split(".")[0] in STARTUP_MODULES:
                return (
                    f"Python runs {name} at every start from {folder}, which is on its path; "
                    "it is never written"
                )
    return None


def guarded_within(root: Path) -> list[Path]:
    """The `guarded_trees` that lie inside ``root``, outermost first."""
    inside = [t for t in guarded_trees() if t != root and t.is_relative_to(root)]
    outermost = [t for t in inside if not any(t != o and t.is_relative_to(o) for o in inside)]
    return sorted(outermost)


def startup_modules(root: Path) -> list[Path]:
    """The startup modules that are in the workspace's folders on the path, of any suffix."""
    found = []
    for folder in startup_folders():
        if folder == root or folder.is_relative_to(root):
            for name in STARTUP_MODULES:
                found += [p for p in folder.glob(f"{name}*") if p.name.split(".")[0] == name]
    return found


def _laid_out_as_repository(root: Path) -> bool:
    """Whether ``root`` itself is laid out as git reads a repository (`git_layout`)."""
    from phasegraph.tools.git_layout import holds_layout

    try:
        return holds_layout({name.casefold() for name in os.listdir(root)})
    except OSError:
        return False


def startup_files_within(root: Path) -> list[Path]:
    """Where, inside ``root``, a `STARTUP_MODULES` module would be imported at Python's start."""
    found = []
    for folder in startup_folders():
        if folder == root or folder.is_relative_to(root):
            for name in STARTUP_MODULES:
                found += [folder / f"{name}.py", folder / name]
    return found


@functools.cache
def guarded_trees() -> tuple[Path, ...]:
    """What runs phasegraph: the interpreter's prefixes and site folders, the package, bwrap.

    Resolved once per process (symlinks followed), those that exist; a tree inside another
    is kept too, so that each is found by itself.
    """
    import phasegraph

    places: list[str] = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    places += site.getsitepackages()
    places.append(site.getusersitepackages())
    places.append(os.path.dirname(phasegraph.__file__))
    places += _sandbox_folders()
    return _existing(places)


@functools.cache
def startup_folders() -> tuple[Path, ...]:
    """The folders on the interpreter's path, resolved, where Python looks at its start."""
    return _existing(p for p in sys.path if p)


def home_folders() -> frozenset[Path]:
    """Home folders: this process's, and those of root and of the people with an account."""
    homes = {os.path.expanduser("~"), str(Path.home())}
    try:
        accounts = pwd.getpwall()
    except OSError:  # no account database: this process's home alone
        accounts = []
    for account in accounts:
        if account.pw_uid == 0 or PERSON_UID_MIN <= account.pw_uid < 65534:
            homes.add(account.pw_dir)
    return frozenset(Path(os.path.realpath(h)) for h in homes if h and h != "/")


def _sandbox_folders() -> list[str]:
    """The folder of the bubblewrap binary commands run under, and of the package that has it."""
    from phasegraph.tools.sandbox import bwrap_binary

    binary = bwrap_binary()
    if binary is None:
        return []
    folder = os.path.dirname(os.path.realpath(binary))
    # the system's own (/usr/bin) is no workspace's; a bundled one's package folder is
    return [] if folder in {"/usr/bin", "/bin", "/usr/local/bin"} else [folder]


def _existing(places: Iterable[str]) -> tuple[Path, ...]:
    found: list[Path] = []
    for place in places:
        real = Path(os.path.realpath(place))
        if real.is_dir() and real not in found and str(real) != "/":
            found.append(real)
    return tuple(found)
