"""What the stages of one ``sgcc optimize --project`` run share.

:mod:`sgcc.project.optimize` runs the stages in order; each is a module that reads this state
and sets what it finds: :mod:`~sgcc.project.baseline` (gcc's build checked and its workload
written), :mod:`~sgcc.project.plan` (the profiles and the sources to search),
:mod:`~sgcc.project.adopt` (whole-project candidates; the winner becomes the baseline),
:mod:`~sgcc.project.search` (one source's search), :mod:`~sgcc.project.store` (verdicts under
every mode's key), :mod:`~sgcc.project.rebuild` (the tree rebuilt from the cache, tested and
timed) and :mod:`~sgcc.project.references` (what the user could have had instead). None of
them keeps state of its own.
"""

from __future__ import annotations

import itertools
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc.project import workload
from sgcc.project.record import Builder, Compile
from sgcc.project.report import ProjectReport

if TYPE_CHECKING:
    from collections.abc import Callable

    from sgcc.engine import Request
    from sgcc.progress import Progress
    from sgcc.project.budget import ProjectBudget
    from sgcc.project.pgo import ProjectProfile
    from sgcc.project.spec import ProjectSpec
    from sgcc.project.whole import Variant
    from sgcc.verify.box.sandbox import Sandbox, TestCase

    #: One timed run of the workload (sgcc.verify.timing.rounds.runner).
    Runner = Callable[[int, int], float]


class Adopted:
    """A whole-project candidate adopted as the search's baseline (:mod:`sgcc.project.adopt`):
    each compile's assembly under it (compile key -> text), the variant, each compile's
    profile digest when the variant is profile-guided, its built tree and its confirmation
    against gcc's build (an estimate's dict)."""

    def __init__(self, texts: dict[str, str], variant: Variant, digests: dict[str, str],
                 tree: Path | None = None, timing: dict | None = None):
        self.texts = texts
        self.variant = variant
        self.digests = digests
        self.tree = tree
        self.timing = timing


