"""One box per run: namespaces, a minimal file system, a syscall filter, whole-run limits.

Every run of candidate or baseline code goes through :func:`spawner`, which
:func:`sgcc.proc.run` calls instead of ``subprocess.Popen``. Three processes make a run::

    sgcc ──fork──> P ──fork──> init (pid 1) ──fork──> main (pid 2) ──exec──> ./prog
                   │            │                      │
                   │            │                      └ rlimits, no_new_privs, no-root
                   │            │                        securebits, seccomp, exec
                   │            └ mounts the minimal view, pivot_root, reaps every process
                   │              of the run, kills them all when main exits, reports
                   └ setsid, (root: becomes nobody), unshare(user|pid|mount|ipc|uts|net),
                     maps its own uid, waits for init

P and init are normally a small C helper (:mod:`sgcc.verify.box.boxhelper`, built once by the
host's gcc and started with ``vfork``), because forking the Python process twice per run
costs milliseconds; where it cannot be built, they are forks of sgcc calling ``unshare(2)``
and ``mount(2)`` through ctypes (the functions below, which the helper mirrors step by step).
Not util-linux ``unshare``: the box needs an init that is *not* the program (a pid-1 program
ignores signals it has no handler for, which changes what ``abort()`` or ``raise(SIGTERM)``
do) and that reports the CPU time of every process it reaped; ``unshare --fork`` makes the
program pid 1. Nothing here needs root, setuid helpers or packages: a kernel that lets
unprivileged users create user namespaces (the default on Debian and most distributions).

What the program sees is its own uid (root stays uid 0 *inside*, mapped to ``nobody``
outside, with no capabilities) and one synthetic world (:mod:`sgcc.verify.box.worlds`): the
user name, ``HOME`` (an empty private directory), the working directory, the binary's path
and ``argv[0]``, the environment and the host name differ from world to world, and none is
the user's own. See ``docs/isolation.md``.
"""

from __future__ import annotations

import errno
import fcntl
import os
import resource
import signal
import threading

from sgcc import proc
from sgcc.errors import SgccError
from sgcc.verify.box import seccomp

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
_NAMESPACES = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_REC, MS_PRIVATE, MS_RELATIME = 16384, 1 << 18, 1 << 21
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS = 1, 4, 28, 38
SECBIT_NOROOT, SECBIT_NOROOT_LOCKED = 1, 2
SYS_PIVOT_ROOT = 155
SYS_OPEN_TREE, SYS_MOVE_MOUNT = 428, 429
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC, MOVE_MOUNT_F_EMPTY_PATH = 1, 0o2000000, 4

#: System directories shown read-only (or re-created as the same symlinks).
SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
#: Device nodes bound into the private /dev.
DEVICES = ("null", "zero", "full", "random", "urandom")
#: A bind's source that is a descriptor sgcc handed to init (:func:`_source`).
PASSED_FD = "/proc/self/fd/"
#: How often init looks at the run's total memory while more than one process runs.
WATCH_PERIOD = 0.05
_PAGE = os.sysconf("SC_PAGE_SIZE")


class Identity:
    """Who runs the box: the invoking user's uid and gid, and the ids it has outside.

    Only the uid and gid are the user's own (a program may compare ``getuid()`` with a file's
    owner, and root must stay root); the name, home and everything else a run sees come from
    its world (:mod:`sgcc.verify.box.worlds`)."""

    __slots__ = ("uid", "gid", "outer_uid", "outer_gid")

    def __init__(self):
        self.uid, self.gid = os.getuid(), os.getgid()
        # Root runs the box as nobody outside (files it writes through a writable directory
        # belong to nobody); inside it is uid 0 without capabilities.
        self.outer_uid, self.outer_gid = (proc.NOBODY, proc.NOBODY) if self.uid == 0 else (self.uid, self.gid)


class Bind:
    """A host directory (or file) shown in a run at ``target``: writable, or read-only. A
    project's tree is shown where its build put it (:mod:`sgcc.project.place`), a tool its
    tests name read-only at its own path."""

    __slots__ = ("source", "target", "writable")

    def __init__(self, source, target=None, writable: bool = True):
        self.source = os.path.realpath(source)
        self.target = os.path.normpath(os.fspath(target)) if target is not None else self.source
        self.writable = writable

    def __repr__(self) -> str:
        return f"Bind({self.source!r}, {self.target!r}, writable={self.writable})"


