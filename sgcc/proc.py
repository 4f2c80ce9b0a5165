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
        """User plus system CPU seconds of the child and the descendants it waited for
        (with a ``spawner`` such as the box's: of every process of the run)."""
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


_CLONE_NEWNS = 0x00020000
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18


def _place(libc, place: tuple[str, str], cwd: str | None) -> None:
    """In the child: a private mount namespace (in a user namespace of its own unless root,
    the uid and gid mapped to themselves) where ``place[0]`` is mounted over ``place[1]``;
    then into ``cwd`` again, so that a directory under ``place[1]`` is the mounted one."""
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(_CLONE_NEWNS if uid == 0 else _CLONE_NEWUSER | _CLONE_NEWNS) != 0:
        raise OSError("unshare")
    if uid != 0:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)
    if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        raise OSError("make / private")
    if libc.mount(place[0].encode(), place[1].encode(), None, _MS_BIND | _MS_REC, None) != 0:
        raise OSError(f"bind {place[0]} over {place[1]}")
    os.chdir(cwd or place[1])


def _preexec(limits: Limits | None, isolate_network: bool, drop_privileges: bool, libc,
             place: tuple[str, str] | None = None, cwd: str | None = None):
    """Build the function the child runs between fork and exec.

    Order matters: the mount namespace of ``place`` and the network namespace need
    privileges, so they are made before they are dropped; limits come last so they bind the
    unprivileged user (RLIMIT_NPROC does not bind root).
    """

    def child() -> None:
        if place is not None:
            try:
                _place(libc, place, cwd)
            except OSError as exc:
                os.write(2, f"sgcc: cannot place {place[0]} at {place[1]}: {exc}\n".encode())
                os._exit(126)
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
    spawner=None,
    place: tuple[str | os.PathLike, str | os.PathLike] | None = None,
) -> Result:
    """Run ``argv`` to completion and return what it did.

    The child gets its own session (so its whole process group can be killed), stdin from
    ``stdin`` (or /dev/null), and stdout/stderr captured up to ``capture_limit`` bytes each;
    past that, or past ``timeout`` seconds of wall time, the group is killed and the result
    says so. The group is killed on return in every case, so nothing a child left running
    outlives the call. ``check=True`` raises :class:`SgccError` on a non-zero exit.

    ``spawner`` starts the child instead of ``subprocess``: called as
    ``spawner(argv, (stdin_fd, stdout_fd, stderr_fd), env, limits)``, it returns an object
    with the ``pid`` to wait for and ``finish(wait_status, rusage, killed)`` (killed: by run, for time or output) giving
    ``(returncode, user, sys, maxrss_kb, notes)`` (see :mod:`sgcc.verify.box.isolate`, whose
    box reports the CPU time of every process of the run). ``cwd``, ``isolate_network`` and
    ``drop_privileges`` are then the spawner's business.

    ``place=(DIR, AT)`` runs the child in a private mount namespace where the host directory
    ``DIR`` is mounted over ``AT`` (a project's copy where its build put the tree,
    :mod:`sgcc.project.place`); the rest of the file system is the host's. ``cwd`` is then
    entered after the mount (a path under ``AT`` is the copy's). Exit status 126 when the
    kernel refuses (:func:`placing_available` says beforehand).
    """
    argv = [os.fspath(a) for a in argv]
    start = time.perf_counter()
    spawned = None
    if spawner is not None:
        child_fds: list[int] = []
        ours: list[int] = []
        try:
            if stdin is not None:
                r, w = os.pipe2(os.O_CLOEXEC)
                child_fds.append(r)
                ours.append(w)
            else:
                child_fds.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
                ours.append(-1)
            for _ in range(2):
                r, w = os.pipe2(os.O_CLOEXEC)
                child_fds.append(w)
                ours.append(r)
            spawned = spawner(argv, tuple(child_fds), env if env is not None else dict(os.environ), limits)
        except OSError as exc:
            for fd in child_fds + ours:
                if fd >= 0:
                    os.close(fd)
            raise SgccError(f"cannot run {argv[0]}", cause=exc) from exc
        for fd in child_fds:
            os.close(fd)
        pid, in_fd, out_fd, err_fd = spawned.pid, ours[0], ours[1], ours[2]
    else:
        needs_preexec = limits is not None or isolate_network or drop_privileges or place is not None
        libc = _libc() if isolate_network or place is not None else None
        placed = None if place is None else (os.fspath(place[0]), os.fspath(place[1]))
        preexec = _preexec(limits, isolate_network, drop_privileges, libc, placed,
                           None if cwd is None else os.path.abspath(cwd)) if needs_preexec else None
        try:
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd if place is None else None,  # entered after the mount (_place)
                env=env,
                start_new_session=True,
                preexec_fn=preexec,
                close_fds=True,
            )
        except OSError as exc:
            raise SgccError(f"cannot run {argv[0]}", cause=exc) from exc
        # Take the descriptors over from the Popen object: one loop below serves both ways.
        pid = popen.pid
        in_fd = os.dup(popen.stdin.fileno()) if popen.stdin is not None else -1
        assert popen.stdout is not None and popen.stderr is not None  # both are PIPEs
        out_fd, err_fd = os.dup(popen.stdout.fileno()), os.dup(popen.stderr.fileno())
        for stream in (popen.stdin, popen.stdout, popen.stderr):
            if stream is not None:
                stream.close()
        popen.returncode = 0  # reaped below with wait4; keeps Popen's destructor quiet

    out, err = bytearray(), bytearray()
    timed_out = truncated = False
    finished = False
    deadline = None if timeout is None else start + timeout
    sel = selectors.DefaultSelector()
    sel.register(out_fd, selectors.EVENT_READ, out)
    sel.register(err_fd, selectors.EVENT_READ, err)
    open_fds = {out_fd, err_fd}
    pending = memoryview(stdin) if stdin else None
    if in_fd >= 0:
        open_fds.add(in_fd)
        if pending:
            os.set_blocking(in_fd, False)
            sel.register(in_fd, selectors.EVENT_WRITE, None)
        else:
            os.close(in_fd)
            open_fds.discard(in_fd)
    try:
        while sel.get_map():
            wait = None if deadline is None else deadline - time.perf_counter()
            if wait is not None and wait <= 0:
                timed_out = True
                break
            for key, _ in sel.select(wait):
                if key.data is None:  # stdin writable
                    assert pending is not None  # registered only with something to write
                    try:
                        n = os.write(key.fd, pending[:65536])
                    except (BrokenPipeError, BlockingIOError) as exc:
                        n = 0 if isinstance(exc, BlockingIOError) else len(pending)
                    pending = pending[n:]
                    if not pending:
                        sel.unregister(key.fd)
                        os.close(key.fd)
                        open_fds.discard(key.fd)
                    continue
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                buf = key.data
                room = capture_limit - len(buf)
                buf += chunk[: max(room, 0)]
                if len(chunk) > room:
                    truncated = True
            if truncated:
                break
        finished = True
    finally:
        if timed_out or truncated or not finished:
            # Not finished: an exception (an interrupt, SIGTERM) is unwinding; the child must
            # not outlive it, and waiting for it below must not hang.
            _kill_group(pid)
        sel.close()
        for fd in open_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        _, status, usage = _wait4(pid)
        wall = time.perf_counter() - start
        # Whatever the child left behind in its group dies with it.
        _kill_group(pid)

    notes: list[str] = []
    if spawned is not None:
        returncode, user, sys_, maxrss, notes = spawned.finish(status, usage, timed_out or truncated)
    else:
        returncode, user, sys_ = os.waitstatus_to_exitcode(status), usage.ru_utime, usage.ru_stime
        maxrss = usage.ru_maxrss
    result = Result(
        argv=argv,
        returncode=returncode,
        stdout=bytes(out),
        stderr=bytes(err),
        wall=wall,
        user=user,
        sys=sys_,
        timed_out=timed_out,
        truncated=truncated,
        maxrss_kb=maxrss,
        notes=notes,
    )
    if check and not result.ok:
        detail = result.stderr.decode(errors="replace").strip()[-2000:]
        what = f"{os.path.basename(argv[0])} failed ({result.describe()})"
        raise SgccError(what + (f":\n{detail}" if detail else ""))
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
_PLACING: bool | None = None


def placing_available() -> bool:
    """Whether :func:`run` can ``place`` a directory here (a private mount namespace; in a
    user namespace unless root): probed once."""
    global _PLACING
    if _PLACING is None:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="sgcc-place-") as d:
            a, b = os.path.join(d, "a"), os.path.join(d, "b")
            os.mkdir(a)
            os.mkdir(b)
            with open(os.path.join(a, "mark"), "w"):
                pass
            try:
                r = run(["/bin/sh", "-c", "test -e mark"], cwd=b, place=(a, b), timeout=10)
                _PLACING = r.returncode == 0
            except SgccError:
                _PLACING = False
    return _PLACING


def network_isolation_available() -> bool:
    """Whether children can be put in a fresh network namespace here (probed once)."""
    global _NETWORK_ISOLATION
    if _NETWORK_ISOLATION is None:
        try:
            _NETWORK_ISOLATION = run(["true"], isolate_network=True, timeout=10).returncode == 0
        except SgccError:
            _NETWORK_ISOLATION = False
    return _NETWORK_ISOLATION
