"""The one place sgcc runs subprocesses.

Every external program sgcc starts (gcc, the assembler, test binaries, make) goes through
:func:`run`: an argv list (never a shell string), a wall-clock timeout, captured and capped
output, its own process group that is killed when the call returns, optional resource
limits, optional loss of network and privileges, and the child's CPU time from ``wait4``.

The only exception is the drop-in's pass-through, which *replaces* the sgcc process with the
real compiler (``os.execv``) so that gcc's exit status, output and timing are gcc's own.
"""

from __future__ import annotations

import os
import resource
import selectors
import signal
import subprocess
import time

from sgcc.errors import SgccError

#: Default cap on captured stdout/stderr, per stream.
DEFAULT_CAPTURE = 64 * 1024 * 1024

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
NOBODY = 65534


class Limits:
    """Resource limits applied in the child before it runs (``setrlimit``).

    ``None`` leaves a limit as inherited. ``cpu`` is in seconds, sizes in bytes.
    (A plain class, not a dataclass: importing dataclasses costs every compile ~6 ms.)
    """

    __slots__ = ("cpu", "address_space", "file_size", "processes", "open_files", "core")

    def __init__(self, cpu: int | None = None, address_space: int | None = None, file_size: int | None = None,
                 processes: int | None = None, open_files: int | None = None, core: int | None = 0):
        self.cpu, self.address_space, self.file_size = cpu, address_space, file_size
        self.processes, self.open_files, self.core = processes, open_files, core

    def __eq__(self, other) -> bool:
        return isinstance(other, Limits) and all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self) -> str:
        return "Limits(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"

    def apply(self) -> None:
        pairs = [
            (resource.RLIMIT_CPU, self.cpu),
            (resource.RLIMIT_AS, self.address_space),
            (resource.RLIMIT_FSIZE, self.file_size),
            (resource.RLIMIT_NPROC, self.processes),
            (resource.RLIMIT_NOFILE, self.open_files),
            (resource.RLIMIT_CORE, self.core),
        ]
        for which, value in pairs:
            if value is not None:
                # CPU: the hard limit one second above the soft one makes the kernel send
                # SIGXCPU first, which names the cause better than a bare SIGKILL.
                hard = value + 1 if which == resource.RLIMIT_CPU else value
                resource.setrlimit(which, (value, hard))


class Result:
    """What a finished (or killed) child did."""

    def __init__(self, argv: list[str], returncode: int, stdout: bytes = b"", stderr: bytes = b"",
                 wall: float = 0.0, user: float = 0.0, sys: float = 0.0, timed_out: bool = False,
                 truncated: bool = False, maxrss_kb: int = 0, notes: list[str] | None = None):
        self.argv, self.returncode, self.stdout, self.stderr = argv, returncode, stdout, stderr
        self.wall, self.user, self.sys = wall, user, sys
        self.timed_out, self.truncated, self.maxrss_kb = timed_out, truncated, maxrss_kb
        self.notes = notes if notes is not None else []

    def __repr__(self) -> str:
        return f"Result(argv={self.argv!r}, returncode={self.returncode!r}, timed_out={self.timed_out!r})"

    @property
    def cpu(self) -> float:
        """User plus system CPU seconds of the child and the descendants it waited for."""
        return self.user + self.sys

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode < 0 else None

    def describe(self) -> str:
        """A one-line account of how the child ended, for reports and errors."""
        if self.timed_out:
            return "timed out"
        if self.truncated:
            return "output over the limit"
        if self.returncode < 0:
            try:
                name = signal.Signals(-self.returncode).name
            except ValueError:
                name = f"signal {-self.returncode}"
            return f"killed by {name}"
        return f"exit status {self.returncode}"


def _preexec(limits: Limits | None, isolate_network: bool, drop_privileges: bool, libc):
    """Build the function the child runs between fork and exec.

    Order matters: the network namespace needs privileges, so it is made before they are
    dropped; limits come last so they bind the unprivileged user (RLIMIT_NPROC does not
    bind root).
    """

    def child() -> None:
        if isolate_network:
            flags = _CLONE_NEWNET if os.geteuid() == 0 else (_CLONE_NEWUSER | _CLONE_NEWNET)
            if libc.unshare(flags) != 0:
                os._exit(126)
        if drop_privileges and os.geteuid() == 0:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
        if limits is not None:
            limits.apply()

    return child