class View:
    """What one run may see: ``binary`` at its world's path, ``writable`` host directories at
    their own paths (or :class:`Bind` entries: elsewhere, or read-only), and ``scratch`` bytes
    shared by its ``/tmp``, ``/dev/shm`` and home."""

    __slots__ = ("root", "binary", "writable", "scratch", "memory", "identity", "world")

    def __init__(self, root: str, binary: str, *, writable=(), scratch: int = 64 << 20,
                 memory: int | None = None, identity: Identity | None = None, world=None):
        from sgcc.verify.box import worlds

        self.root, self.binary = root, binary
        self.writable = tuple(w if isinstance(w, Bind) else Bind(w) for w in writable)
        self.scratch, self.memory = scratch, memory
        self.identity = identity or Identity()
        self.world = world if world is not None else worlds.make(1, self.identity.uid)[0]


# --------------------------------------------------------------------------- the parent side

_libc_lock = threading.Lock()
_libc_obj = None
_filter = None


def _libc():
    global _libc_obj, _filter
    with _libc_lock:
        if _libc_obj is None:
            import ctypes

            lib = ctypes.CDLL(None, use_errno=True)
            lib.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
            lib.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
            lib.syscall.restype = ctypes.c_long
            _filter = seccomp.Filter(lib)
            _libc_obj = lib
    return _libc_obj


class Spawned:
    """A started box: ``pid`` is P's; :meth:`finish` turns P's end and init's report into a result."""

    def __init__(self, pid: int, report_fd: int, argv0: str):
        self.pid, self._report_fd, self._argv0 = pid, report_fd, argv0

    def finish(self, status: int, usage, killed: bool) -> tuple[int, float, float, int, list[str]]:
        """(returncode, user, sys, maxrss_kb, notes) of the run; raises if it never started."""
        chunks = []
        os.set_blocking(self._report_fd, False)
        try:
            while True:
                try:
                    chunk = os.read(self._report_fd, 4096)
                except BlockingIOError:
                    break
                if not chunk:
                    break
                chunks.append(chunk)
        finally:
            os.close(self._report_fd)
        words = b"".join(chunks).decode(errors="replace").split()
        if words[:1] == ["ok"] and len(words) >= 5:
            code = os.waitstatus_to_exitcode(int(words[1]))
            return code, float(words[2]), float(words[3]), int(words[4]), words[5:]
        if killed:  # by sgcc, which already knows why
            return -signal.SIGKILL, usage.ru_utime, usage.ru_stime, usage.ru_maxrss, []
        if words[:1] == ["exec"]:
            errno = int(words[1]) if len(words) > 1 and words[1].isdigit() else 0
            raise SgccError(f"cannot run {self._argv0}: {os.strerror(errno) if errno else 'exec failed'}")
        detail = " ".join(words[1:]) if words[:1] == ["error"] else f"the box ended with {status:#x}"
        raise SgccError(f"cannot isolate the run of {self._argv0}: {detail}")


_helper_enabled = True


def use_helper(enabled: bool) -> None:
    """Whether :func:`spawner` uses the C helper by default (the probe turns it off where it fails)."""
    global _helper_enabled
    _helper_enabled = enabled


def spawner(view: View, *, helper: bool | None = None):
    """A function for :func:`sgcc.proc.run`'s ``spawner``: starts ``argv`` in a box showing ``view``.

    ``helper`` uses the C helper (:mod:`sgcc.verify.box.boxhelper`) where it can be built (the
    default, unless the probe found it does not run here); otherwise, or with
    ``helper=False``, P, init and main are forks of this process.
    """
    from sgcc.verify.box import boxhelper

    path = boxhelper.helper_path() if (_helper_enabled if helper is None else helper) else None

    def spawn(argv: list[str], fds: tuple[int, int, int], env: dict[str, str], limits) -> Spawned:
        libc = _libc()
        passed: list[int] = []
        try:
            plan = _plan(view, passed)
            if path is not None:
                return _spawn_helper(path, plan, view, argv, fds, env, limits, passed)
            report_r, report_w = os.pipe2(os.O_CLOEXEC)
            parent = os.getpid()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the child, reported through the pipe
                _child(libc, plan, view.identity, argv, fds, env, limits, report_w, view.memory, parent, passed)
            os.close(report_w)
            return Spawned(pid, report_r, argv[0])
        finally:
            for fd in passed:
                os.close(fd)

    return spawn


