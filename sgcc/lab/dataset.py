"""Building a benchmark dataset of C problems, the papers' way (``sgcc dataset build``).

The papers evaluate on CodeNet programs whose tests are *recorded*: each program runs on its
inputs and what it prints becomes the expected output. A program only belongs in such a
dataset if those outputs can judge a candidate, so :func:`build`

1. finds the problems in a source directory (:func:`discover`), reading every file
   defensively (sizes capped, no symlinks, no special files: the sources may come from
   anywhere);
2. compiles each at ``-O0`` and ``-O3`` (real gcc, ``-lm``) and runs both on every input in
   the sgcc :class:`~sgcc.verify.sandbox.Sandbox`; the ``-O0`` binary runs twice with different
   environment sizes, and its output becomes the expected output. A problem is *dropped*,
   with its reason recorded, when it does not compile, exits non-zero, crashes, times out,
   prints different output on the two runs (non-determinism), or when ``-O3`` prints
   something else than ``-O0`` (undefined behaviour: no single "right" output exists);
3. measures line and branch coverage of the inputs with gcov (``--coverage -O0``);
4. times ``-O0`` against ``-O3`` on the heaviest input with :func:`sgcc.verify.timing.measure`
   (paired, interleaved CPU time) and, with ``keep_top``, keeps the problems where ``-O3``
   gained most (the papers' selection of programs with room for optimization);
5. writes the dataset atomically: ``OUT/NAME/NAME.c``, ``OUT/NAME/tests/T.in`` and ``T.out``
   (the layout of ``examples/programs``, so ``sgcc optimize`` can use it directly), any
   ``candidates/`` and ``candidates-native/`` directories, and ``OUT/dataset.json`` with the
   statistics.

Building and testing run in parallel (``jobs`` threads, each driving subprocesses); timing
runs serially and takes the machine-wide timing lock.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from sgcc import proc
from sgcc.dropin import gccargs
from sgcc.verify import timing
from sgcc.errors import SgccError
from sgcc.verify.sandbox import Sandbox, TestCase

#: Marker in dataset.json: what makes a directory "a dataset" that ``--force`` may replace.
FORMAT = "sgcc-dataset"
FORMAT_VERSION = 1
#: Largest C source accepted (CodeNet solutions are a few KB; anything this big is not one).
MAX_SOURCE = 1 << 20
#: Largest single input file, and all inputs of one problem together.
MAX_INPUT = 4 << 20
MAX_INPUTS_TOTAL = 16 << 20
#: Most inputs per problem (each one is run several times).
MAX_INPUTS = 64
#: Largest candidate file copied, and most files in a candidates tree.
MAX_CANDIDATE = 1 << 20
MAX_CANDIDATE_FILES = 256
#: Output a program may print per run before it is dropped (and its .out would be too big).
MAX_OUTPUT = 8 << 20
#: Seconds one gcc or gcov run may take.
COMPILE_TIMEOUT = 120.0
#: Directories copied from a problem's source directory into the dataset as they are.
CANDIDATE_DIRS = ("candidates", "candidates-native")
#: Problem and test names: safe as path components and in shell-free argv lists.
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,99}$")


# --------------------------------------------------------------------------- data


@dataclass
class Problem:
    """One program of the source directory, and where its files are."""

    name: str
    source: Path
    inputs: dict[str, Path]  # test name -> input file
    extras: dict[str, Path] = field(default_factory=dict)  # "candidates" -> directory


@dataclass
class Coverage:
    """gcov's counts for the program's own source file (headers and libc excluded)."""

    lines_executed: int = 0
    lines_total: int = 0
    branches_taken: int = 0
    branches_total: int = 0

    @property
    def line_pct(self) -> float:
        return 100.0 * self.lines_executed / self.lines_total if self.lines_total else 0.0

    @property
    def branch_pct(self) -> float:
        # A program without branches has all of its (zero) branches covered.
        return 100.0 * self.branches_taken / self.branches_total if self.branches_total else 100.0

    def to_dict(self) -> dict:
        return {
            "lines_executed": self.lines_executed,
            "lines_total": self.lines_total,
            "line_pct": round(self.line_pct, 2),
            "branches_taken": self.branches_taken,
            "branches_total": self.branches_total,
            "branch_pct": round(self.branch_pct, 2),
        }


@dataclass
class Outcome:
    """What happened to one problem: kept (with its tests and figures) or dropped (why)."""

    name: str
    stage: str = "ok"  # where it was dropped: read, compile, run, determinism, o3, coverage, time
    reason: str = ""
    tests: list[TestCase] = field(default_factory=list)
    source_text: bytes = b""
    extras: dict[str, Path] = field(default_factory=dict)
    o3_cpu: dict[str, float] = field(default_factory=dict)  # test -> CPU seconds of one -O3 run
    heaviest: str = ""
    coverage: Coverage | None = None
    speedup: timing.Estimate | None = None
    binaries: tuple[Path, Path] | None = None  # (-O0, -O3), for timing

    @property
    def dropped(self) -> bool:
        return self.stage != "ok"

    def drop(self, stage: str, reason: str) -> Outcome:
        self.stage, self.reason = stage, reason
        return self


class _Dropped(Exception):
    """A problem that cannot be in the dataset; caught per problem, never escapes build()."""

    def __init__(self, stage: str, reason: str):
        super().__init__(reason)
        self.stage, self.reason = stage, reason


# --------------------------------------------------------------------------- reading inputs


def read_capped(path: Path, limit: int, what: str) -> bytes:
    """Read a regular, non-symlink file of at most ``limit`` bytes, or raise :class:`SgccError`.

    The file is opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked on the open descriptor,
    so a symlink (which could point at any file on the machine, later shown in a dataset), a
    FIFO (which would hang the read) or a file swapped in after a check are all refused.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if os.path.islink(path):
            raise SgccError(f"{what} {path} is a symlink (not followed)") from None
        raise SgccError(f"cannot open {what} {path}", cause=exc) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SgccError(f"{what} {path} is not a regular file")
        if st.st_size > limit:
            raise SgccError(f"{what} {path} is too large ({st.st_size} bytes, limit {limit})")
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:  # it grew while being read
        raise SgccError(f"{what} {path} is too large (over {limit} bytes)")
    return data


