"""The records of a dataset build: the limits on what is read, one problem of the source
directory, its coverage and what became of it (kept, or dropped and why)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sgcc.verify.box.sandbox import TestCase
from sgcc.verify.timing import rounds as timing

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
NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,99}$")


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
    node: dict | None = None  # the cluster node that built and timed it (sgcc dataset build --cluster)

    @property
    def dropped(self) -> bool:
        return self.stage != "ok"

    def drop(self, stage: str, reason: str) -> Outcome:
        self.stage, self.reason = stage, reason
        return self


class Dropped(Exception):
    """A problem that cannot be in the dataset; caught per problem, never escapes
    :func:`sgcc.lab.dataset.build`."""

    def __init__(self, stage: str, reason: str):
        super().__init__(reason)
        self.stage, self.reason = stage, reason