class ProjectRun:
    """One run's settings, what it recorded and what its stages found (see the module
    docstring). ``tmpl`` is an :class:`sgcc.engine.Request` with everything but the source,
    tests and output; ``sb`` the run's isolated runner, set while the stages run."""

    def __init__(self, spec: ProjectSpec, tmpl: Request, progress: Progress | None = None):
        self.spec = spec
        self.tmpl = tmpl
        self.progress = progress
        self.root = spec.root.resolve()
        self.builder = Builder(spec, tmpl, progress)
        self.workdir = Path(tempfile.mkdtemp(prefix="sgcc-project-"))
        self.workdir.chmod(0o755)
        self.report = ProjectReport(root=str(self.root))
        self.sb: Sandbox | None = None
        # The recorded build (sgcc.project.record), copied; its read-only copy the workload runs in.
        self.compiles: list[Compile] = []
        # The partitions of the recorded build's LTO links, each a compile of its own
        # (sgcc.project.partitions): an LTO build's code, made at its links.
        self.partitions: list[Compile] = []
        self.build_seconds = 0.0
        self.built_tree = self.workdir / "built"
        self.base = self.workdir / "base"
        # gcc's build as a baseline (sgcc.project.baseline): the workload and the engine's tests.
        self.commands: list[str] = []
        self.base_launcher = self.workdir / "base-launcher"
        self.engine_tests = self.workdir / "bench-tests"
        self.test_seconds = 0.0
        self.workload_seconds = 0.0  # wall seconds of the workload's first run on gcc's build
        self.workload_output = b""  # what it printed then
        self.made_libraries: dict[str, str] = {}  # shared libraries the build made: soname -> path in the tree
        self.budget: ProjectBudget | None = None
        self.profile: ProjectProfile | None = None  # the whole project's, when the pgo generator runs
        self.adopted: Adopted | None = None
        # PGO everywhere's tree (built as a whole-project candidate), and its confirmed timing.
        self.pgo_tree: Path | None = None
        self.pgo_confirmed: dict | None = None
        # Where copies are built, tested and timed (sgcc.project.place): at the project's path
        # once baseline.place_copies found the kernel allows it.
        self.where = workload.Where()
        self._case: list[TestCase] | None = None  # gcc's build's recorded workload (or stdin tests)
        self._trees = itertools.count()
        self.line = LiveLine(self)

    @property
    def sandbox(self) -> Sandbox:
        """The run's isolated runner (only while the stages run)."""
        assert self.sb is not None, "no sandbox outside Project.run"
        return self.sb

    def note(self, message: str) -> None:
        """The progress line's status."""
        if self.progress is not None:
            self.progress.status(message)

    def tick(self, on: bool) -> None:
        """The progress clock, while something long runs."""
        if self.progress is not None:
            self.progress.tick(on)

    def say(self, message: str) -> None:
        """A line of its own in the progress output."""
        if self.progress is not None:
            self.progress.line(message)

    def launcher(self, tree: Path, name: str, commands: list[str], trace: Path | None = None) -> Path:
        """A launcher running ``commands`` in the copy ``tree``, seen where the build put the
        project (:func:`sgcc.project.workload.launcher`)."""
        return workload.launcher(tree, name, commands, self.where, trace)

    def run_tests(self, tree: Path, output: Path | None = None, trace: Path | None = None) -> tuple[bool, str]:
        """The project's test command in the copy ``tree`` (:func:`sgcc.project.workload.run_tests`)."""
        return workload.run_tests(self.sandbox, tree, self.spec.test, self.spec.test_timeout, self.where,
                                  output, trace)

    def generator_names(self) -> set[str]:
        return {g.name for g in self.tmpl.generators}

    def text(self, c: Compile) -> str:
        """The baseline assembly of compile ``c``: gcc's, or the adopted whole-project candidate's."""
        if self.adopted is not None and c.key in self.adopted.texts:
            return self.adopted.texts[c.key]
        return c.asm_path.read_text(encoding="utf-8", errors="surrogateescape")

    def candidate_tree(self) -> int:
        """A number for the next candidate's tree (builds run in parallel)."""
        return next(self._trees)

    # -- the workload's runs, as timing takes them ------------------------------------------

    def stdin_tests(self) -> list[TestCase]:
        """The stdin tests with gcc's build's outputs, recorded once a run (stdin mode)."""
        from sgcc.verify.box import sandbox as sandboxmod

        if self._case is None:
            self._case = self.sandbox.record(self.base / self.spec.binary,
                                             sandboxmod.load_tests(Path(self.spec.tests)))
        return self._case

    def workload_runs(self) -> tuple[list[TestCase], Runner, Callable[[Path], Runner]]:
        """(the recorded case, gcc's build's run, tree -> that tree's run) of the workload, as
        :func:`sgcc.verify.timing.rounds.measure` takes them. gcc's outputs are recorded once a run."""
        from sgcc.verify.box import sandbox as sandboxmod
        from sgcc.verify.timing import rounds as timing

        sb = self.sandbox
        if self.spec.command_mode:
            if self._case is None:
                self._case = sb.record(self.base_launcher, [sandboxmod.TestCase(name="workload", stdin=b"")])
            case = self._case
            return (case, timing.runner(sb, self.base_launcher, case),
                    lambda t: timing.runner(sb, self.launcher(t, "bench", self.commands), case))
        tests = self.stdin_tests()
        return (tests, timing.runner(sb, self.base / self.spec.binary, tests),
                lambda t: timing.runner(sb, t / self.spec.binary, tests))


class LiveLine:
    """The progress line while sources are searched: which source, the project's ETA, and per
    function how many candidates were built and passed the tests."""

    def __init__(self, run: ProjectRun):
        self.run = run
        self.unit_label = ""
        self.live: dict[str, dict[str, int]] = {}  # function -> built/passed counts
        self._lock = threading.Lock()

    def start(self, label: str) -> None:
        self.unit_label = label
        self.live = {}

    def count(self, changed: dict, what: str) -> None:
        """One more candidate of the functions ``changed`` ``built`` or ``passed``."""
        with self._lock:
            for fn in changed:
                counts = self.live.setdefault(fn, {"built": 0, "passed": 0})
                counts[what] += 1
        self.status("")

    def status(self, message: str) -> None:
        parts = [f"{fn}: {c['built']} built, {c['passed']} passed" for fn, c in list(self.live.items())[:3]]
        budget = self.run.budget
        eta = f", {budget.eta()}]" if budget is not None else "]"
        self.run.note(f"{self.unit_label}{eta} {'; '.join(parts)}{' | ' + message if message else ''}")

    def tick(self, on: bool) -> None:
        """The engine's progress protocol (``status``, ``tick``), shown on this line."""
        self.run.tick(on)