def discover(src_dir: Path) -> tuple[list[Problem], list[Outcome]]:
    """Find the problems in ``src_dir``; also return entries skipped as unusable.

    Two layouts, which may be mixed:

    * flat: ``SRC/NAME.c`` with inputs ``SRC/NAME.in`` and ``SRC/NAME-T.in`` (also ``_T``
      or ``.T``); an input belongs to the longest program name it starts with, so
      ``sort.c`` and ``sort2.c`` do not share inputs;
    * one directory per problem: ``SRC/NAME/NAME.c`` with ``SRC/NAME/*.in`` or
      ``SRC/NAME/tests/*.in``, and optionally ``SRC/NAME/candidates*/``.

    ``.out`` files next to the inputs are ignored: expected outputs are recorded from the
    program itself, as in the papers.
    """
    src_dir = Path(src_dir)
    if not src_dir.is_dir():
        raise SgccError(f"source directory {src_dir} does not exist or is not a directory")
    try:
        entries = sorted(os.scandir(src_dir), key=lambda e: e.name)
    except OSError as exc:
        raise SgccError(f"cannot read source directory {src_dir}", cause=exc) from exc

    problems: dict[str, Problem] = {}
    skipped: list[Outcome] = []
    flat_inputs = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_dir(follow_symlinks=False):
            source = Path(entry.path) / f"{entry.name}.c"
            if not os.path.lexists(source):
                continue  # a helper directory (scripts, docs), not a problem
            if not _NAME.match(entry.name):
                skipped.append(Outcome(entry.name).drop("read", "unsafe problem name"))
                continue
            problems[entry.name] = _directory_problem(entry.name, Path(entry.path))
        elif entry.name.endswith(".c"):
            name = entry.name[:-2]
            if not _NAME.match(name):
                skipped.append(Outcome(name).drop("read", "unsafe problem name"))
                continue
            if name in problems:
                skipped.append(Outcome(name).drop("read", "both NAME.c and NAME/NAME.c exist"))
                continue
            problems[name] = Problem(name, Path(entry.path), {})
        elif entry.name.endswith(".in"):
            flat_inputs.append(entry)

    # Flat inputs: longest matching name first.
    flat_names = sorted((p.name for p in problems.values() if p.source.parent == src_dir), key=len, reverse=True)
    for entry in flat_inputs:
        stem = entry.name[:-3]
        for name in flat_names:
            if stem == name:
                test = "main"
            elif stem.startswith(name) and stem[len(name)] in "-_.":
                test = stem[len(name) + 1 :]
            else:
                continue
            if _NAME.match(test):
                problems[name].inputs[test] = Path(entry.path)
            break
    result = sorted(problems.values(), key=lambda p: p.name)
    for p in result:
        if not p.inputs:
            skipped.append(Outcome(p.name).drop("read", "no input files (NAME.in, NAME-T.in or NAME/tests/T.in)"))
    return [p for p in result if p.inputs], skipped


