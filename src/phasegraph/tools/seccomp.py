"""The system-call filter a sandboxed command runs under (SPEC section 5).

A seccomp program, in classic BPF as the kernel takes it, that answers ``EPERM`` to the calls
a command has no use for and that reach past its namespaces: the kernel's key store, tracing
and debugging interfaces, mounting and new namespaces, module and kexec loading, the clock, swap,
reboot, io_uring, and handles that open files by inode. Two kinds of call are allowed only with
some arguments: a file's mode may not get the setuid or setgid bit (``chmod`` and its kin,
``open`` and ``mknod`` creating one: ``EPERM``), since the workspace is the host's file system,
where such a file would run with its owner's rights; and a socket may only be of the families
a local command needs (Unix, IPv4, IPv6, netlink's routing): others answer ``EAFNOSUPPORT``.
Everything else is allowed: programs run as they always do. On an architecture this table
does not know, and for the x32 calls of x86-64, every call is refused rather than guessed at.
"""

from __future__ import annotations

import errno
import platform
import struct

# Linux's numbers of the refused calls, per architecture (unistd_64.h; the generic table).
_REFUSED: dict[str, dict[str, int]] = {
    "x86_64": {
        "ptrace": 101, "syslog": 103, "vhangup": 153, "pivot_root": 155, "adjtimex": 159,
        "chroot": 161, "acct": 163, "settimeofday": 164, "mount": 165, "umount2": 166,
        "swapon": 167, "swapoff": 168, "reboot": 169, "iopl": 172, "ioperm": 173,
        "init_module": 175, "delete_module": 176, "quotactl": 179, "lookup_dcookie": 212,
        "clock_settime": 227, "kexec_load": 246, "add_key": 248, "request_key": 249,
        "keyctl": 250, "unshare": 272, "perf_event_open": 298, "name_to_handle_at": 303,
        "open_by_handle_at": 304, "clock_adjtime": 305, "setns": 308, "process_vm_readv": 310,
        "process_vm_writev": 311, "kcmp": 312, "finit_module": 313, "kexec_file_load": 320,
        "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    },
    "aarch64": {
        "lookup_dcookie": 18, "umount2": 39, "mount": 40, "pivot_root": 41, "chroot": 51,
        "vhangup": 58, "quotactl": 60, "acct": 89, "unshare": 97, "kexec_load": 104,
        "init_module": 105, "delete_module": 106, "clock_settime": 112, "syslog": 116,
        "ptrace": 117, "reboot": 142, "settimeofday": 170, "adjtimex": 171, "add_key": 217,
        "request_key": 218, "keyctl": 219, "swapon": 224, "swapoff": 225,
        "perf_event_open": 241, "name_to_handle_at": 264, "open_by_handle_at": 265,
        "clock_adjtime": 266, "setns": 268, "process_vm_readv": 270, "process_vm_writev": 271,
        "kcmp": 272, "finit_module": 273, "bpf": 280, "userfaultfd": 282,
        "kexec_file_load": 294, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    },
}  # fmt: skip
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}

#: Calls that set a file's mode, by architecture: (number, the argument that holds the mode,
#: the argument that holds open's flags or None when the mode always applies).
_MODE_CALLS: dict[str, tuple[tuple[int, int, int | None], ...]] = {
    "x86_64": (
        (2, 2, 1),  # open(path, flags, mode)
        (85, 1, None),  # creat(path, mode)
        (90, 1, None),  # chmod(path, mode)
        (91, 1, None),  # fchmod(fd, mode)
        (133, 1, None),  # mknod(path, mode, dev)
        (257, 3, 2),  # openat(dirfd, path, flags, mode)
        (259, 2, None),  # mknodat(dirfd, path, mode, dev)
        (268, 2, None),  # fchmodat(dirfd, path, mode)
        (452, 2, None),  # fchmodat2(dirfd, path, mode, flags)
    ),
    "aarch64": (
        (33, 2, None),  # mknodat
        (52, 1, None),  # fchmod
        (53, 2, None),  # fchmodat
        (56, 3, 2),  # openat
        (452, 2, None),  # fchmodat2
    ),
}
#: openat2 takes its mode behind a pointer, which a filter cannot read: ENOSYS, and C
#: libraries and runtimes fall back to openat.
_OPENAT2 = 437
#: socket(domain, type, protocol) and socketpair, by architecture.
_SOCKET_CALLS = {"x86_64": (41, 53), "aarch64": (198, 199)}
#: The setuid and setgid bits of a mode.
SET_ID_BITS = 0o6000
#: O_CREAT and __O_TMPFILE: open's mode applies only with one of them.
_CREATES = 0o100 | 0o20000000
#: AF_UNIX, AF_INET, AF_INET6; AF_NETLINK only with NETLINK_ROUTE (protocol 0), which C
#: libraries use to list the addresses of the (loopback-only) network.
SOCKET_FAMILIES = (1, 2, 10)
_AF_NETLINK = 16
_X32_BIT = 0x40000000

#: clone and clone3 by architecture: clone may not make a namespace, clone3 is answered ENOSYS
#: (its flags are behind a pointer; C libraries then fall back to clone, which is checked).
_CLONE = {"x86_64": (56, 435), "aarch64": (220, 435)}
#: CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
#: CLONE_NEWNET, CLONE_NEWTIME: a new namespace would undo what the sandbox's are for.
_NEW_NAMESPACE = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000
_NEW_NAMESPACE |= 0x40000000 | 0x00000080