def _spawn_helper(path: str, plan, view: View, argv, fds, env, limits, passed=()) -> Spawned:
    import subprocess

    ident = view.identity
    lim = [] if limits is None else [limits.cpu, limits.address_space, limits.file_size, limits.processes,
                                     limits.open_files, limits.core]
    lim = [str(-1 if v is None else v) for v in lim] or ["-1"] * 6
    ops: list[str] = []
    for op in plan:
        kind, args = op[0], list(op[1:])
        if kind == "dir":
            args[1] = format(args[1], "o")
        elif kind in ("bind", "bindfile"):
            args = [args[0], args[1], "1" if len(args) > 2 and args[2] else "0"]
        ops += [kind, *(str(a) for a in args)]
    report_r, report_w = os.pipe2(os.O_CLOEXEC)
    try:
        cmd = [path, str(report_w), str(os.getpid()), str(ident.outer_uid), str(ident.outer_gid), str(ident.uid),
               str(ident.gid), str(view.memory or 0), _filter_hex(), *lim, *ops, "--", *argv]
        child = subprocess.Popen(cmd, stdin=fds[0], stdout=fds[1], stderr=fds[2], env=env,
                                 pass_fds=(report_w, *passed),
                                 start_new_session=True, close_fds=True)
    except BaseException:
        os.close(report_r)
        raise
    finally:
        os.close(report_w)
    child.returncode = 0  # reaped by proc.run with wait4; keeps Popen's destructor quiet
    return Spawned(child.pid, report_r, argv[0])


_hex: str | None = None


def _filter_hex() -> str:
    global _hex
    if _hex is None:
        _hex = seccomp.program().hex()
    return _hex


def _reachable(path: str, uid: int) -> bool:
    """Whether user ``uid`` can reach ``path`` through its directories (their modes, as a
    user of neither their owner nor their group)."""
    parent = os.path.dirname(path)
    while parent and parent != "/":
        try:
            st = os.stat(parent)
        except OSError:
            return False
        if st.st_uid != uid and not st.st_mode & 0o001:
            return False
        parent = os.path.dirname(parent)
    return True


def _source(w: Bind, ident: Identity, passed: list[int]) -> str:
    """The path init binds for ``w``: its source, or, where the box's user cannot reach it
    (sgcc runs as root, the box as nobody, a tool under /root), ``/proc/self/fd/N`` of a
    detached copy of that mount that sgcc made (``open_tree``) and hands to init, which
    attaches it (``move_mount``) and closes it: the run sees that one directory or file,
    never the way to it."""
    if ident.uid != 0 or ident.outer_uid == 0 or _reachable(w.source, ident.outer_uid):
        return w.source
    libc = _libc()
    opened = libc.syscall(SYS_OPEN_TREE, AT_FDCWD, w.source.encode(),
                          OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (AT_RECURSIVE if os.path.isdir(w.source) else 0))
    if opened < 0:
        import ctypes

        raise SgccError(f"cannot show {w.source} to the box's user (nobody, as sgcc runs as root): "
                        f"open_tree: {os.strerror(ctypes.get_errno())}")
    try:
        fd = fcntl.fcntl(opened, fcntl.F_DUPFD_CLOEXEC, 10)  # clear of 0-3, which the child rearranges
    finally:
        os.close(opened)
    passed.append(fd)
    return f"{PASSED_FD}{fd}"