def _directory_problem(name: str, directory: Path) -> Problem:
    """A problem in its own directory: inputs in ``tests/`` if present, else beside the source."""
    tests_dir = directory / "tests"
    where = tests_dir if tests_dir.is_dir() and not tests_dir.is_symlink() else directory
    inputs = {}
    for entry in sorted(os.scandir(where), key=lambda e: e.name):
        if entry.name.endswith(".in") and _NAME.match(entry.name[:-3]):
            inputs[entry.name[:-3]] = Path(entry.path)
    extras = {}
    for sub in CANDIDATE_DIRS:
        d = directory / sub
        if d.is_dir() and not d.is_symlink():
            extras[sub] = d
    return Problem(name, directory / f"{name}.c", inputs, extras)


def _read_problem(problem: Problem) -> tuple[bytes, list[TestCase]]:
    """The source text and the inputs, under the size caps; raises :class:`_Dropped`."""
    try:
        source = read_capped(problem.source, MAX_SOURCE, "source")
        if len(problem.inputs) > MAX_INPUTS:
            raise SgccError(f"too many inputs ({len(problem.inputs)}, limit {MAX_INPUTS})")
        tests, total = [], 0
        for test, path in sorted(problem.inputs.items()):
            data = read_capped(path, MAX_INPUT, "input")
            total += len(data)
            if total > MAX_INPUTS_TOTAL:
                raise SgccError(f"the inputs are too large together (limit {MAX_INPUTS_TOTAL} bytes)")
            tests.append(TestCase(test, data))
    except SgccError as exc:
        raise _Dropped("read", exc.message) from None
    return source, tests


# --------------------------------------------------------------------------- compiling and running


def _compile(compiler: str, source: Path, binary: Path, flags: list[str]) -> None:
    """Compile ``source`` to ``binary``; raises :class:`_Dropped` with gcc's first error."""
    limits = proc.Limits(cpu=int(COMPILE_TIMEOUT) + 1, address_space=4 << 30, file_size=256 << 20)
    result = proc.run(
        gccargs.link_argv(compiler, [*flags, "-lm"], [str(source)], str(binary)),
        cwd=binary.parent,
        timeout=COMPILE_TIMEOUT,
        limits=limits,
        capture_limit=1 << 20,
    )
    if not result.ok:
        message = _first_error(result.stderr.decode("utf-8", "replace"), binary.parent) or result.describe()
        raise _Dropped("compile", f"does not compile with {' '.join(flags)}: {message}")


