"""Shared fixtures: the real sgcc executable, the real gcc, scratch directories."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _run_dir() -> Path | None:
    """The directory every pytest-xdist worker of this run shares (None outside xdist).
    xdist starts each worker with the run's id in PYTEST_XDIST_TESTRUNUID."""
    uid = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not os.environ.get("PYTEST_XDIST_WORKER") or not uid:
        return None
    d = Path(tempfile.gettempdir()) / f"sgcc-tests-{uid}"
    d.mkdir(exist_ok=True)
    return d


class _MachineShare:
    """A readers-writer lock over the parallel workers: a test marked ``alone`` runs with no
    other test running (it waits for the running ones to end; none starts meanwhile), every
    other test beside any other. The turnstile keeps an ``alone`` test from waiting forever
    behind a stream of shared ones (flock grants shared locks while an exclusive one waits).

    A worker whose next test is ``alone`` too keeps the machine between the two: released, a
    neighbour would start a test of its own in the gap (an end-to-end run of a minute), and the
    next ``alone`` test would wait for all of it with the cores idle. Test files mark their
    tests ``alone`` together (a file's tests run in order on one worker), so this turns a
    drain per test into one per run of them."""

    def __init__(self):
        self.files: tuple | None = None  # (turnstile, machine) while this worker holds the machine alone

    @contextlib.contextmanager
    def share(self, alone: bool, next_alone: bool):
        d = _run_dir()
        if d is None:
            yield
            return
        if alone:
            if self.files is None:
                gate, machine = open(d / "turnstile", "a+"), open(d / "machine", "a+")
                fcntl.flock(gate, fcntl.LOCK_EX)
                fcntl.flock(machine, fcntl.LOCK_EX)
                self.files = (gate, machine)
            try:
                yield
            finally:
                if not next_alone:
                    self.release()
            return
        self.release()
        with open(d / "turnstile", "a+") as gate, open(d / "machine", "a+") as machine:
            fcntl.flock(gate, fcntl.LOCK_EX)
            fcntl.flock(gate, fcntl.LOCK_UN)
            fcntl.flock(machine, fcntl.LOCK_SH)
            try:
                yield
            finally:
                fcntl.flock(machine, fcntl.LOCK_UN)

    def release(self) -> None:
        if self.files is not None:
            gate, machine = self.files
            self.files = None
            fcntl.flock(machine, fcntl.LOCK_UN)
            fcntl.flock(gate, fcntl.LOCK_UN)
            machine.close()
            gate.close()


_machine = _MachineShare()


def pytest_collection_modifyitems(session, config, items):
    """The heaviest test files first, each file's tests kept together and in their order (its
    ``alone`` ones last):
    pytest-xdist hands out whole files in this order (``--dist loadfile``; its own reordering,
    by the number of tests, is off in pyproject.toml), and a long file started last is the
    run's tail. Tests the last measured run found slow are marked ``slow``, with the tests
    that share a module fixture with one (tests/durations.json, tests/durations.py)."""
    from tests import durations

    files, slow = durations.load()
    root = Path(str(config.rootpath))

    def rel(item) -> str:
        try:
            return Path(str(item.path)).resolve().relative_to(root).as_posix()
        except ValueError:
            return ""

    heavy: dict[str, set[str]] = {}  # file -> module fixtures a slow test of it uses
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
            heavy.setdefault(rel(item), set()).update(_module_fixtures(item))
    for item in items:
        if heavy.get(rel(item), set()) & _module_fixtures(item):
            item.add_marker(pytest.mark.slow)
    # Stable: a file keeps its order, except that its ``alone`` tests run last, together: each
    # run of them drains the machine once (the neighbour's running test ends first, with this
    # worker idle), and a file that interleaved them with shared tests paid that once per test.
    items.sort(key=lambda item: (-files.get(rel(item), durations.UNKNOWN), rel(item),
                                 item.get_closest_marker("alone") is not None))


