"""What to search: the workload (and the test command) profiled, each function charged to a
compile, and the sources holding the hottest functions chosen.

The workload (the ``bench`` commands, or the binary on its stdin tests) runs under callgrind
in a copy of gcc's built tree, every child process followed; each executed function is
charged to the *compile* whose object file is linked into the program or library that ran
it (:mod:`sgcc.project.attribute`). With a test command, the test command is profiled too: a
function is searched when the tests ran it, or, where the workload counts as a test
(:func:`workload_is_test`), when the workload did: the report says which functions rest on
the workload alone. The hottest functions covering ``coverage`` (90%) of the project's
executed instructions are searched, grouped by source, hottest source first
(:func:`choose`). Each profile may take :func:`profile_cap` (the ``profile_timeout``
setting); what ran by then is used.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc.errors import SgccError
from sgcc.project import attribute, workload

if TYPE_CHECKING:
    from sgcc.project.attribute import Attribution
    from sgcc.project.record import Compile
    from sgcc.project.state import ProjectRun


@dataclass
class Target:
    """One source to search: its ``weight`` (share of the project's instructions) and its
    functions' ``weights``; its compiles (``group``: one per mode, static and PIC say), the one
    the workload ran (``searched``), and the programs or libraries that ran it (``binaries``)."""

    source: str
    weight: float
    weights: dict[str, float]
    group: list[Compile]
    searched: Compile
    binaries: set[str] = field(default_factory=set)
    # function -> what its candidates are tested with: "tests" (the test command ran it) or
    # "workload" (only the workload did, and it counts as a test)
    evidence: dict[str, str] = field(default_factory=dict)


def profile_cap(budget_seconds: float | None, setting: float = 0.0) -> float:
    """Most seconds one callgrind profile may take: ``setting`` (``profile_timeout``) when
    given, else a fifth of the budget (of the default for two sources when none is given),
    at least a minute; what ran by then is used."""
    from sgcc.project.budget import BASE, PER_SOURCE

    if setting:
        return float(setting)
    return max(60.0, 0.2 * (budget_seconds or BASE + 2 * PER_SOURCE))


def workload_is_test(run: ProjectRun) -> tuple[bool, str]:
    """Whether the workload counts as a test of what it runs (``bench_is_test``), and why:
    every timed run of it must exit as gcc's build's did and print what it printed
    (:func:`sgcc.verify.timing.rounds.runner`), and so does every candidate's check run."""
    setting = run.spec.bench_is_test
    if setting is True:
        return True, "bench_is_test = true: the workload checks its own result (its exit status)"
    if setting is False:
        return False, "bench_is_test = false"
    if run.workload_output.strip():
        return True, (f"it prints {len(run.workload_output)} bytes on gcc's build, which every run must print "
                      "exactly so")
    return False, ("it prints nothing (bench_is_test = true says it checks its own result, as "
                   "'... | cmp - expected' does)")


def profile(run: ProjectRun) -> tuple[Attribution, Attribution | None]:
    """The workload's attribution, and the test command's (None without a test command)."""
    spec, report = run.spec, run.report
    cap = profile_cap(run.tmpl.budget_seconds, spec.profile_timeout)
    run.note(f"profiling the workload under callgrind (at most {cap:.0f} s): {'; '.join(run.commands)}")
    run.tick(True)
    try:
        t0 = time.monotonic()
        costs = attribute.profile(run.sandbox, run.base_launcher, run.workdir / "prof-bench", timeout=cap,
                                  partial=True)
        report.phases["profile_workload"] = round(time.monotonic() - t0, 1)
        if costs is None:
            raise SgccError("the workload could not be profiled (valgrind missing, or the workload failed "
                            "under it)", hint="sgcc searches only code the workload runs; install valgrind")
        if attribute.was_partial(costs):
            report.notes.append(f"the workload's profile was cut at {cap:.0f} s (profile_timeout): its hottest "
                                "functions are those of the part that ran by then")
        found = attribute.attribute(costs, run.base, run.compiles + run.partitions, run.root, seen_at=run.where.root)
        ran_tests = _profile_tests(run, cap) if spec.command_mode else None
    finally:
        run.tick(False)
    ph = report.phases
    took = ph.get("profile_workload", 0) + ph.get("profile_tests", 0)
    run.say(f"profiled in {took:.0f} s (workload {ph.get('profile_workload', 0):.0f} s"
            + (f", tests {ph['profile_tests']:.0f} s" if "profile_tests" in ph else "") + ")")
    return found, ran_tests


def _profile_tests(run: ProjectRun, cap: float) -> Attribution:
    """The test command under callgrind: which functions the tests run."""
    spec, report = run.spec, run.report
    # Callgrind runs a program some 20-50x slower: say what to expect, and cap it.
    run.note(f"profiling the test command under callgrind (natively {run.test_seconds:.0f} s; "
             f"at most {cap:.0f} s): {spec.test}")
    test_tree = workload.copy_tree(run.built_tree, run.workdir / "base-test")
    t0 = time.monotonic()
    tcosts = attribute.profile(run.sandbox, run.launcher(test_tree, "test", [spec.test]),
                               run.workdir / "prof-test", timeout=cap, partial=True)
    report.phases["profile_tests"] = round(time.monotonic() - t0, 1)
    if tcosts is None:
        raise SgccError("the test command could not be profiled (it failed under valgrind)",
                        hint="sgcc searches only code the tests run; a smaller test command "
                             "(a subset of the suite) may do")
    if attribute.was_partial(tcosts):
        # Sound: every function in the cut profile did run under the tests.
        report.notes.append(f"the test command's profile was cut at {cap:.0f} s (profile_timeout): only "
                            "functions its tests had run by then count as tested")
    return attribute.attribute(tcosts, test_tree, run.compiles + run.partitions, run.root, seen_at=run.where.root)


def choose(run: ProjectRun, found: Attribution, ran_tests: Attribution | None,
           compiles: list[Compile] | None = None) -> list[Target]:
    """The sources to search, hottest first, covering ``coverage`` of the workload; their
    compiles among ``compiles`` (by default the recorded build's compiles and its LTO links'
    partitions; an adopted LTO variant's partitions)."""
    report = run.report
    compiles = run.compiles + run.partitions if compiles is None else compiles
    total = max(1, found.project)
    report.project_share = found.project / max(1, found.total)
    items = []
    untested: list[tuple[int, str]] = []
    by_workload, why = workload_is_test(run) if ran_tests is not None else (False, "")
    evidence: dict[tuple[str, str], str] = {}
    for source, fns in found.by_source.items():
        for fn, ir in fns.items():
            if ran_tests is not None and not ran_tests.executed(source, fn):
                untested.append((ir, f"{Path(source).name}:{fn}"))
                if not by_workload:
                    continue
                evidence[(source, fn)] = "workload"
            else:
                evidence[(source, fn)] = "tests"
            items.append((ir, source, fn))
    items.sort(reverse=True)
    if ran_tests is not None:
        report.evidence = {"workload_is_test": by_workload, "why": why, "workload_only": []}
    if untested:
        untested.sort(reverse=True)
        share = sum(ir for ir, _ in untested) / total
        if by_workload:
            report.notes.append(f"{len(untested)} function(s) the workload runs and the tests do not ({share:.1%} of "
                                f"the workload) are searched with the workload as their test ({why}): "
                                + ", ".join(n for _, n in untested[:5]))
        else:
            report.notes.append(f"{len(untested)} function(s) the workload runs and the tests do not are not "
                                f"searched ({share:.1%} of the workload; the workload is no test: {why}): "
                                + ", ".join(n for _, n in untested[:5]))
    chosen: dict[str, dict[str, float]] = {}
    covered = 0
    for ir, source, fn in items:
        if covered >= run.spec.coverage * total:
            break
        chosen.setdefault(source, {})[fn] = ir / total
        covered += ir
        if evidence.get((source, fn)) == "workload":
            report.evidence["workload_only"].append({"source": str(Path(source).name), "function": fn,
                                                     "share": round(ir / total, 4)})
    report.coverage = covered / total
    if found.ambiguous:
        report.notes.append(f"{len(found.ambiguous)} function(s) could have come from more than one source "
                            "and were not searched: " + ", ".join(sorted(found.ambiguous)[:5]))
    targets = []
    for source, weights in chosen.items():
        group = [c for c in compiles if str(c.source) == source]
        seen = found.seen_in.get(source, {})
        searched = max((c for c in group if c.key in seen), key=lambda c: len(seen[c.key]))
        binaries: set[str] = set().union(*seen.values())
        targets.append(Target(source, sum(weights.values()), weights, group, searched, binaries,
                              {fn: evidence.get((source, fn), "tests") for fn in weights}))
    targets.sort(key=lambda t: -t.weight)
    if not targets:
        report.notes.append("no executed code could be charged to the project's compiles: the workload "
                            "runs none of them, or its programs are stripped (build with symbols)")
    return targets
