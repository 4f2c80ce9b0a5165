"""The syscall filter every isolated run gets: a classic-BPF seccomp program built here.

Why a hand-built program and not libseccomp: the filter is a short deny list, the only
Python bindings that install with pip alone are unmaintained or brand new, and a BPF program
of a few dozen instructions can be read and tested whole (``tests/test_isolation.py`` runs
a program that tries each denied call). x86-64 only, like the rest of sgcc's checks.

What it denies, with ``EPERM`` (what a hardened system answers, so a test program that
probes does not crash): anything that changes the mount table, namespaces, or the kernel;
debugging or reading other processes (``ptrace``, ``process_vm_*``, ``kcmp``); kernel
interfaces with a record of exploits and no use in a test (``bpf``, ``perf_event_open``,
``userfaultfd``, ``keyctl``, ``io_uring`` which also bypasses seccomp); ``clone`` with any
namespace flag. ``clone3`` answers ``ENOSYS`` (its flags sit behind a pointer a filter
cannot read), so the C library falls back to ``clone``, whose flags it can. Any other
architecture (the 32-bit ABI through ``int $0x80``, x32) kills the process.
"""

from __future__ import annotations

import struct

# x86-64 syscall numbers (asm/unistd_64.h).
DENIED = {
    "ptrace": 101, "syslog": 103, "adjtimex": 159, "pivot_root": 155,
    "chroot": 161, "acct": 163, "settimeofday": 164, "mount": 165, "umount2": 166, "swapon": 167,
    "swapoff": 168, "reboot": 169, "sethostname": 170, "setdomainname": 171, "iopl": 172,
    "ioperm": 173, "init_module": 175, "delete_module": 176, "quotactl": 179,
    "lookup_dcookie": 212, "clock_settime": 227, "kexec_load": 246, "add_key": 248,
    "request_key": 249, "keyctl": 250, "unshare": 272, "perf_event_open": 298,
    "fanotify_init": 300, "name_to_handle_at": 303, "open_by_handle_at": 304, "clock_adjtime": 305,
    "setns": 308, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
    "finit_module": 313, "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
    "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442, "vhangup": 153,
}
SYS_CLONE = 56
SYS_CLONE3 = 435
#: clone() flags that make namespaces (CLONE_NEWTIME shares its bit with the exit signal).
CLONE_NS_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
EPERM, ENOSYS = 1, 38

# BPF opcodes (linux/filter.h, linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
# Offsets in struct seccomp_data: nr, arch, instruction_pointer, args[6].
_NR, _ARCH, _ARG0_LO = 0, 4, 16


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program() -> bytes:
    """The filter as packed ``struct sock_filter`` instructions (8 bytes each)."""
    deny = sorted(set(DENIED.values()))
    out = [
        _insn(_LD_W_ABS, 0, 0, _ARCH),
        _insn(_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        _insn(_RET_K, 0, 0, RET_KILL_PROCESS),
        _insn(_LD_W_ABS, 0, 0, _NR),
        _insn(_JGE_K, 0, 1, X32_SYSCALL_BIT),
        _insn(_RET_K, 0, 0, RET_KILL_PROCESS),
    ]
    # One compare per denied call; a match jumps to the shared EPERM at the end. Offsets are
    # counted from the instruction after the jump.
    tail = len(deny)  # instructions between the first compare and the EPERM return
    for i, nr in enumerate(deny):
        out.append(_insn(_JEQ_K, tail - i + 5, 0, nr))
    # clone with namespace flags -> EPERM; clone3 -> ENOSYS.
    out += [
        _insn(_JEQ_K, 0, 2, SYS_CLONE),                # +0
        _insn(_LD_W_ABS, 0, 0, _ARG0_LO),              # +1
        _insn(_JSET_K, 3, 2, CLONE_NS_FLAGS),          # +2 -> EPERM / ALLOW
        _insn(_JEQ_K, 0, 1, SYS_CLONE3),               # +3
        _insn(_RET_K, 0, 0, RET_ERRNO | ENOSYS),       # +4
        _insn(_RET_K, 0, 0, RET_ALLOW),                # +5
        _insn(_RET_K, 0, 0, RET_ERRNO | EPERM),        # +6
    ]
    return b"".join(out)


class Filter:
    """A filter ready to install in a child between fork and exec (no allocation there)."""

    def __init__(self, libc):
        import ctypes

        code = program()
        self._buf = ctypes.create_string_buffer(code, len(code))

        class SockFprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        self._prog = SockFprog(len(code) // 8, ctypes.addressof(self._buf))
        self._ref = ctypes.byref(self._prog)
        self._libc = libc

    def install(self) -> int:
        """Install on the calling thread (needs no_new_privs); 0 on success, else errno."""
        import ctypes

        # prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)
        if self._libc.prctl(22, 2, self._ref, 0, 0) != 0:
            return ctypes.get_errno() or -1
        return 0