def _first_error(stderr: str, private_dir: Path) -> str:
    """gcc's first error line, without the private directory it compiled in (not the user's)."""
    lines = [ln for ln in stderr.splitlines() if "error" in ln] or stderr.splitlines()
    return lines[0].replace(f"{private_dir}/", "").strip()[:300] if lines else ""


def _run_checked(sandbox: Sandbox, binary: Path, test: TestCase, label: str, env_pad: int = 0) -> proc.Result:
    """Run once; a crash, timeout, flood or non-zero exit drops the problem."""
    result = sandbox.run(binary, test.stdin, env_pad=env_pad)
    if result.timed_out:
        raise _Dropped("run", f"{label} times out on input {test.name} (after {sandbox.timeout:g} s)")
    if result.truncated:
        raise _Dropped("run", f"{label} prints too much on input {test.name}")
    if result.returncode != 0:
        raise _Dropped("run", f"{label} fails on input {test.name}: {result.describe()}")
    return result


def _record(sandbox: Sandbox, o0: Path, o3: Path, tests: list[TestCase]) -> tuple[list[TestCase], dict[str, float]]:
    """Expected outputs from the -O0 program (run twice), and -O3's agreement with them.

    Two runs with different environment sizes shift the stack, so reads of uninitialised
    memory, printed addresses and the time usually show up as a difference. -O3 is then
    held to -O0's output: when they differ, the program's meaning depends on the optimizer
    (undefined behaviour) and no recorded output can fairly judge a candidate.
    """
    recorded, o3_cpu = [], {}
    for test in tests:
        first = _run_checked(sandbox, o0, test, "the -O0 build")
        second = _run_checked(sandbox, o0, test, "the -O0 build", env_pad=4000)
        if first.stdout != second.stdout:
            raise _Dropped("determinism", f"output on input {test.name} differs between two runs (non-deterministic)")
        optimized = _run_checked(sandbox, o3, test, "the -O3 build", env_pad=2000)
        if optimized.stdout != first.stdout:
            raise _Dropped("o3", f"-O0 and -O3 print different output on input {test.name} (undefined behaviour?)")
        recorded.append(TestCase(test.name, test.stdin, first.stdout, 0))
        o3_cpu[test.name] = optimized.cpu
    return recorded, o3_cpu


def measure_coverage(compiler: str, source_text: bytes, name: str, tests: list[TestCase], work: Path,
                     timeout: float) -> Coverage:
    """Line and branch coverage of ``tests`` on the program, from gcov, for its own source only.

    The program is built with ``--coverage -O0`` (at higher levels gcov's line mapping is
    approximate) in a private directory and run on every input. It writes its counters
    (``.gcda``) next to its object file, an absolute path fixed at compile time, so it
    cannot run in the sandbox's scratch directories; it runs instead with the same kind of
    limits (CPU, memory, file size, processes, no network) in that private directory, as
    ``nobody`` when sgcc is root. gcov's JSON output (``--json-format --stdout``) is parsed
    rather than its text, which changes between versions; only the entry for ``NAME.c`` is
    counted, so inline functions from headers do not dilute the figures.
    """
    work.mkdir(parents=True, exist_ok=True)
    source = work / f"{name}.c"
    source.write_bytes(source_text)
    obj, binary = work / f"{name}.o", work / f"{name}.cov"
    for argv in (
        [compiler, "--coverage", "-O0", "-c", "-o", str(obj), str(source)],
        gccargs.link_argv(compiler, ["--coverage", "-lm"], [str(obj)], str(binary)),
    ):
        result = proc.run(argv, cwd=work, timeout=COMPILE_TIMEOUT, capture_limit=1 << 20,
                          limits=proc.Limits(cpu=int(COMPILE_TIMEOUT) + 1, file_size=256 << 20))
        if not result.ok:
            raise _Dropped("coverage", f"does not compile with --coverage: {_first_error(result.stderr.decode('utf-8', 'replace'), work)}")
    root = os.geteuid() == 0
    if root:
        os.chown(work, proc.NOBODY, proc.NOBODY)
        for f in work.iterdir():
            os.chown(f, proc.NOBODY, proc.NOBODY)
    limits = proc.Limits(cpu=int(timeout) + 1, address_space=2 << 30, file_size=64 << 20, processes=64,
                         open_files=64)
    for test in tests:
        result = proc.run([str(binary)], stdin=test.stdin, cwd=work, env={"PATH": "/usr/bin:/bin", "LANG": "C"},
                          timeout=timeout, limits=limits, capture_limit=MAX_OUTPUT,
                          isolate_network=proc.network_isolation_available(), drop_privileges=root)
        if not result.ok:
            raise _Dropped("coverage", f"the --coverage build fails on input {test.name}: {result.describe()}")
    result = proc.run(["gcov", "--json-format", "--stdout", "--branch-probabilities", "--branch-counts", obj.name],
                      cwd=work, timeout=COMPILE_TIMEOUT, capture_limit=64 << 20)
    if not result.ok:
        raise _Dropped("coverage", f"gcov failed: {result.describe()}")
    return parse_gcov_json(result.stdout, f"{name}.c")