def _plan(view: View, passed: list[int] | None = None) -> list[tuple]:
    """The mount operations init performs, computed in the parent (no lookups in the child).
    Descriptors it opens for init (:func:`_source`) are appended to ``passed``: the caller
    hands them over and closes its own copies."""
    passed = [] if passed is None else passed
    root = os.path.join(view.root, "mnt")
    ops: list[tuple] = [("tmpfs", root, view.scratch)]
    for name in SYSTEM_DIRS:
        host = "/" + name
        if os.path.islink(host):
            ops.append(("symlink", os.readlink(host), f"{root}/{name}"))
        elif os.path.isdir(host):
            ops.append(("bind", host, f"{root}/{name}", False))
    ops.append(("dir", f"{root}/etc", 0o755))
    ident, world = view.identity, view.world
    passwd = f"root:x:0:0:root:{world.home if ident.uid == 0 else '/root'}:{world.env_value('SHELL')}\n"
    group = "root:x:0:\n"
    if ident.uid != 0:
        passwd += f"{world.user}:x:{ident.uid}:{ident.gid}::{world.home}:{world.env_value('SHELL')}\n"
        group += f"{world.user}:x:{ident.gid}:\n"
    ops += [("file", f"{root}/etc/passwd", passwd), ("file", f"{root}/etc/group", group),
            ("file", f"{root}/etc/hostname", world.hostname + "\n"),
            ("file", f"{root}/etc/hosts", f"127.0.0.1\tlocalhost\n127.0.1.1\t{world.hostname}\n::1\tlocalhost\n"),
            ("file", f"{root}/etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files\n")]
    if os.path.isfile("/etc/ld.so.cache"):
        ops.append(("bindfile", "/etc/ld.so.cache", f"{root}/etc/ld.so.cache"))
    # Commands test suites call (cc, awk, c++...) are links through /etc/alternatives on
    # Debian: visible read-only, like /usr (links to system programs, nothing of the user's).
    if os.path.isdir("/etc/alternatives") and not os.path.islink("/etc/alternatives"):
        ops.append(("bind", "/etc/alternatives", f"{root}/etc/alternatives", False))
    if os.path.islink("/etc/localtime"):
        ops.append(("symlink", os.readlink("/etc/localtime"), f"{root}/etc/localtime"))
    ops.append(("dir", f"{root}/dev", 0o755))
    for dev in DEVICES:
        if os.path.exists(f"/dev/{dev}"):
            ops.append(("bindfile", f"/dev/{dev}", f"{root}/dev/{dev}", True))
    for link, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        ops.append(("symlink", target, f"{root}/dev/{link}"))
    ops += [("dir", f"{root}/dev/shm", 0o1777), ("dir", f"{root}/tmp", 0o1777),
            ("dir", f"{root}{world.home}", 0o700), ("dir", f"{root}{world.cwd}", 0o700),
            ("dir", f"{root}{world.bindir}", 0o700), ("dir", f"{root}/proc", 0o555)]
    for w in view.writable:
        ops.append(("bind" if os.path.isdir(w.source) else "bindfile", _source(w, ident, passed), f"{root}{w.target}",
                    w.writable))
    ops.append(("bindfile", view.binary, f"{root}{world.binary}"))
    # Writable places: each bound onto itself so that they stay writable when / turns read-only.
    for d in ("/tmp", "/dev/shm", world.home):
        ops.append(("self", f"{root}{d}"))
    ops += [("proc", f"{root}/proc"), ("hostname", world.hostname), ("pivot", root), ("readonly_root",),
            ("chdir", world.cwd)]
    return ops


# --------------------------------------------------------------------------- the child side
# Everything below runs in forked children of sgcc: no locks, no imports, no threads; every
# failure is written to the report pipe and ends the process.