# classic BPF, as <linux/filter.h> and <linux/seccomp.h> define it
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_OFFSET_NR, _OFFSET_ARCH, _OFFSET_ARG0 = 0, 4, 16  # seccomp_data; arg 0's low word (LE)
_ARG_SIZE = 8
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000  # SECCOMP_RET_ERRNO
_REFUSE = _ERRNO | errno.EPERM
_NO_FAMILY = _ERRNO | errno.EAFNOSUPPORT


def refused_calls(machine: str | None = None) -> dict[str, int]:
    """The calls the filter refuses on this machine's architecture (empty: unknown arch)."""
    return dict(_REFUSED.get(machine or platform.machine(), {}))


Step = tuple[int, "str | None", "str | None", int]


def filter_program(machine: str | None = None) -> bytes:
    """The filter as the bytes of its ``struct sock_filter`` array, for ``bwrap --seccomp``."""
    arch = machine or platform.machine()
    if arch not in _AUDIT_ARCH:
        return _pack([(_RET_K, 0, 0, _REFUSE)])
    clone, clone3 = _CLONE[arch]
    steps: list[tuple[str | None, Step]] = [
        (None, (_LD_W_ABS, None, None, _OFFSET_ARCH)),
        (None, (_JEQ_K, "nr", "refuse", _AUDIT_ARCH[arch])),  # another ABI of this machine
        ("nr", (_LD_W_ABS, None, None, _OFFSET_NR)),
    ]
    if arch == "x86_64":
        steps.append((None, (_JGE_K, "refuse", None, _X32_BIT)))
    steps.append((None, (_JEQ_K, "nosys", None, clone3)))
    steps.append((None, (_JEQ_K, "nosys", None, _OPENAT2)))
    steps.append((None, (_JEQ_K, "clone", None, clone)))
    for number in _SOCKET_CALLS[arch]:
        steps.append((None, (_JEQ_K, "socket", None, number)))
    for number, mode, flags in _MODE_CALLS[arch]:
        steps.append((None, (_JEQ_K, _mode_label(mode, flags), None, number)))
    for number in sorted(_REFUSED[arch].values()):
        steps.append((None, (_JEQ_K, "refuse", None, number)))
    steps += [
        (None, (_RET_K, None, None, _ALLOW)),
        ("clone", (_LD_W_ABS, None, None, _arg(0))),
        (None, (_JSET_K, "refuse", None, _NEW_NAMESPACE)),
        (None, (_RET_K, None, None, _ALLOW)),
        *_socket_steps(),
        *_mode_steps(arch),
        ("refuse", (_RET_K, None, None, _REFUSE)),
        ("nosys", (_RET_K, None, None, _ERRNO | errno.ENOSYS)),
        ("allow", (_RET_K, None, None, _ALLOW)),
    ]
    return _pack(_assemble(steps))


def _arg(index: int) -> int:
    """The offset of argument ``index``'s low word in ``seccomp_data`` (little-endian)."""
    return _OFFSET_ARG0 + _ARG_SIZE * index


def _mode_label(mode: int, flags: int | None) -> str:
    return f"mode{mode}" if flags is None else f"create{flags}mode{mode}"


def _socket_steps() -> list[tuple[str | None, Step]]:
    """Socket and socketpair: a family of `SOCKET_FAMILIES`, or netlink's routing protocol."""
    steps: list[tuple[str | None, Step]] = [("socket", (_LD_W_ABS, None, None, _arg(0)))]
    for family in SOCKET_FAMILIES:
        steps.append((None, (_JEQ_K, "allow", None, family)))
    steps += [
        (None, (_JEQ_K, None, "no_family", _AF_NETLINK)),
        (None, (_LD_W_ABS, None, None, _arg(2))),
        (None, (_JEQ_K, "allow", "no_family", 0)),
        ("no_family", (_RET_K, None, None, _NO_FAMILY)),
    ]
    return steps


def _mode_steps(arch: str) -> list[tuple[str | None, Step]]:
    """One check per shape of mode call: the mode may not hold `SET_ID_BITS`.

    For open and openat the mode counts only when the flags create a file.
    """
    steps: list[tuple[str | None, Step]] = []
    for mode, flags in sorted({(m, f) for _, m, f in _MODE_CALLS[arch]}, key=str):
        label = _mode_label(mode, flags)
        if flags is not None:
            steps += [
                (label, (_LD_W_ABS, None, None, _arg(flags))),
                (None, (_JSET_K, None, "allow", _CREATES)),
                (None, (_LD_W_ABS, None, None, _arg(mode))),
            ]
        else:
            steps.append((label, (_LD_W_ABS, None, None, _arg(mode))))
        steps.append((None, (_JSET_K, "refuse", "allow", SET_ID_BITS)))
    return steps


def _assemble(steps: list[tuple[str | None, Step]]) -> list[tuple[int, int, int, int]]:
    """Steps with labelled jump targets, as instructions with relative jumps (0: the next)."""
    at = {label: i for i, (label, _) in enumerate(steps) if label}
    code = []
    for i, (_, (op, true, false, k)) in enumerate(steps):
        jt = at[true] - i - 1 if true else 0
        jf = at[false] - i - 1 if false else 0
        code.append((op, jt, jf, k))
    return code


def _pack(code: list[tuple[int, int, int, int]]) -> bytes:
    return b"".join(struct.pack("=HBBI", op, jt, jf, k) for op, jt, jf, k in code)