def parse_gcov_json(text: bytes, source_name: str) -> Coverage:
    """Sum gcov's JSON (one document per line, one per data file) for ``source_name``.

    A line counts once even when several functions share it; a branch is "taken" when gcov
    saw it followed at least once (exception edges, which C does not have, are skipped).
    """
    lines: dict[int, bool] = {}
    taken = total = 0
    for doc_text in text.splitlines():
        if not doc_text.strip():
            continue
        try:
            doc = json.loads(doc_text)
        except ValueError as exc:
            raise _Dropped("coverage", "gcov printed something that is not JSON") from exc
        for f in doc.get("files", []):
            if os.path.basename(f.get("file", "")) != source_name:
                continue
            for line in f.get("lines", []):
                number = line["line_number"]
                lines[number] = lines.get(number, False) or line.get("count", 0) > 0
                for branch in line.get("branches", []):
                    if branch.get("throw"):
                        continue
                    total += 1
                    taken += branch.get("count", 0) > 0
    return Coverage(sum(lines.values()), len(lines), taken, total)


def _prepare(problem: Problem, compiler: str, sandbox: Sandbox, work: Path, timeout: float) -> Outcome:
    """Read, compile, record, check and measure coverage of one problem (parallel-safe)."""
    outcome = Outcome(problem.name, extras=dict(problem.extras))
    try:
        source_text, tests = _read_problem(problem)
        outcome.source_text = source_text
        here = work / problem.name
        here.mkdir(mode=0o711)
        os.chmod(here, 0o711)  # mkdir's mode is masked by the umask
        source = here / f"{problem.name}.c"
        source.write_bytes(source_text)  # compile a private copy: the original may change
        o0, o3 = here / "O0", here / "O3"
        _compile(compiler, source, o0, ["-O0"])
        _compile(compiler, source, o3, ["-O3"])
        outcome.tests, outcome.o3_cpu = _record(sandbox, o0, o3, tests)
        outcome.heaviest = max(outcome.o3_cpu, key=lambda t: (outcome.o3_cpu[t], t))
        outcome.coverage = measure_coverage(compiler, source_text, problem.name, tests, here / "cov", timeout)
        outcome.binaries = (o0, o3)
    except _Dropped as exc:
        outcome.drop(exc.stage, exc.reason)
    except SgccError as exc:  # e.g. the sandbox could not run the binary at all
        outcome.drop("run", exc.message)
    return outcome


