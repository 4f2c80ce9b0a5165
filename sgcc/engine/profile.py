"""Where a program spends its time on its tests: instructions per function, from callgrind.

The engine searches the functions the tests spend most instructions in, first and longest,
and never searches one the tests do not execute (no test could tell a wrong candidate from a
right one there); a profile that left tests out cannot know that, so the functions it did not
see are searched last instead (:func:`sgcc.engine.search.weigh`). valgrind's instruction
counts are exact and repeatable, which is what ranking needs; they are not a measure of
time, and nothing here decides "faster".

The program runs in the sandbox like any test, under ``valgrind --tool=callgrind``, on as
many tests as fit in a few seconds of wall time (at least one), the quickest first: each test
runs once natively beforehand (its CPU time, about a sixtieth of what callgrind takes) and a
test whose callgrind run would not fit in what is left is not profiled. Quickest first
because what the profile is for, knowing which functions run at all and which are hottest,
comes from many small tests as well as from one large one, at a fraction of the cost (an
example's five small tests take 4 s under callgrind, its large one 13 s). Self cost is
counted (a caller's weight excludes its callees); ``NAME.cold`` parts count for ``NAME``.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sgcc.verify.box.sandbox import Sandbox, TestCase

#: Profile no more tests once the next one would take the profile past this many wall seconds.
PROFILE_SECONDS = 10.0
#: Wall seconds one test may take under valgrind (it runs 20-100x slower than natively).
PROFILE_TEST_TIMEOUT = 120.0
#: What a test's callgrind run takes, from its native CPU seconds: valgrind's start-up plus
#: about 55x (measured on the example programs: 0.24 s natively, 13.2 s under callgrind).
CALLGRIND_STARTUP = 0.6
CALLGRIND_SLOWDOWN = 60.0


@dataclass
class Profile:
    """Where the tests profiled spend their instructions: ``weights`` per function (see
    :func:`function_weights`), over ``profiled`` of the ``total`` tests given, the quickest
    first; ``skipped_seconds`` is about what the others would have taken under callgrind."""

    weights: dict[str, float]
    profiled: int
    total: int
    skipped_seconds: float = 0.0

    def scope(self) -> str:
        """Which tests the weights speak for, in words."""
        if self.profiled >= self.total:
            return "the tests"
        return f"the {self.profiled} quickest of the {self.total} tests (the profiled ones)"

    def cut_note(self, seconds: float) -> str | None:
        """The report's note when tests were left out of the profile (None when none were)."""
        if self.profiled >= self.total:
            return None
        return (f"profiled on {self.scope()}: the others would have taken about {self.skipped_seconds:.0f} s more "
                f"under callgrind (at most {seconds:g} s go into the profile); a function only they run is not "
                "searched")


def function_weights(binary: Path, tests: list[TestCase], *, sandbox: Sandbox, names: list[str],
                     seconds: float = PROFILE_SECONDS) -> dict[str, float] | None:
    """Share of the program's executed instructions spent in each function of ``names``
    (self cost, summed over the tests profiled, divided by all instructions the process
    executed including the C library and loader). None when valgrind is missing or fails.
    """
    found = profile_tests(binary, tests, sandbox=sandbox, names=names, seconds=seconds)
    return None if found is None else found.weights


def _cheapest_first(binary: Path, tests: list[TestCase], sandbox: Sandbox) -> list[tuple[int, float]]:
    """(index, native CPU seconds) of each test, cheapest first (ties in the tests' order).
    A test that times out natively goes last: it would cost its whole timeout."""
    if len(tests) == 1:
        return [(0, 0.0)]
    costs = []
    for i, test in enumerate(tests):
        r = sandbox.run(binary, test.stdin)
        costs.append((i, math.inf if r.timed_out else r.cpu))
    return sorted(costs, key=lambda c: (c[1], c[0]))


def profile_tests(binary: Path, tests: list[TestCase], *, sandbox: Sandbox, names: list[str],
                  seconds: float = PROFILE_SECONDS) -> Profile | None:
    """:func:`function_weights` with how many tests they speak for (:class:`Profile`): the
    tests are profiled quickest first while the next one's callgrind run (predicted from its
    native CPU time) fits in ``seconds`` of wall time; the quickest always. None when valgrind
    is missing or fails."""
    valgrind = shutil.which("valgrind")
    if valgrind is None or not tests:
        return None
    wanted = set(names)
    totals: dict[str, int] = {n: 0 for n in names}
    grand = 0
    profiled = 0
    skipped = 0.0
    out_dir = Path(tempfile.mkdtemp(prefix="sgcc-prof-"))
    # The program may run as nobody: let it write its profile here and nowhere else of ours.
    os.chmod(out_dir, 0o733)
    started = time.monotonic()
    try:
        for n, (index, native) in enumerate(_cheapest_first(binary, tests, sandbox)):
            predicted = CALLGRIND_STARTUP + CALLGRIND_SLOWDOWN * native
            if n and time.monotonic() - started + predicted > seconds:
                skipped += min(predicted, PROFILE_TEST_TIMEOUT)
                continue  # a later one is no quicker, but its cost is counted for the note
            test = tests[index]
            out = out_dir / f"cg.{n}"
            r = sandbox.run(binary, test.stdin,
                            prefix=[valgrind, "--tool=callgrind", "--quiet", f"--callgrind-out-file={out}",
                                    "--compress-strings=no", "--compress-pos=no", "--dump-instr=no"],
                            timeout=PROFILE_TEST_TIMEOUT, memory=16 << 30, writable=[out_dir])
            if r.timed_out or not out.is_file():
                return None
            costs = parse_callgrind(out.read_text(errors="replace"))
            profiled += 1
            for fn, ir in costs.items():
                grand += ir
                base = fn[:-5] if fn.endswith(".cold") else fn
                if base in wanted:
                    totals[base] += ir
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    if grand <= 0:
        return None
    return Profile({k: v / grand for k, v in totals.items()}, profiled, len(tests), skipped)


def parse_costs(text: str) -> dict[tuple[str, str], int]:
    """Self instructions per ``(object file, function)`` from an uncompressed callgrind file
    (``--compress-strings=no``; a ``(id) `` prefix is stripped if present).

    Cost lines follow ``fn=NAME`` (in the object of the last ``ob=``); the line after
    ``calls=`` is the inclusive cost of that call, which belongs to the callee and is skipped.
    """
    costs: dict[tuple[str, str], int] = {}
    ob = fn = None
    skip_next = False
    for line in text.splitlines():
        if not line:
            continue
        c = line[0]
        if c.isdigit() or c in "+-*":
            if skip_next:
                skip_next = False
                continue
            parts = line.split()
            if fn is not None and len(parts) >= 2:
                try:
                    costs[(ob or "", fn)] = costs.get((ob or "", fn), 0) + int(parts[1])
                except ValueError:
                    pass
        elif line.startswith("ob="):
            ob = _strip_id(line[3:].strip())
        elif line.startswith("fn="):
            fn = _strip_id(line[3:].strip())
        elif line.startswith("calls="):
            skip_next = True
    return costs


def parse_callgrind(text: str) -> dict[str, int]:
    """Self instruction counts per function name (summed over objects) from an uncompressed
    callgrind file; see :func:`parse_costs`."""
    costs: dict[str, int] = {}
    for (_ob, fn), n in parse_costs(text).items():
        costs[fn] = costs.get(fn, 0) + n
    return costs


def _strip_id(name: str) -> str:
    return name.split(") ", 1)[1] if name.startswith("(") and ") " in name else name