def _child(libc, plan, ident: Identity, argv, fds, env, limits, report_w: int, memory,
           parent: int, passed=()) -> None:  # pragma: no cover
    try:
        # Move them all out of the way first: one of them may be 0..3 already.
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (*fds, report_w)]
        for target, fd in enumerate(high):
            os.dup2(fd, target)
        keep = sorted(fd for fd in passed if fd >= 4)  # descriptors init binds (_source), closed once mounted
        start = 4
        for fd in [*keep, 1 << 16]:
            os.closerange(start, fd)
            start = fd + 1
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        os.setsid()
        if os.getuid() == 0:
            os.setgroups([])
            os.setresgid(ident.outer_gid, ident.outer_gid, ident.outer_gid)
            os.setresuid(ident.outer_uid, ident.outer_uid, ident.outer_uid)
            # Changing uid made the process undumpable, which makes its /proc files root's.
            libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        _check(libc.unshare(_NAMESPACES), "unshare")
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{ident.uid} {ident.outer_uid} 1")
        _write("/proc/self/gid_map", f"{ident.gid} {ident.outer_gid} 1")
        # Only now: changing credentials (setuid, unshare) clears the parent-death signal.
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # sgcc died before that
            os._exit(125)
        pid = os.fork()
        if pid == 0:
            _init(libc, plan, argv, env, limits, memory)
        for fd in (0, 1, 2, 3):
            os.close(fd)
        _, status = os.waitpid(pid, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    except BaseException as exc:  # noqa: BLE001
        _fail(exc)


def _init(libc, plan, argv, env, limits, memory) -> None:  # pragma: no cover
    try:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # Init is a copy of sgcc, visible in the run's /proc as pid 1: undumpable, so the run
        # cannot read its memory, environment or files; its command line wiped, so that
        # /proc/1/cmdline (readable by anyone) shows neither sgcc's arguments nor paths.
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        _scrub_command_line(libc)
        notes = _mount(libc, plan)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        main = os.fork()
        if main == 0:
            _main(libc, argv, env, limits, err_w)
        os.close(err_w)
        for fd in (0, 1, 2):
            os.close(fd)
        failed = os.read(err_r, 64)
        os.close(err_r)
        if failed:
            os.write(3, b"exec " + failed)
            os._exit(1)
        watch = memory is not None and "noproc" not in notes
        status = None
        while status is None:
            while True:
                try:
                    pid, st, _ = os.wait4(-1, os.WNOHANG)
                except ChildProcessError:
                    pid = -1
                    break
                if pid == 0:
                    break
                if pid == main:
                    status = st
                    break
            if status is not None or pid == -1:
                break
            if watch:
                if signal.sigtimedwait({signal.SIGCHLD}, WATCH_PERIOD) is None and _over_memory(memory):
                    notes.append("memory")
                    os.kill(-1, signal.SIGKILL)
            else:
                signal.sigwaitinfo({signal.SIGCHLD})
        # The run ends with its main process: whatever it left behind dies now, unread.
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        report = f"ok {status if status is not None else 9} {usage.ru_utime!r} {usage.ru_stime!r} {usage.ru_maxrss}"
        os.write(3, (" ".join([report, *notes]) + "\n").encode())
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001
        _fail(exc)


def _main(libc, argv, env, limits, err_w: int) -> None:  # pragma: no cover
    try:
        os.close(3)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        if limits is not None:
            limits.apply()
        # Uid 0 inside keeps no capabilities across exec; nothing gains any afterwards.
        _check(libc.prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED, 0, 0, 0), "securebits")
        _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        if _filter is None or _filter.install() != 0:
            raise OSError(1, "seccomp")
        _exec_first_found(argv, env)
    except OSError as exc:
        os.write(err_w, str(exc.errno or 0).encode())
    except BaseException:  # noqa: BLE001
        os.write(err_w, b"0")
    os._exit(127)


def _exec_first_found(argv: list[str], env: dict[str, str]) -> None:  # pragma: no cover
    """Exec ``argv`` as a shell finds it: a name without ``/`` at the first ``PATH`` entry where
    it exists. Unlike ``os.execvpe``, which goes on down ``PATH`` after any error, a binary
    that cannot be executed fails the run: it must never let a system program of the same
    name (a world called ``test`` has /usr/bin/test after it) run in its place."""
    if "/" in argv[0]:
        os.execve(argv[0], argv, env)
    for entry in env.get("PATH", "/usr/bin:/bin").split(":"):
        try:
            os.execve(os.path.join(entry or ".", argv[0]), argv, env)
        except (FileNotFoundError, NotADirectoryError):
            continue
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0])