def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def run(
    argv: list[str],
    *,
    stdin: bytes | None = None,
    cwd: str | os.PathLike | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    limits: Limits | None = None,
    capture_limit: int = DEFAULT_CAPTURE,
    isolate_network: bool = False,
    drop_privileges: bool = False,
    check: bool = False,
) -> Result:
    """Run ``argv`` to completion and return what it did.

    The child gets its own session (so its whole process group can be killed), stdin from
    ``stdin`` (or /dev/null), and stdout/stderr captured up to ``capture_limit`` bytes each;
    past that, or past ``timeout`` seconds of wall time, the group is killed and the result
    says so. The group is killed on return in every case, so nothing a child left running
    outlives the call. ``check=True`` raises :class:`SgccError` on a non-zero exit.
    """
    argv = [os.fspath(a) for a in argv]
    needs_preexec = limits is not None or isolate_network or drop_privileges
    libc = _libc() if isolate_network else None
    preexec = _preexec(limits, isolate_network, drop_privileges, libc) if needs_preexec else None
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
            preexec_fn=preexec,
            close_fds=True,
        )
    except OSError as exc:
        raise SgccError(f"cannot run {argv[0]}", cause=exc) from exc

    out, err = bytearray(), bytearray()
    timed_out = truncated = False
    deadline = None if timeout is None else start + timeout
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    pending = memoryview(stdin) if stdin else None
    if proc.stdin is not None:
        if pending:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin, selectors.EVENT_WRITE, None)
        else:
            proc.stdin.close()
    try:
        while sel.get_map():
            wait = None if deadline is None else deadline - time.perf_counter()
            if wait is not None and wait <= 0:
                timed_out = True
                break
            for key, _ in sel.select(wait):
                if key.data is None:  # stdin writable
                    try:
                        n = os.write(key.fd, pending[:65536])
                    except (BrokenPipeError, BlockingIOError) as exc:
                        n = 0 if isinstance(exc, BlockingIOError) else len(pending)
                    pending = pending[n:]
                    if not pending:
                        sel.unregister(key.fileobj)
                        key.fileobj.close()
                    continue
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                buf = key.data
                room = capture_limit - len(buf)
                buf += chunk[: max(room, 0)]
                if len(chunk) > room:
                    truncated = True
            if truncated:
                break
    finally:
        if timed_out or truncated:
            _kill_group(proc.pid)
        sel.close()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()
        _, status, usage = _wait4(proc.pid)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        # Whatever the child left behind in its group dies with it.
        _kill_group(proc.pid)

    result = Result(
        argv=argv,
        returncode=proc.returncode,
        stdout=bytes(out),
        stderr=bytes(err),
        wall=wall,
        user=usage.ru_utime,
        sys=usage.ru_stime,
        timed_out=timed_out,
        truncated=truncated,
        maxrss_kb=usage.ru_maxrss,
    )
    if check and not result.ok:
        detail = result.stderr.decode(errors="replace").strip()[-2000:]
        raise SgccError(f"{os.path.basename(argv[0])} failed ({result.describe()})" + (f":\n{detail}" if detail else ""))
    return result


def _wait4(pid: int):
    while True:
        try:
            return os.wait4(pid, 0)
        except InterruptedError:
            continue


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


_NETWORK_ISOLATION: bool | None = None


def network_isolation_available() -> bool:
    """Whether children can be put in a fresh network namespace here (probed once)."""
    global _NETWORK_ISOLATION
    if _NETWORK_ISOLATION is None:
        try:
            _NETWORK_ISOLATION = run(["true"], isolate_network=True, timeout=10).returncode == 0
        except SgccError:
            _NETWORK_ISOLATION = False
    return _NETWORK_ISOLATION
