"""Running test binaries (possibly built from hostile, model-written assembly) safely.

A :class:`Sandbox` runs one binary on one stdin at a time, each run in its own box
(:mod:`sgcc.verify.box.isolate`): fresh user, pid, mount, ipc, uts and network namespaces, a
read-only minimal file system with a private size-capped ``/tmp``, ``/dev/shm`` and home, a
seccomp filter, limits on the whole run, every process killed when the main one exits, and
the CPU time of all of them counted. No run sees a fixed environment: each sandbox draws
its own synthetic worlds (:mod:`sgcc.verify.box.worlds`), and every test runs in each of them.
Where the kernel refuses a box, it falls back to what older versions did (below), and
:func:`sgcc.verify.box.isolation_level.isolation_report` says which layers are missing.

Tests follow the papers: a test is a stdin and the stdout (and exit status) the *original*
program produces on it. :func:`load_tests` reads them from a directory, :meth:`Sandbox.record`
fills in what is missing by running the baseline, :meth:`Sandbox.check` runs a candidate on
all of them and describes the first failure in a form that can be fed back to a model.

The fallback, and what it does not contain: a fresh scratch directory per run, rlimits, its
own process group, no network where a private network namespace is allowed, and ``nobody``
when sgcc runs as root. Without a mount namespace a program running as
``nobody`` can still read world-readable files and write to world-writable directories such
as ``/tmp`` (bounded by the file-size limit); a process that calls ``setsid`` leaves the
process group, so after every run the sandbox also kills any process still executing a
binary from its scratch tree, but one that has ``exec``'d something else escapes that sweep.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, replace
from pathlib import Path

from sgcc import proc
from sgcc.errors import SgccError
from sgcc.fsutil import read_bounded
from sgcc.verify.box import isolate, isolation_level
from sgcc.verify.box import worlds as worldsmod

#: Largest test file :func:`load_tests` accepts.
MAX_TEST_FILE = 64 << 20
#: Largest total size of one test directory.
MAX_TEST_TOTAL = 256 << 20
#: Bytes of stdin / expected / actual output quoted in a :class:`Failure`.
EXCERPT = 400

#: The environment variable whose size varies from run to run (see :meth:`Sandbox.run`).
PAD_VARIABLE = worldsmod.PAD_VARIABLE
_LS_COLORS = ("rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:cd=40;33;01:"
              "or=40;31;01:mi=00:su=37;41:sg=30;43:ca=00:tw=30;42:ow=34;42:st=37;44:ex=01;32:")
_EXTENSIONS = ("tar", "tgz", "arc", "arj", "taz", "lha", "lz4", "lzh", "lzma", "tlz", "txz", "tzo", "t7z",
               "zip", "z", "dz", "gz", "lrz", "lz", "lzo", "xz", "zst", "tzst", "bz2", "bz", "tbz", "tbz2",
               "tz", "deb", "rpm", "jar", "war", "ear", "sar", "rar", "alz", "ace", "zoo", "cpio", "7z",
               "rz", "cab", "wim", "swm", "dwm", "esd", "avif", "jpg", "jpeg", "mjpg", "mjpeg", "gif",
               "bmp", "pbm", "pgm", "ppm", "tga", "xbm", "xpm", "tif", "tiff", "png", "svg", "svgz", "mng",
               "pcx", "mov", "mpg", "mpeg", "m2v", "mkv", "webm", "webp", "ogm", "mp4", "m4v", "mp4v",
               "vob", "qt", "nuv", "wmv", "asf", "rm", "rmvb", "flc", "avi", "fli", "flv", "gl", "dl",
               "xcf", "xwd", "yuv", "cgm", "emf", "ogv", "ogx", "aac", "au", "flac", "m4a", "mid", "midi",
               "mka", "mp3", "mpc", "ogg", "ra", "wav", "oga", "opus", "spx", "xspf")
_LS_COLORS += "".join(f"*.{e}=01;{31 if i < 46 else 35 if i < 101 else 36}:" for i, e in enumerate(_EXTENSIONS))


def pad_value(size: int) -> str:
    """A plausible ``LS_COLORS`` value of exactly ``size`` characters (the layout padding)."""
    if size <= len(_LS_COLORS):
        return _LS_COLORS[:size]
    reps = -(-size // len(_LS_COLORS))
    return (_LS_COLORS * reps)[:size]



@dataclass(frozen=True)
class TestCase:
    """One test: the program's stdin and what it must do with it.

    ``expected_stdout`` / ``expected_status`` are ``None`` until known: from ``NAME.out`` /
    ``NAME.status`` files, or recorded from the baseline by :meth:`Sandbox.record`. A test
    whose status is still ``None`` when checked must exit with status 0.
    """

    __test__ = False  # not a pytest test class, despite its name

    name: str
    stdin: bytes
    expected_stdout: bytes | None = None
    expected_status: int | None = None


@dataclass(frozen=True)
class Failure:
    """Why a binary failed a test, with excerpts small enough to show a model.

    Nothing the binary printed is kept: candidate code is hostile, and its output (host file
    contents, say) must never reach a prompt, a report or the network. ``stdin`` and
    ``expected`` come from the test itself; ``line`` is the first line (from 1) where the
    output differs from the expected, when that is the reason.
    """

    test: str
    reason: str
    stdin: str
    expected: str
    line: int | None = None

    def render(self) -> str:
        """A short multi-line account, e.g. for an iterative-refinement prompt."""
        lines = [f"test {self.test}: {self.reason}", f"input:\n{self.stdin}"]
        if self.expected:
            lines.append(f"expected output:\n{self.expected}")
        return "\n".join(lines)


@dataclass(frozen=True)
class TestOutcome:
    """How many tests a binary passed, and the first one it failed (if any)."""

    __test__ = False

    passed: int
    total: int
    first_failure: Failure | None = None

    @property
    def ok(self) -> bool:
        """True when every test passed."""
        return self.passed == self.total and self.first_failure is None

    @property
    def fraction(self) -> float:
        """Fraction of tests passed (the papers' correctness-guided reward term)."""
        return self.passed / self.total if self.total else 1.0


# --------------------------------------------------------------------------- loading tests


def load_tests(directory: Path, *, max_file: int = MAX_TEST_FILE, max_total: int = MAX_TEST_TOTAL) -> list[TestCase]:
    """Read the tests in ``directory``, sorted by name.

    Each test is ``NAME.in`` (its stdin), with an optional ``NAME.out`` (expected stdout,
    compared byte for byte) and an optional ``NAME.status`` (expected exit status, a decimal
    number 0-255). Missing expectations are recorded from the baseline by
    :meth:`Sandbox.record`. Other files are ignored; a ``.out`` or ``.status`` without its
    ``.in`` is an error, since it is almost certainly a misnamed test.

    The directory may come from anywhere, so it is read defensively: only regular files,
    symlinks only if they stay inside the directory, each file at most ``max_file`` bytes and
    all of them together at most ``max_total``.
    """
    directory = Path(directory)
    try:
        base = directory.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise SgccError(f"test directory {directory} does not exist", cause=exc) from exc
    if not base.is_dir():
        raise SgccError(f"test directory {directory} is not a directory")
    try:
        names = sorted(entry.name for entry in os.scandir(base))
    except OSError as exc:
        raise SgccError(f"cannot read test directory {directory}", cause=exc) from exc

    inputs = {n[: -len(".in")] for n in names if n.endswith(".in")}
    for n in names:
        for suffix in (".out", ".status"):
            if n.endswith(suffix) and n[: -len(suffix)] not in inputs:
                raise SgccError(
                    f"test file {directory / n} has no matching {n[: -len(suffix)]}.in",
                    hint="each test is NAME.in (stdin) with optional NAME.out and NAME.status",
                )
    if "" in inputs:
        raise SgccError(f"test file {directory / '.in'} has an empty test name")
    if not inputs:
        raise SgccError(
            f"no tests in {directory}",
            hint="put one NAME.in file (the program's stdin) per test there, optionally with "
            "NAME.out (expected stdout); missing outputs are recorded from gcc -O3's binary",
        )

    budget = [max_total]
    tests = []
    for name in sorted(inputs):
        stdin = _read_test_file(base, f"{name}.in", max_file, budget)
        assert stdin is not None  # not optional: a missing input raises
        out = _read_test_file(base, f"{name}.out", max_file, budget, optional=True)
        status_text = _read_test_file(base, f"{name}.status", 64, budget, optional=True)
        status = None
        if status_text is not None:
            try:
                status = int(status_text.decode("ascii").strip())
            except (UnicodeDecodeError, ValueError):
                status = -1
            if not 0 <= status <= 255:
                raise SgccError(f"{directory / (name + '.status')} must hold an exit status from 0 to 255")
        tests.append(TestCase(name, stdin, out, status))
    return tests


def _read_test_file(base: Path, name: str, limit: int, budget: list[int], *, optional: bool = False) -> bytes | None:
    """Read ``base/name`` under the rules of :func:`load_tests`; None if optional and absent."""
    path = base / name
    try:
        real = path.resolve(strict=True)
    except FileNotFoundError:
        if optional:
            return None
        raise SgccError(f"test file {path} is missing or a dangling symlink") from None
    except (OSError, RuntimeError) as exc:
        raise SgccError(f"cannot resolve test file {path}", cause=exc) from exc
    if not real.is_relative_to(base):
        # A symlink pointing out of the directory would let a test directory read any file
        # (and then show it to a model in failure feedback).
        raise SgccError(f"test file {path} is a symlink leading outside {base}")
    # Bounded, regular files only, checked on the open descriptor (a file swapped after the
    # checks above is caught); a FIFO is refused without blocking.
    data = read_bounded(real, limit, what="test file", follow_symlinks=False)
    budget[0] -= len(data)
    if budget[0] < 0:
        raise SgccError(f"the tests in {base} are too large together")
    return data


# --------------------------------------------------------------------------- the sandbox

_warned_network = False
_warned_box = False
_warn_lock = threading.Lock()


def _warn_no_box(report) -> None:
    global _warned_box
    with _warn_lock:
        if _warned_box:
            return
        _warned_box = True
    print(f"sgcc: warning: test runs are not isolated here (isolation {report.describe()}); "
          "see docs/isolation.md", file=sys.stderr)


def _warn_no_network_isolation() -> None:
    global _warned_network
    with _warn_lock:
        if _warned_network:
            return
        _warned_network = True
    print(
        "sgcc: warning: no network isolation here: the kernel refused a private network "
        "namespace (unshare), so test binaries can reach the network",
        file=sys.stderr,
    )


class Sandbox:
    """Runs binaries under limits in throw-away directories; one per sgcc run.

    ``timeout`` is wall-clock seconds per run; ``cpu`` CPU seconds per process (default: the
    timeout rounded up, plus one, a backstop for what the wall clock misses); ``memory`` the
    address-space limit of each process and, in a box, the resident memory of all of them
    together; ``file_size`` the largest file a run may write and, in a box, all it may write
    (its ``/tmp``, ``/dev/shm`` and home share one tmpfs of that size); ``processes`` how
    many processes it may add; ``open_files`` its descriptor limit; ``output_limit`` the most
    stdout (and stderr) kept, past which the run is killed. ``keep=True`` leaves the scratch
    tree in place on :meth:`close` (for debugging); its path is :attr:`root`.

    ``worlds`` is how many synthetic worlds its runs are spread over (:mod:`sgcc.verify.box.worlds`,
    drawn afresh for every sandbox from the system's randomness; ``world_seed`` fixes them,
    for tests of sgcc itself); :attr:`worlds` holds them. :meth:`check` and :meth:`record`
    run every test in every world.

    :attr:`isolated` says whether runs are boxed (:mod:`sgcc.verify.box.isolate`); otherwise
    they run the older way, and :func:`sgcc.verify.box.isolation_level.isolation_report` says why.
    ``boxed=False`` asks for the older way (to compare them); ``True`` fails where no box is
    possible; ``None`` (the default) boxes where possible.
    """

    def __init__(
        self,
        *,
        timeout: float = 10.0,
        cpu: int | None = None,
        memory: int = 2 << 30,
        file_size: int = 64 << 20,
        processes: int = 64,
        open_files: int = 64,
        output_limit: int = 64 << 20,
        keep: bool = False,
        boxed: bool | None = None,
        expose=None,
        worlds: int = worldsmod.DEFAULT_COUNT,
        world_seed: int | None = None,
    ):
        self.timeout = timeout
        self.cpu = cpu if cpu is not None else math.ceil(timeout) + 1
        self.memory = memory
        self.file_size = file_size
        self.processes = processes
        self.open_files = open_files
        self.output_limit = output_limit
        self.keep = keep
        self.expose = expose  # binary -> what its runs also see (a project's tree: paths or isolate.Bind)
        available = isolation_level.isolation_report().boxed
        if boxed and not available:
            raise SgccError("test runs cannot be boxed here: " + isolation_level.isolation_report().describe())
        self.isolated = available if boxed is None else boxed
        if boxed is None and not available:
            _warn_no_box(isolation_level.isolation_report())
        self.identity = isolate.Identity()
        self.worlds: list[worldsmod.World] = worldsmod.make(worlds, self.identity.uid, world_seed)
        # RLIMIT_NPROC does not bind root, and root can write anywhere: as root, runs happen
        # as nobody (in a box: uid 0 inside, nobody outside, no capabilities).
        self.drop_privileges = os.geteuid() == 0
        self.isolate_network = self.isolated or proc.network_isolation_available()
        if not self.isolate_network:
            _warn_no_network_isolation()

        self._closed = False
        self.root = Path(tempfile.mkdtemp(prefix="sgcc-sandbox-"))
        self._finalizer = None if keep else weakref.finalize(self, _rmtree, str(self.root))
        self._bin = self.root / "bin"
        self._runs = self.root / "run"
        # 0711: nobody may pass through to its run directory and binary, but not list them.
        # "mnt" is where each box mounts its root (in its own mount namespace).
        for d in (self.root, self._bin, self._runs, self.root / "mnt"):
            d.mkdir(exist_ok=True)
            os.chmod(d, 0o711)
        if self.drop_privileges:
            self._check_reachable_by_nobody()
        self._copies: dict[tuple, Path] = {}
        self._free: list[Path] = []
        self._lock = threading.Lock()

    # -- lifecycle

    def close(self) -> None:
        """Kill anything left running from this sandbox and delete its scratch tree."""
        if self._closed:
            return
        self._closed = True
        self._sweep(self.root)
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- running

    def run(self, binary: Path, stdin: bytes, *, env_pad: int | None = None, world: int = 0,
            prefix: list[str] | None = None, timeout: float | None = None, memory: int | None = None,
            writable: tuple[Path, ...] | list[Path] = ()) -> proc.Result:
        """Run ``binary`` once on ``stdin`` in world number ``world`` and return the result.

        The world (:attr:`worlds`) says everything the run sees of its surroundings: the
        user name, ``HOME`` (in a box an empty private directory), the working directory,
        where the binary lies, ``argv[0]``, the environment and its order, the host name;
        ``LS_COLORS`` (:data:`PAD_VARIABLE`) holds ``env_pad`` bytes (:func:`pad_value`;
        ``None``: the world's own length). The environment sits at the top of the stack,
        so its size shifts the stack's alignment, which alone can move timings by several
        percent; timing varies it on purpose, in a variable an ordinary environment has.

        ``prefix`` runs the program under a tool (``valgrind ...``, given the binary's
        absolute path), with ``timeout`` and ``memory`` (address-space bytes) instead of the
        sandbox's own limits. ``writable`` host directories appear at their own paths,
        writable (a profile's output directory), or as an :class:`~sgcc.verify.box.isolate.Bind`
        says (a project's tree where its build put it, a tool read-only); nothing else of the
        host's is writable.
        """
        if self._closed:
            raise SgccError("sandbox used after close")
        if env_pad is not None and env_pad < 0:
            raise ValueError("env_pad must be >= 0")
        w = self.worlds[world % len(self.worlds)]
        if env_pad is None:
            # Past the last world (a sandbox of one world asked for a second), its padding moves.
            env_pad = (w.pad + world // len(self.worlds) * (worldsmod.MAX_PAD // 2)) % (worldsmod.MAX_PAD + 1)
        copy = self._copy_of(Path(binary))
        if self.expose is not None:
            writable = [*writable, *self.expose(Path(binary))]
        env = w.environment(pad_value(env_pad))
        wall = self.timeout if timeout is None else timeout
        limits = proc.Limits(
            cpu=self.cpu if timeout is None else max(self.cpu, int(timeout) + 1),
            address_space=self.memory if memory is None else memory,
            file_size=self.file_size,
            processes=None,
            open_files=self.open_files,
            core=0,
        )
        if self.isolated:
            argv = [*prefix, w.binary] if prefix else [w.argv0]
            # RLIMIT_NPROC counts per user namespace: the box's init and its parent, plus the run's.
            limits.processes = None if self.processes is None else self.processes + 3
            view = isolate.View(str(self.root), str(copy),
                                writable=[d if isinstance(d, isolate.Bind) else str(d) for d in writable],
                                scratch=self.file_size, memory=max(self.memory, memory or 0),
                                identity=self.identity, world=w)
            return proc.run(argv, stdin=stdin, env=env, timeout=wall, limits=limits,
                            capture_limit=self.output_limit, spawner=isolate.spawner(view))
        # The older runner: no mount namespace, so the world's paths cannot exist; the run's
        # scratch directory stands in for its home and working directory.
        argv = [*(prefix or []), f"./{w.name}"]
        limits.processes = self._process_limit()
        run_dir = self._scratch_dir()
        try:
            os.link(copy, run_dir / w.name)
            if self.drop_privileges:
                # The program may write in its own directory, and nowhere of sgcc's.
                os.chown(run_dir, proc.NOBODY, proc.NOBODY)
            os.chmod(run_dir, 0o700)
            env.update(HOME=str(run_dir), PWD=str(run_dir))
            return proc.run(
                argv,
                stdin=stdin,
                cwd=run_dir,
                env=env,
                timeout=wall,
                limits=limits,
                capture_limit=self.output_limit,
                isolate_network=self.isolate_network,
                drop_privileges=self.drop_privileges,
            )
        finally:
            # Only this run's directory: other threads may be running binaries meanwhile.
            self._sweep(run_dir)
            self._release_scratch_dir(run_dir, w.name)

    def record(self, binary: Path, tests: list[TestCase]) -> list[TestCase]:
        """Return ``tests`` with missing expectations filled in from running ``binary``.

        As in the papers, expected outputs are what the original (gcc -O3) program prints.
        Each such test runs once in every world (:attr:`worlds`: other environments, other
        sizes of it, other paths): output that changes between them (uninitialised memory,
        addresses, time, or the environment itself) cannot judge a candidate, so it is an
        error, as is a baseline that times out, crashes or floods its output. Tests that
        already have both expectations are returned unchanged.
        """
        recorded = []
        for test in tests:
            if test.expected_stdout is not None and test.expected_status is not None:
                recorded.append(test)
                continue
            first = self.run(binary, test.stdin, world=0)
            _require_clean_baseline(test, first)
            for world in range(1, max(2, len(self.worlds))):
                other = self.run(binary, test.stdin, world=world)
                _require_clean_baseline(test, other)
                if (first.stdout, first.returncode) != (other.stdout, other.returncode):
                    raise SgccError(
                        f"the baseline's output on test {test.name} is not deterministic",
                        hint="it changed between two runs in different environments (variables, their "
                             "size, argv[0], the working directory); a test must always produce the same output",
                    )
            recorded.append(
                replace(
                    test,
                    expected_stdout=first.stdout if test.expected_stdout is None else test.expected_stdout,
                    expected_status=first.returncode if test.expected_status is None else test.expected_status,
                )
            )
        return recorded

    def check(self, binary: Path, tests: list[TestCase], *, stop_on_first_failure: bool = True) -> TestOutcome:
        """Run ``binary`` on every test in every world; compare stdout and exit status exactly.

        A test passes only when it passes in every world (:attr:`worlds`), so a program that
        behaves differently in one environment than in another fails it. stderr is ignored
        for correctness. Stops at the first failure unless ``stop_on_first_failure=False``,
        in which case ``passed`` counts all tests passed (the papers' partial-credit reward
        needs it).
        """
        passed = 0
        first: Failure | None = None
        for test in tests:
            if test.expected_stdout is None:
                raise SgccError(
                    f"test {test.name} has no expected output",
                    hint="record the baseline's outputs first (Sandbox.record)",
                )
            failure = None
            for world in range(len(self.worlds)):
                try:
                    result = self.run(binary, test.stdin, world=world)
                except SgccError as exc:
                    # E.g. the kernel refused to execute it: a failed candidate, not an sgcc error.
                    failure = Failure(test.name, f"cannot run: {exc.message}", excerpt(test.stdin), "")
                else:
                    failure = _judge(test, result, self.timeout)
                if failure is not None:
                    if world:
                        # Right in one world, wrong in another: say so (which world is no help).
                        failure = replace(failure, reason=f"{failure.reason} (in another environment than "
                                                          "the first; it must not depend on it)")
                    break
            if failure is None:
                passed += 1
                continue
            if first is None:
                first = failure
            if stop_on_first_failure:
                break
        return TestOutcome(passed=passed, total=len(tests), first_failure=first)

    # -- internals

    def _copy_of(self, binary: Path) -> Path:
        """The sandbox's private, root-owned 0755 copy of ``binary`` (made once per version)."""
        try:
            st = os.stat(binary)
        except OSError as exc:
            raise SgccError(f"cannot run {binary}", cause=exc) from exc
        if not stat.S_ISREG(st.st_mode):
            raise SgccError(f"cannot run {binary}: not a regular file")
        key = (os.path.realpath(binary), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            copy = self._copies.get(key)
            if copy is None:
                copy = self._bin / f"{len(self._copies):06d}"
                try:
                    shutil.copyfile(binary, copy)
                except OSError as exc:
                    raise SgccError(f"cannot copy {binary} into the sandbox", cause=exc) from exc
                os.chmod(copy, 0o755)
                self._copies[key] = copy
        return copy

    def _scratch_dir(self) -> Path:
        """An empty directory for one run: a reused one if available, else a new one."""
        with self._lock:
            if self._free:
                return self._free.pop()
        return Path(tempfile.mkdtemp(dir=self._runs))

    def _release_scratch_dir(self, run_dir: Path, name: str) -> None:
        """Keep ``run_dir`` for the next run if the program left nothing in it, else delete it.

        Reuse is only an optimisation (rmdir costs milliseconds on some file systems, which
        adds up over the thousands of timing runs); a directory is only reused empty, and
        :meth:`run` resets its owner and mode before each run.
        """
        try:
            os.unlink(run_dir / name)
            empty = not os.listdir(run_dir)
        except OSError:
            empty = False
        if empty and not self._closed:
            with self._lock:
                self._free.append(run_dir)
        else:
            _rmtree(str(run_dir))

    def _process_limit(self) -> int | None:
        """RLIMIT_NPROC for the next run.

        The kernel counts *all* processes of the user against it, not only the child's, so
        the limit is what that user already runs plus what the child may add.
        """
        if self.processes is None:
            return None
        uid = proc.NOBODY if self.drop_privileges else os.getuid()
        return _count_processes(uid) + self.processes

    def _sweep(self, under: Path) -> None:
        """Kill processes still executing a binary from ``under`` (e.g. after ``setsid``).

        ``/proc/PID/exe`` names the path the binary was started from, the run's own
        directory, even after the file is unlinked (with a " (deleted)" suffix).

        Repeats until none is left (up to a second): processes killed a moment ago may still
        be exiting, and one may have forked just before the kill.
        """
        prefix = str(under) + os.sep
        deadline = time.monotonic() + 1.0
        while True:
            found = False
            for pid in _pids():
                try:
                    exe = os.readlink(f"/proc/{pid}/exe")
                except OSError:
                    continue  # gone, a zombie, or not ours to see
                if exe.startswith(prefix):
                    found = True
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            if not found or time.monotonic() > deadline:
                return
            time.sleep(0.01)

    def _check_reachable_by_nobody(self) -> None:
        """Fail early if ``nobody`` cannot reach the scratch tree (e.g. TMPDIR under /root)."""
        for parent in self.root.parents:
            try:
                mode = os.stat(parent).st_mode
            except OSError:
                continue
            if not mode & stat.S_IXOTH:
                self.close()
                raise SgccError(
                    f"the sandbox directory {self.root} is not reachable by user nobody "
                    f"({parent} is not searchable by others)",
                    hint="point TMPDIR at a directory such as /tmp",
                )


def _pids() -> list[int]:
    try:
        return [int(e.name) for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return []


def _count_processes(uid: int) -> int:
    n = 0
    for pid in _pids():
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                n += 1
        except OSError:
            pass
    return n


def _rmtree(path: str) -> None:
    """Delete ``path`` even if a program made parts of it unreadable or unwritable."""

    def fix(func, p, _exc):
        # A program may chmod its own directories to 0; take them back and retry once.
        try:
            os.chmod(os.path.dirname(p), 0o700)
            if os.path.isdir(p) and not os.path.islink(p):
                os.chmod(p, 0o700)
            func(p)
        except OSError:
            pass

    shutil.rmtree(path, onerror=fix)
    if os.path.lexists(path):
        shutil.rmtree(path, ignore_errors=True)


def _require_clean_baseline(test: TestCase, result: proc.Result) -> None:
    if result.timed_out or result.truncated or result.returncode < 0:
        raise SgccError(
            f"the baseline program fails on test {test.name}: {result.describe()}",
            hint="a test the original program cannot pass cannot judge candidates; fix or remove it",
        )


def _judge(test: TestCase, result: proc.Result, timeout: float) -> Failure | None:
    """None if ``result`` passes ``test``, else the :class:`Failure` describing why not."""
    expected_status = 0 if test.expected_status is None else test.expected_status
    expected = test.expected_stdout or b""
    actual = result.stdout
    if result.timed_out:
        reason = f"timed out (after {timeout:g} s)"
    elif result.truncated:
        reason = f"output over the limit ({len(actual)} bytes kept)"
    elif result.returncode < 0:
        reason = result.describe()
    elif result.returncode != expected_status:
        reason = f"exit status {result.returncode}, expected {expected_status}"
    elif actual != expected:
        at = _first_difference(expected, actual)
        line = expected.count(b"\n", 0, at) + 1
        # Quote the expected output from a little before where they first differ; never
        # the actual output (see Failure).
        return Failure(test=test.name, reason=f"output differs from the expected at line {line}",
                       stdin=excerpt(test.stdin), expected=excerpt(expected, max(0, at - 100)), line=line)
    else:
        return None
    return Failure(test=test.name, reason=reason, stdin=excerpt(test.stdin), expected=excerpt(expected))


def _first_difference(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    step = 1 << 16
    # Chunk by chunk, then byte by byte: linear, and quick on outputs of many megabytes.
    i = 0
    while i < n and a[i : i + step] == b[i : i + step]:
        i += step
    while i < n and a[i] == b[i]:
        i += 1
    return min(i, n)


def excerpt(data: bytes, start: int = 0, limit: int = EXCERPT) -> str:
    """Up to ``limit`` bytes of ``data`` from ``start``, as text, saying what was left out."""
    piece = data[start : start + limit].decode("utf-8", errors="replace")
    if start:
        piece = f"[{start} bytes before] " + piece
    rest = len(data) - start - limit
    if rest > 0:
        piece += f" [{rest} more bytes]"
    return piece
