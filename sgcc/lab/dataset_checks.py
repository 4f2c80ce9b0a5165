"""Checking a dataset's problem: compile it at ``-O0`` and ``-O3``, record its expected
outputs from ``-O0`` (run twice), check ``-O3`` agrees, measure the inputs' coverage with gcov,
and time ``-O0`` against ``-O3`` (see :mod:`sgcc.lab.dataset`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from sgcc import proc
from sgcc.errors import SgccError
from sgcc.gcc import args as gccargs
from sgcc.lab.dataset_inputs import read_problem
from sgcc.lab.dataset_model import COMPILE_TIMEOUT, MAX_OUTPUT, Coverage, Dropped, Outcome, Problem
from sgcc.verify.box.sandbox import Sandbox, TestCase
from sgcc.verify.timing import rounds as timing


def _compile(compiler: str, source: Path, binary: Path, flags: list[str]) -> None:
    """Compile ``source`` to ``binary``; raises :class:`Dropped` with gcc's first error."""
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
        raise Dropped("compile", f"does not compile with {' '.join(flags)}: {message}")


def _first_error(stderr: str, private_dir: Path) -> str:
    """gcc's first error line, without the private directory it compiled in (not the user's)."""
    lines = [ln for ln in stderr.splitlines() if "error" in ln] or stderr.splitlines()
    return lines[0].replace(f"{private_dir}/", "").strip()[:300] if lines else ""


def _run_checked(sandbox: Sandbox, binary: Path, test: TestCase, label: str, env_pad: int = 0) -> proc.Result:
    """Run once; a crash, timeout, flood or non-zero exit drops the problem."""
    result = sandbox.run(binary, test.stdin, env_pad=env_pad)
    if result.timed_out:
        raise Dropped("run", f"{label} times out on input {test.name} (after {sandbox.timeout:g} s)")
    if result.truncated:
        raise Dropped("run", f"{label} prints too much on input {test.name}")
    if result.returncode != 0:
        raise Dropped("run", f"{label} fails on input {test.name}: {result.describe()}")
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
            raise Dropped("determinism", f"output on input {test.name} differs between two runs (non-deterministic)")
        optimized = _run_checked(sandbox, o3, test, "the -O3 build", env_pad=2000)
        if optimized.stdout != first.stdout:
            raise Dropped("o3", f"-O0 and -O3 print different output on input {test.name} (undefined behaviour?)")
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
            error = _first_error(result.stderr.decode("utf-8", "replace"), work)
            raise Dropped("coverage", f"does not compile with --coverage: {error}")
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
            raise Dropped("coverage", f"the --coverage build fails on input {test.name}: {result.describe()}")
    result = proc.run(["gcov", "--json-format", "--stdout", "--branch-probabilities", "--branch-counts", obj.name],
                      cwd=work, timeout=COMPILE_TIMEOUT, capture_limit=64 << 20)
    if not result.ok:
        raise Dropped("coverage", f"gcov failed: {result.describe()}")
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
            raise Dropped("coverage", "gcov printed something that is not JSON") from exc
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


def prepare_problem(problem: Problem, compiler: str, sandbox: Sandbox, work: Path, timeout: float) -> Outcome:
    """Read, compile, record, check and measure coverage of one problem (parallel-safe)."""
    outcome = Outcome(problem.name, extras=dict(problem.extras))
    try:
        source_text, tests = read_problem(problem)
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
    except Dropped as exc:
        outcome.drop(exc.stage, exc.reason)
    except SgccError as exc:  # e.g. the sandbox could not run the binary at all
        outcome.drop("run", exc.message)
    return outcome


def time_problem(outcome: Outcome, sandbox: Sandbox, rounds: int, min_sample: float, seed: int | None) -> None:
    """-O0 vs -O3 on the heaviest input: paired, interleaved CPU time (takes the timing lock)."""
    heavy = [t for t in outcome.tests if t.name == outcome.heaviest]
    assert outcome.binaries is not None  # prepare_problem built both, or dropped the problem
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