def _module_fixtures(item) -> set[str]:
    """The module- and package-scoped fixtures ``item`` uses (built once for the tests of a
    file: a fast test sharing one with a slow test pays for building it when run alone)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return set()
    return {name for name, defs in info.name2fixturedefs.items()
            if defs and defs[-1].scope in ("module", "package")}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    # Setup, call and teardown together: a module fixture's build (set up by the first test
    # that needs it) loads the machine as much as any test.
    alone = item.get_closest_marker("alone") is not None
    next_alone = nextitem is not None and nextitem.get_closest_marker("alone") is not None
    with _machine.share(alone, next_alone), _function_test_share(item.get_closest_marker("function_test") is None):
        yield


@pytest.fixture(scope="session")
def sgcc_exe() -> str:
    """Path of the installed ``sgcc`` console script (tests run the real program)."""
    exe = Path(sys.executable).parent / "sgcc"
    if not exe.exists():
        found = shutil.which("sgcc")
        if not found:
            pytest.fail("the sgcc console script is not installed; run the README's set-up command")
        exe = Path(found)
    return str(exe)


@pytest.fixture(scope="session")
def real_gcc() -> str:
    gcc = shutil.which("gcc")
    assert gcc, "gcc is required"
    return os.path.realpath(gcc)


@pytest.fixture
def masquerade_bin(tmp_path, sgcc_exe) -> Path:
    """A directory with ``gcc`` and ``cc`` symlinks to sgcc, to put first in PATH."""
    bindir = tmp_path / "masq-bin"
    bindir.mkdir()
    for name in ("gcc", "cc"):
        (bindir / name).symlink_to(sgcc_exe)
    return bindir


#: Seconds of CPU one timing sample lasts in sgcc run by the tests (``min_sample``; 0.05 is the
#: setting's default). The timing lock is the suite's bottleneck: held 17.2 of the 24.2 minutes of
#: a run with three workers (30bbbdb), and one sample of a short workload lasts at least
#: ``min_sample``, so a round of a 3x faster build against gcc's costs 4 x 0.05 s however short
#: the workload. What the tests assert of a timing is sgcc's own rule applied to it, or an effect
#: of 1.5x and more; pgowin's whole run took 76 s (62 s of it timing) at 0.05 and 23 s (10 s)
#: at 0.01, its confirmation 3.308x [3.169, 3.445] and 3.176x [3.147, 3.207] on 30 rounds each.
#: Set in the environment, it reaches sgcc run as a program and every configuration loaded here; a
#: Request built by a test has its own (the tests that build one pass this constant).
TIMING_SAMPLE_SECONDS = 0.01


@pytest.fixture(scope="session", autouse=True)
def _private_sgcc_state(tmp_path_factory):
    """Every test run gets its own cache and configuration: the user's are never touched,
    and a developer's ~/.config/sgcc cannot change what the tests see. It also gets its own
    timing lock: the tests assert no timings that load could flip (only effects of several
    times), and must not wait an hour behind a benchmark holding the machine-wide lock; and a
    short timing sample (:data:`TIMING_SAMPLE_SECONDS`).

    Under pytest-xdist the workers share one timing lock (in the run's common base directory),
    as concurrent compiles of one `make -j` share the machine's: a worker never times while
    another does, so parallel tests disturb each other's builds, never each other's timings."""
    state = tmp_path_factory.mktemp("sgcc-state")
    run_dir = _run_dir() or state
    saved = {k: os.environ.get(k) for k in ("SGCC_CACHE_DIR", "SGCC_CONFIG", "SGCC_TIMING_LOCK", "SGCC_MIN_SAMPLE")}
    os.environ["SGCC_CACHE_DIR"] = str(state / "cache")
    os.environ["SGCC_CONFIG"] = str(state / "no-user-config.toml")
    os.environ["SGCC_TIMING_LOCK"] = str(run_dir / "timing.lock")
    os.environ["SGCC_MIN_SAMPLE"] = str(TIMING_SAMPLE_SECONDS)
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


#: Seconds per function and candidate of the function-level differential test in the runs whose
#: subject is something else (a report line, the cache, a lock, a generator): the default (4 s,
#: stretched by the load) made it most of such a run's time (39 of popcount's 51 s). What these
#: runs assert (where each candidate stops, what ships) held at this share in a full run of the
#: suite; the tests whose subject is the function-level test itself are marked ``function_test``
#: and run with the setting's default.
QUICK_FUNCTION_SECONDS = 0.25
_quick_function_test = False


def pytest_configure(config):
    """The engine run in a test's own process builds its tester with the Request's
    ``function_seconds`` (the setting's default, which no environment changes): the tester's
    maker takes the suite's share while a test not marked ``function_test`` runs."""
    from sgcc.verify.function import funcdiff

    made = funcdiff.FunctionTester.__init__

    def sized(self, *args, seconds: float = funcdiff.DEFAULT_SECONDS, **kwargs):
        made(self, *args, seconds=min(seconds, QUICK_FUNCTION_SECONDS) if _quick_function_test else seconds,
             **kwargs)

    funcdiff.FunctionTester.__init__ = sized  # type: ignore[method-assign]


@contextlib.contextmanager
def _function_test_share(quick: bool):
    """``function_seconds`` at QUICK_FUNCTION_SECONDS while a test not marked ``function_test``
    runs, its module fixtures' set-up included: in the environment (sgcc run as a program reads
    SGCC_FUNCTION_SECONDS) and for the engine in this process (pytest_configure)."""
    global _quick_function_test
    saved, _quick_function_test = os.environ.pop("SGCC_FUNCTION_SECONDS", None), quick
    if quick:
        os.environ["SGCC_FUNCTION_SECONDS"] = str(QUICK_FUNCTION_SECONDS)
    try:
        yield
    finally:
        _quick_function_test = False
        os.environ.pop("SGCC_FUNCTION_SECONDS", None)
        if saved is not None:
            os.environ["SGCC_FUNCTION_SECONDS"] = saved
