"""Optimizing a whole project built by make (or any build command): ``sgcc optimize --project``.

The stages run in the order of the modules that hold them, sharing one
:class:`~sgcc.project.state.ProjectRun`:

1. **Check, then record** (:mod:`sgcc.project.baseline`). The configuration
   (:mod:`sgcc.project.spec`) is checked before anything is built. Then clean, and build once
   with ``CC`` set to sgcc, the cache off and ``SGCC_RECORD`` set: every eligible compile
   writes down its source, flags, gcc's assembly and its cache key
   (:mod:`sgcc.project.record`). The result is plain gcc's build; its tests must pass and its
   workload run.
2. **Profile and attribute** (:mod:`sgcc.project.plan`, :mod:`sgcc.project.attribute`): the
   workload (and the test command) under callgrind, each executed function charged to the
   compile linked into the binary that ran it; the hottest functions covering ``coverage``
   of the project's instructions are searched, by source, hottest first.
3. **Whole project** (:mod:`sgcc.project.adopt`, :mod:`sgcc.project.whole`): with the pgo or
   flags generator, PGO everywhere and whole-project flag sets are built, tested and raced;
   a winner significantly faster than gcc's build becomes the baseline of the search.
4. **Search, once per source** (:mod:`sgcc.project.search`), within one wall-time budget
   shared by weight (:mod:`sgcc.project.budget`): each candidate becomes a program by
   rebuilding a private copy of the built tree from an overlay, and must pass the project's
   tests there, in the isolated runner.
5. **Store and rebuild** (:mod:`sgcc.project.store`, :mod:`sgcc.project.rebuild`): verdicts go
   to the cache under every mode's key; the real tree is cleaned and rebuilt with
   ``CC=sgcc``, which substitutes the winners from the cache; the result is tested and its
   workload timed against gcc's build. If it failed a test, the winners are withdrawn and the
   tree rebuilt plainly. A later clean ``make CC=sgcc`` rebuilds the same bytes from the cache.
6. **References** (:mod:`sgcc.project.references`): PGO everywhere and the best flag set,
   timed beside sgcc's result.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from sgcc.project import adopt, baseline, partitions, pgo, plan, rebuild, references, search, store, workload
from sgcc.project.budget import ProjectBudget
from sgcc.project.report import ProjectReport
from sgcc.project.spec import ProjectSpec
from sgcc.project.state import ProjectRun

if TYPE_CHECKING:
    from collections.abc import Callable

    from sgcc.engine import Request
    from sgcc.progress import Progress
    from sgcc.project.plan import Target

__all__ = ["Project", "ProjectSpec", "ProjectReport", "expected_duration"]

T = TypeVar("T")


class Project:
    """Runs ``sgcc optimize --project`` (see the module docstring). ``request_template`` is an
    :class:`sgcc.engine.Request` with everything but the source, tests and output."""

    def __init__(self, spec: ProjectSpec, request_template: Request, cfg: object = None,
                 progress: Progress | None = None):
        self.run_state = ProjectRun(spec, request_template, progress)
        self.cfg = cfg

    def run(self) -> ProjectReport:
        """Every stage, in order; the report."""
        from sgcc.verify.box import sandbox as sandboxmod

        r = self.run_state
        started = time.monotonic()
        r.say(expected_duration(r.tmpl.budget_seconds, plan.profile_cap(r.tmpl.budget_seconds,
                                                                        r.spec.profile_timeout)))
        baseline.record(r)
        with sandboxmod.Sandbox(timeout=r.spec.test_timeout, expose=workload.expose, processes=256,
                                open_files=256, file_size=1 << 30, worlds=r.tmpl.worlds) as sb:
            r.sb = sb
            baseline.place_copies(r)
            baseline.prepare(r)
            targets = plan.choose(r, *plan.profile(r))
            budget = self._budget(targets, started)
            search_tree, search_base = self._whole_project(targets, budget)
            search_started = time.monotonic()
            self._search(targets, budget, search_tree, search_base)
            store.store_siblings(r, targets)
            store.store_whole(r)
            r.report.phases["search"] = round(time.monotonic() - search_started, 1)
            r.report.final = self._timed("final", rebuild.rebuild_and_check)
            self._timed("references", _references)
        r.report.seconds = time.monotonic() - started
        over = budget.over()
        if over > 1:
            slowest = max(("whole_project", "search", "final", "references"),
                          key=lambda k: r.report.phases.get(k, 0.0))
            r.report.notes.append(f"the run went {over:.0f} s over its budget of {budget.total / 60:.0f} min "
                                  f"(the longest phase after it was fixed: {slowest}, "
                                  f"{r.report.phases.get(slowest, 0.0):.0f} s; timings after the search take at "
                                  "least 6 rounds)")
        r.report.budget_over = round(over, 1)
        return r.report

    def _timed(self, phase: str, stage: Callable[[ProjectRun], T]) -> T:
        """``stage(run)``, its seconds in the report's phases."""
        t0 = time.monotonic()
        out = stage(self.run_state)
        self.run_state.report.phases[phase] = round(time.monotonic() - t0, 1)
        return out

    def _budget(self, targets: list[Target], started: float) -> ProjectBudget:
        """One wall-time budget for the rest of the run, shared by the sources' weights."""
        r = self.run_state
        budget = ProjectBudget.choose(r.tmpl.budget_seconds, targets, r.build_seconds, r.test_seconds,
                                      r.workload_seconds, r.tmpl.timing_rounds)
        r.report.budget_seconds, r.report.budget_rule = budget.total, budget.rule
        fixed = time.monotonic()
        r.report.budget_fixed_at = round(fixed - started, 1)
        # --budget was fixed before anything ran and bounds the whole run; the default is known
        # only now, and bounds what follows (what came before had limits of its own).
        budget.start(started if r.tmpl.budget_seconds else fixed)
        r.budget = budget
        counted = (f"{(fixed - started) / 60:.1f} min of it spent" if r.tmpl.budget_seconds else
                   f"fixed {(fixed - started) / 60:.1f} min into the run, for what follows")
        r.say(f"budget {budget.total / 60:.0f} min ({budget.rule}), {counted}: {len(targets)} source(s) to search, "
              f"{budget.reserve / 60:.1f} min of it kept for the final rebuild, its timing and the references")
        return budget

    def _whole_project(self, targets: list[Target], budget: ProjectBudget) -> tuple[Path, Path]:
        """The whole project's profile and candidates (with the pgo or flags generator): the
        tree candidates are built on and the program they are timed against (gcc's build, or
        the adopted whole-project candidate's)."""
        r = self.run_state
        tree, base = r.built_tree, r.base_launcher if r.spec.command_mode else r.base / r.spec.binary
        gens = r.generator_names()
        if not targets or not gens & {"pgo", "flags"}:
            return tree, base
        if r.partitions:
            # The variants change recorded compiles; an LTO build's are -flto compiles, which
            # the drop-in hands to gcc (not recorded): its code is searched in its partitions.
            r.report.whole_project = {"adopted": False, "field": [],
                                      "why": "gcc's build is an LTO build (its code is made at the links): the "
                                             "whole-project candidates, which change its recorded compiles, were not "
                                             "tried; its link partitions are searched"}
            return tree, base
        if "pgo" in gens:
            pgo.profile_project(r)
        t0 = time.monotonic()
        try:
            adopted = adopt.whole_project(r, budget)
        except Exception as exc:  # noqa: BLE001 - the search goes on from gcc's build
            adopted = None
            r.report.whole_project = {"adopted": False, "why": f"{type(exc).__name__}: {exc}"}
        r.report.phases["whole_project"] = round(time.monotonic() - t0, 1)
        if adopted is None:
            return tree, base
        if r.spec.command_mode:
            return adopted, r.launcher(adopted, "bench", r.commands)
        return adopted, adopted / r.spec.binary

    def _search(self, targets: list[Target], budget: ProjectBudget, tree: Path, base: Path) -> None:
        """Each source searched in turn, hottest first, for its share of the budget."""
        r = self.run_state
        if r.adopted is not None and r.adopted.variant.lto and targets:
            # The adopted baseline's compiles are LTO's intermediate language: the code that
            # ships is made at link time, in partitions; those are what is searched.
            self._search_partitions(budget, tree, base)
            return

        parts = {p.key for p in r.partitions}

        def label(target: Target) -> str | None:
            if target.searched.key in parts:
                return partitions.label(target.searched, target.binaries)
            try:
                return str(Path(target.source).resolve().relative_to(r.root))
            except ValueError:
                r.report.notes.append(f"{target.source}: outside the project tree, not searched")
                return None

        def search_one(target: Target, name: str, seconds: float) -> dict:
            if target.searched.key in parts:  # gcc's build is an LTO build: a partition of one of its links
                return partitions.search_partition(r, target, name, seconds, tree, base)
            return search.search_source(r, target, name, seconds, tree, base)

        self._each(targets, budget, label, search_one)

    def _search_partitions(self, budget: ProjectBudget, tree: Path, base: Path) -> None:
        """The adopted LTO build's partitions profiled, and the hottest searched in turn
        (:mod:`sgcc.project.partitions`)."""
        r = self.run_state
        assert r.adopted is not None
        name = r.adopted.variant.name
        gens = r.generator_names() & partitions.ASSEMBLY_GENERATORS
        if not gens:
            r.report.notes.append(
                f"{name} was adopted: its code is made at link time, in LTO partitions, which have no C source; "
                f"only generators that work on assembly ({', '.join(sorted(partitions.ASSEMBLY_GENERATORS))}) "
                "search them and none was chosen: not searched")
            r.say(r.report.notes[-1])
            return
        parts = partitions.partitions(r, adopt.partitions_dir(r, r.adopted.variant), r.adopted.tree)
        if not parts:
            r.report.notes.append(f"{name} was adopted, but its links' partitions were not recorded (no link of the "
                                  "build ran LTO through sgcc): not searched")
            r.say(r.report.notes[-1])
            return
        found, ran = partitions.profile(r, tree, parts)
        targets = plan.choose(r, found, ran, parts)
        r.say(f"{name} was adopted: searching the functions its links make, {len(targets)} of {len(parts)} LTO "
              f"partition(s) holding the workload's hot code, with {', '.join(sorted(gens))}")
        self._each(targets, budget, lambda target: partitions.label(target.searched, target.binaries),
                   lambda target, label, seconds: partitions.search_partition(r, target, label, seconds, tree, base))

    def _each(self, targets: list[Target], budget: ProjectBudget, label: Callable[[Target], str | None],
              search_one: Callable[[Target, str, float], dict]) -> None:
        """``search_one(target, its label, seconds)`` for each target, hottest first, for its
        share of the budget; the units reported."""
        r = self.run_state
        for n, target in enumerate(targets):
            name = label(target)
            if name is None:
                continue
            seconds = budget.share(target.weight)
            if seconds is None:
                r.report.not_searched.append(name)
                continue
            r.line.start(f"[{n + 1}/{len(targets)} {name}")
            unit = search_one(target, name, seconds)
            budget.spent(target.weight)
            if unit.get("report") is not None:  # (not: gcc's own assembly did not assemble there)
                r.report.searched_share += target.weight
            unit["modes"] = f"{len(target.group)} modes" if len(target.group) > 1 else ""
            r.report.units.append(unit)
            r.say(f"{name}: {unit['tally']}")
            if not r.tmpl.keep_temps:
                shutil.rmtree(r.workdir / "cands", ignore_errors=True)

    def close(self) -> None:
        if not self.run_state.tmpl.keep_temps:
            shutil.rmtree(self.run_state.workdir, ignore_errors=True)


def _references(run: ProjectRun) -> None:
    try:
        references.references(run)
    except Exception as exc:  # noqa: BLE001 - a reference never fails the run
        run.report.references.setdefault("pgo_everywhere", {"error": f"{type(exc).__name__}: {exc}"})


def expected_duration(budget_seconds: float | None, profile_seconds: float = 0.0) -> str:
    """The line shown before any work: how long the run will take."""
    from sgcc.project.budget import BASE, MOST, PER_SOURCE
    from sgcc.project.plan import profile_cap

    profile_seconds = profile_seconds or profile_cap(None)

    if budget_seconds:
        return (f"expected duration: about {budget_seconds / 60:.0f} min (--budget), builds, profiles, search and the "
                "final rebuild and timing included")
    return (f"expected duration: the recording build, the tests and two profiles (each at most "
            f"{profile_seconds:.0f} s: profile_timeout), then a budget of {BASE / 60:.0f} min + "
            f"{PER_SOURCE / 60:.0f} min per source holding the workload's hot code, at most {MOST / 60:.0f} min, "
            "fixed once the workload is profiled (--budget fixes one for the whole run now)")
