"""The system-call filter a sandboxed command runs under (SPEC section 5).

A seccomp program, in classic BPF as the kernel takes it, that answers ``EPERM`` to the calls
a command has no use for and that reach past its namespaces: the kernel's key store, tracing
and debugging interfaces, mounting and new namespaces, module and kexec loading, the clock, swap,
reboot, io_uring, and handles that open files by inode. Everything else is allowed: programs run
as they always do. On an architecture this table does not know, and for the x32 calls of
x86-64, every call numbered here or not is refused rather than guessed at.
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
_X32_BIT = 0x40000000

# classic BPF, as <linux/filter.h> and <linux/seccomp.h> define it
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_OFFSET_NR, _OFFSET_ARCH = 0, 4
_ALLOW = 0x7FFF0000
_REFUSE = 0x00050000 | errno.EPERM  # SECCOMP_RET_ERRNO


def refused_calls(machine: str | None = None) -> dict[str, int]:
    """The calls the filter refuses on this machine's architecture (empty: unknown arch)."""
    return dict(_REFUSED.get(machine or platform.machine(), {}))


def filter_program(machine: str | None = None) -> bytes:
    """The filter as the bytes of its ``struct sock_filter`` array, for ``bwrap --seccomp``."""
    arch = machine or platform.machine()
    calls = sorted(_REFUSED.get(arch, {}).values())
    code: list[tuple[int, int, int, int]] = []
    if arch not in _AUDIT_ARCH:
        return _pack([(_RET_K, 0, 0, _REFUSE)])
    code.append((_LD_W_ABS, 0, 0, _OFFSET_ARCH))
    code.append((_JEQ_K, 1, 0, _AUDIT_ARCH[arch]))  # another ABI of this machine: refused
    code.append((_RET_K, 0, 0, _REFUSE))
    code.append((_LD_W_ABS, 0, 0, _OFFSET_NR))
    if arch == "x86_64":
        code.append((_JGE_K, len(calls) + 1, 0, _X32_BIT))  # to the refusal at the end
    for index, number in enumerate(calls):
        code.append((_JEQ_K, len(calls) - index, 0, number))  # to the refusal at the end
    code.append((_RET_K, 0, 0, _ALLOW))
    code.append((_RET_K, 0, 0, _REFUSE))
    return _pack(code)


def _pack(code: list[tuple[int, int, int, int]]) -> bytes:
    return b"".join(struct.pack("=HBBI", op, jt, jf, k) for op, jt, jf, k in code)