def _time(outcome: Outcome, sandbox: Sandbox, rounds: int, min_sample: float, seed: int | None) -> None:
    """-O0 vs -O3 on the heaviest input: paired, interleaved CPU time (takes the timing lock)."""
    heavy = [t for t in outcome.tests if t.name == outcome.heaviest]
    o0, o3 = outcome.binaries
    try:
        outcome.speedup = timing.measure(
            timing.runner(sandbox, o0, heavy), timing.runner(sandbox, o3, heavy),
            rounds=rounds, min_sample_seconds=min_sample, seed=seed,
        )
    except timing.TimingRunFailed as exc:
        # A run that changed its output under a different environment size: the
        # determinism check missed it, timing caught it.
        outcome.drop("time", f"not deterministic while timed: {exc.message}")


# --------------------------------------------------------------------------- writing


def _check_destination(out: Path, force: bool) -> None:
    """Refuse to replace anything but an earlier dataset, and that only with ``force``."""
    if not os.path.lexists(out):
        return
    if out.is_symlink() or not out.is_dir():
        raise SgccError(f"{out} exists and is not a directory", hint="choose another --out")
    if not any(out.iterdir()):
        return
    if not is_dataset(out):
        raise SgccError(f"{out} exists and is not an sgcc dataset (no dataset.json of ours): not replacing it",
                        hint="choose another --out, or remove that directory yourself")
    if not force:
        raise SgccError(f"dataset {out} already exists", hint="pass --force to replace it")


def is_dataset(path: Path) -> bool:
    """Whether ``path`` holds a dataset written by :func:`build` (its dataset.json says so)."""
    try:
        data = json.loads(read_capped(Path(path) / "dataset.json", 64 << 20, "dataset file"))
    except (SgccError, ValueError):
        return False
    return isinstance(data, dict) and data.get("format") == FORMAT


def _copy_tree(src: Path, dst: Path, budget: list[int]) -> None:
    """Copy a candidates directory: regular files and directories only, capped in size and count."""
    dst.mkdir()
    for entry in sorted(os.scandir(src), key=lambda e: e.name):
        if entry.name.startswith(".") or not _NAME.match(entry.name):
            continue
        if entry.is_dir(follow_symlinks=False):
            _copy_tree(Path(entry.path), dst / entry.name, budget)
        elif entry.is_file(follow_symlinks=False):
            budget[0] -= 1
            if budget[0] < 0:
                raise SgccError(f"too many candidate files under {src} (limit {MAX_CANDIDATE_FILES})")
            (dst / entry.name).write_bytes(read_capped(Path(entry.path), MAX_CANDIDATE, "candidate"))


def _write_problem(outcome: Outcome, root: Path) -> None:
    """DATASET/NAME/NAME.c, tests/T.in and T.out, and the candidate directories."""
    d = root / outcome.name
    (d / "tests").mkdir(parents=True)
    (d / f"{outcome.name}.c").write_bytes(outcome.source_text)
    for test in outcome.tests:
        (d / "tests" / f"{test.name}.in").write_bytes(test.stdin)
        (d / "tests" / f"{test.name}.out").write_bytes(test.expected_stdout)
    budget = [MAX_CANDIDATE_FILES]
    for sub, src in sorted(outcome.extras.items()):
        _copy_tree(src, d / sub, budget)


def _problem_dict(o: Outcome) -> dict:
    est = o.speedup
    return {
        "name": o.name,
        "tests": [t.name for t in o.tests],
        "input_bytes": sum(len(t.stdin) for t in o.tests),
        "heaviest": o.heaviest,
        "o3_cpu_seconds": round(o.o3_cpu.get(o.heaviest, 0.0), 4),
        "speedup_o0_o3": None if est is None else {
            "estimate": round(est.speedup, 3), "low": round(est.low, 3), "high": round(est.high, 3),
            "confidence": est.confidence, "rounds": est.rounds, "reps": est.reps,
        },
        "coverage": o.coverage.to_dict() if o.coverage else None,
        "candidates": sorted(o.extras),
    }