def _mount(libc, plan) -> list[str]:  # pragma: no cover
    notes: list[str] = []
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    for op in plan:
        kind = op[0]
        if kind == "tmpfs":
            data = f"size={op[2]},nr_inodes=16384,mode=0755".encode()
            _check(libc.mount(b"tmpfs", op[1].encode(), b"tmpfs", MS_NOSUID | MS_NODEV, data), "tmpfs")
        elif kind == "symlink":
            os.symlink(op[1], op[2])
        elif kind == "dir":
            os.makedirs(op[1], exist_ok=True)
            os.chmod(op[1], op[2])
        elif kind == "file":
            fd = os.open(op[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, op[2].encode())
            os.close(fd)
        elif kind in ("bind", "bindfile"):
            src, dst = op[1], op[2]
            writable = len(op) > 3 and op[3]
            if kind == "bind":
                os.makedirs(dst, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                os.close(os.open(dst, os.O_WRONLY | os.O_CREAT, 0o644))
            if src.startswith(PASSED_FD):
                fd = int(src[len(PASSED_FD):])
                _check(libc.syscall(SYS_MOVE_MOUNT, fd, b"", AT_FDCWD, dst.encode(), MOVE_MOUNT_F_EMPTY_PATH),
                       f"attach {src}")
                os.close(fd)
            else:
                _check(libc.mount(src.encode(), dst.encode(), None, MS_BIND | MS_REC, None), f"bind {src}")
            _remount(libc, dst, readonly=not writable, nodev=kind == "bind" or not writable)
        elif kind == "self":
            _check(libc.mount(op[1].encode(), op[1].encode(), None, MS_BIND | MS_REC, None), f"bind {op[1]}")
        elif kind == "proc":
            if libc.mount(b"proc", op[1].encode(), b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) != 0:
                notes.append("noproc")
        elif kind == "hostname":
            name = op[1].encode()
            _check(libc.sethostname(name, len(name)), "sethostname")
        elif kind == "pivot":
            os.chdir(op[1])
            # pivot_root(".", "."): the old root ends up under the new one, then goes.
            _check(libc.syscall(SYS_PIVOT_ROOT, b".", b"."), "pivot_root")
            _check(libc.umount2(b".", MNT_DETACH), "detach the old root")
            os.chdir("/")
        elif kind == "readonly_root":
            _check(libc.mount(None, b"/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None),
                   "read-only /")
        elif kind == "chdir":
            os.chdir(op[1])
    return notes


def _remount(libc, path: str, *, readonly: bool, nodev: bool) -> None:  # pragma: no cover
    """Remount a bind read-only/nosuid, keeping the flags the kernel locks in a user namespace."""
    flags = MS_REMOUNT | MS_BIND | MS_NOSUID
    st = os.statvfs(path).f_flag
    for st_bit, ms_bit in ((os.ST_NOEXEC, MS_NOEXEC), (os.ST_NOATIME, MS_NOATIME),
                           (os.ST_NODIRATIME, MS_NODIRATIME), (os.ST_RELATIME, MS_RELATIME),
                           (os.ST_NODEV, MS_NODEV)):
        if st & st_bit:
            flags |= ms_bit
    if readonly:
        flags |= MS_RDONLY
    if nodev:
        flags |= MS_NODEV
    _check(libc.mount(None, path.encode(), None, flags, None), f"remount {path}")


def _scrub_command_line(libc) -> None:  # pragma: no cover
    import ctypes

    with open("/proc/self/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    for start, end in ((int(fields[45]), int(fields[46])), (int(fields[47]), int(fields[48]))):
        if end > start:
            ctypes.memset(start, 0, end - start)
    name = b"init"
    if int(fields[46]) - int(fields[45]) > len(name):
        ctypes.memmove(int(fields[45]), name, len(name))
    libc.prctl(15, b"init", 0, 0, 0)  # PR_SET_NAME: /proc/1/comm


def _over_memory(limit: int) -> bool:  # pragma: no cover
    """Whether the processes of the run (more than one of them) hold over ``limit`` bytes."""
    pids = [p for p in os.listdir("/proc") if p.isdigit() and p != "1"]
    if len(pids) < 2:
        return False
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/statm", "rb") as f:
                total += int(f.read().split()[1]) * _PAGE
        except (OSError, ValueError, IndexError):
            pass
    return total > limit


def _check(rc: int, what: str) -> None:  # pragma: no cover
    if rc != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _write(path: str, text: str) -> None:  # pragma: no cover
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _fail(exc: BaseException) -> None:  # pragma: no cover
    try:
        msg = str(exc).replace("\n", " ")[:300] or type(exc).__name__
        os.write(3, f"error {msg}\n".encode())
    finally:
        os._exit(125)