def summarize(kept: list[Outcome], dropped: list[Outcome], unselected: list[Outcome]) -> dict:
    """Totals over the kept problems: coverage pooled and per-problem mean, speedup spread."""
    cov = Coverage()
    for o in kept:
        cov.lines_executed += o.coverage.lines_executed
        cov.lines_total += o.coverage.lines_total
        cov.branches_taken += o.coverage.branches_taken
        cov.branches_total += o.coverage.branches_total
    speedups = sorted(o.speedup.speedup for o in kept if o.speedup)
    return {
        "kept": len(kept),
        "dropped": len(dropped),
        "not_selected": len(unselected),
        "tests": sum(len(o.tests) for o in kept),
        "coverage": cov.to_dict(),
        # The papers' figures are most likely means over programs; both are given.
        "coverage_mean": {
            "line_pct": round(statistics.fmean(o.coverage.line_pct for o in kept), 2) if kept else 0.0,
            "branch_pct": round(statistics.fmean(o.coverage.branch_pct for o in kept), 2) if kept else 0.0,
        },
        "speedup_o0_o3": {
            "min": round(speedups[0], 3), "median": round(statistics.median(speedups), 3),
            "max": round(speedups[-1], 3), "geomean": round(statistics.geometric_mean(speedups), 3),
        } if speedups else None,
    }


def _compiler_version(compiler: str) -> str:
    try:
        result = proc.run([compiler, "--version"], timeout=30)
    except SgccError:
        return ""
    return result.stdout.decode("utf-8", "replace").splitlines()[0] if result.ok and result.stdout else ""


# --------------------------------------------------------------------------- the whole build


def build(src_dir: Path, out: Path, *, keep_top: int | None = None, jobs: int = 0, timeout: float = 10.0,
          rounds: int = 6, min_sample: float = 0.05, compiler: str = "gcc", force: bool = False,
          seed: int | None = None, progress=None) -> dict:
    """Build a dataset from ``src_dir`` into ``out``; return what dataset.json holds.

    ``keep_top`` keeps only the N kept problems with the largest -O0→-O3 speedup (by the
    point estimate); ``jobs`` parallel problems (0: one per core); ``timeout`` seconds per
    run; ``rounds`` paired timing rounds per problem (a handful: the O0/O3 gap is large);
    ``force`` replaces an existing dataset (never anything else).
    """
    src_dir, out = Path(src_dir), Path(out)
    if keep_top is not None and keep_top < 1:
        raise SgccError("--keep-top must be at least 1")
    if rounds < 2:
        raise SgccError("timing needs at least 2 rounds")
    _check_destination(out, force)  # fail before minutes of work, and again before the rename
    if shutil.which(compiler) is None and not os.path.isfile(compiler):
        raise SgccError(f"compiler {compiler} not found")
    status = progress.status if progress else (lambda message: None)
    started = time.monotonic()

    problems, dropped = discover(src_dir)
    if not problems and not dropped:
        raise SgccError(f"no C programs in {src_dir}", hint="put NAME.c with NAME.in (or NAME/NAME.c with NAME/tests/*.in) there")
    jobs = jobs or os.cpu_count() or 1
    work = Path(tempfile.mkdtemp(prefix="sgcc-dataset-"))
    # 0711 down to each coverage directory: as root, coverage builds run as nobody, who must
    # reach (not list) their own directory.
    os.chmod(work, 0o711)
    try:
        with Sandbox(timeout=timeout, output_limit=MAX_OUTPUT) as sandbox:
            done = [0]

            def prepare(problem: Problem) -> Outcome:
                outcome = _prepare(problem, compiler, sandbox, work, timeout)
                done[0] += 1
                status(f"built and tested {done[0]}/{len(problems)}: {problem.name}")
                return outcome

            with ThreadPoolExecutor(max_workers=jobs) as pool:
                outcomes = list(pool.map(prepare, problems))
            ready = [o for o in outcomes if not o.dropped]
            for i, o in enumerate(ready, 1):
                status(f"timing -O0 vs -O3 {i}/{len(ready)}: {o.name}")
                _time(o, sandbox, rounds, min_sample, seed)
        dropped += [o for o in outcomes if o.dropped]
        kept = [o for o in outcomes if not o.dropped]
        unselected: list[Outcome] = []
        if keep_top is not None and len(kept) > keep_top:
            ranked = sorted(kept, key=lambda o: (-o.speedup.speedup, o.name))
            kept, unselected = sorted(ranked[:keep_top], key=lambda o: o.name), ranked[keep_top:]
        status(f"writing {out}")
        data = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "source": str(src_dir),
            "compiler": _compiler_version(compiler),
            "settings": {"keep_top": keep_top, "timeout": timeout, "rounds": rounds, "min_sample": min_sample},
            "seconds": round(time.monotonic() - started, 1),
            "totals": summarize(kept, dropped, unselected),
            "problems": [_problem_dict(o) for o in kept],
            "dropped": [{"name": o.name, "stage": o.stage, "reason": o.reason} for o in sorted(dropped, key=lambda o: o.name)],
            "not_selected": [
                {"name": o.name, "speedup_o0_o3": round(o.speedup.speedup, 3)} for o in unselected
            ],
        }
        _write_dataset(out, kept, data, force)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if progress:
        progress.done()
    return data


def _write_dataset(out: Path, kept: list[Outcome], data: dict, force: bool) -> None:
    """Write into a temporary directory beside ``out``, then rename it into place.

    Readers (a bench running meanwhile) see the old dataset or the new one, never half of
    one; an interrupted build leaves only a hidden ``.NAME.tmp-*`` directory.
    """
    parent = out.parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=parent))
    try:
        for o in kept:
            _write_problem(o, tmp)
        (tmp / "dataset.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o755)
        _check_destination(out, force)
        if os.path.lexists(out):
            old = parent / f".{out.name}.old-{os.getpid()}"
            os.rename(out, old)
            os.rename(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, out)
    except OSError as exc:
        raise SgccError(f"cannot write the dataset {out}", cause=exc) from exc
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def format_summary(data: dict) -> str:
    """The human summary ``sgcc dataset build`` prints."""
    t = data["totals"]
    lines = [f"{t['kept']} problems kept, {t['dropped']} dropped"
             + (f", {t['not_selected']} not in the top {data['settings']['keep_top']}" if t["not_selected"] else "")
             + f"; {t['tests']} tests"]
    c, m = t["coverage"], t["coverage_mean"]
    lines.append(f"coverage: lines {c['line_pct']:.1f}% ({c['lines_executed']}/{c['lines_total']}), "
                 f"branches {c['branch_pct']:.1f}% ({c['branches_taken']}/{c['branches_total']}); "
                 f"mean per problem {m['line_pct']:.1f}% lines, {m['branch_pct']:.1f}% branches")
    if t["speedup_o0_o3"]:
        s = t["speedup_o0_o3"]
        lines.append(f"-O0 -> -O3 speedup (CPU time): min {s['min']:.2f}x, median {s['median']:.2f}x, "
                     f"max {s['max']:.2f}x, geomean {s['geomean']:.2f}x")
    width = max([len(p["name"]) for p in data["problems"]] + [len(d["name"]) for d in data["dropped"]] + [4])
    for p in data["problems"]:
        s, cv = p["speedup_o0_o3"], p["coverage"]
        lines.append(f"  {p['name']:<{width}}  {len(p['tests'])} tests  O0->O3 {s['estimate']:5.2f}x "
                     f"[{s['low']:.2f}, {s['high']:.2f}]  lines {cv['line_pct']:5.1f}%  branches {cv['branch_pct']:5.1f}%")
    for d in data["dropped"]:
        lines.append(f"  {d['name']:<{width}}  DROPPED ({d['stage']}): {d['reason']}")
    return "\n".join(lines)
