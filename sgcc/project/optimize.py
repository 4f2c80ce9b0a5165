"""Optimizing a whole project built by make (or any build command): ``sgcc optimize --project``.

1. **Check, then record.** The configuration (:mod:`sgcc.project.spec`) is checked before
   anything is built. Then clean, and build once with ``CC`` set to sgcc, the cache off and
   ``SGCC_RECORD`` set: every eligible compile writes down its source, flags, gcc's assembly
   and its cache key (:mod:`sgcc.project.record`). The result is plain gcc's build.
2. **Profile and attribute.** The workload (the ``bench`` commands, or the binary on its
   stdin tests) runs under callgrind in a copy of the built tree, every child process
   followed; each executed function is charged to the *compile* whose object file is linked
   into the program or library that ran it (:mod:`sgcc.project.attribute`). With a test
   command, the test command is profiled too: a function is searched only when both ran it.
   The hottest functions covering ``coverage`` (90%) of the project's executed instructions
   are searched, hottest first.
3. **Search, once per source.** The budget (:mod:`sgcc.project.budget`) is shared among the
   sources by weight. A source compiled in several modes (static and PIC) is searched once,
   on the compile the workload ran; a candidate becomes a program by rebuilding a private
   copy of the built tree in which the source is touched and the drop-in compiles each of its
   compiles from the overlay (keyed by compile: the searched one gets the candidate, every
   other mode gets the candidate's functions substituted into its own assembly); make
   relinks exactly what depends on them. The candidate counts as built only when every
   program or library that ran the function was rebuilt, and (with a test command) when the
   project's test command passed in that tree, inside the isolated runner.
4. **Store and rebuild.** Verdicts go to the cache under every mode's key; the real tree is
   cleaned and rebuilt with ``CC=sgcc``, which substitutes the winners from the cache; the
   result is tested and its workload timed against gcc's build (interleaved, CPU of the whole
   process tree). If it failed a test, the winners are withdrawn and the tree rebuilt
   plainly. A later clean ``make CC=sgcc`` rebuilds the same bytes from the cache.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import shutil
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc.errors import SgccError
from sgcc.project import attribute, record, workload
from sgcc.project.budget import ProjectBudget
from sgcc.project.record import Builder, Compile
from sgcc.project.report import ProjectReport, function_lines, tally
from sgcc.project.spec import ProjectSpec

if TYPE_CHECKING:
    from sgcc.cache.entry import Applied, Entry

__all__ = ["Project", "ProjectSpec", "ProjectReport"]


class Project:
    """Runs ``sgcc optimize --project`` (see the module docstring)."""

    def __init__(self, spec: ProjectSpec, request_template, cfg, progress=None):
        self.spec = spec
        self.tmpl = request_template  # an sgcc.engine.Request with everything but source/tests/output
        self.cfg = cfg
        self.progress = progress
        self.builder = Builder(spec, request_template, progress)
        self.workdir = Path(tempfile.mkdtemp(prefix="sgcc-project-"))
        os.chmod(self.workdir, 0o755)
        self._count = itertools.count()
        self._lock = threading.Lock()
        self.live: dict[str, dict[str, int]] = {}  # function -> built/tested counts (the live line)
        self.unit_label = ""
        self.budget: ProjectBudget | None = None
        self.profile = None  # sgcc.project.pgo.ProjectProfile, when the pgo generator runs
        # A whole-project candidate adopted as the search's baseline (sgcc.project.whole):
        # compile key -> gcc's assembly of that compile, the variant, each one's profile digest.
        self.pgo_texts: dict[str, str] | None = None
        self.whole_variant = None
        self.pgo_digests: dict[str, str] = {}
        # PGO everywhere's tree (built as a whole-project candidate), and its confirmed timing.
        self.pgo_tree: Path | None = None
        self.pgo_confirmed: dict | None = None
        self._compiles: list[Compile] = []
        self._case = None  # gcc's build's recorded workload (or stdin tests): see _workload_runs

    def _generator_names(self) -> set[str]:
        return {getattr(g, "name", "") for g in self.tmpl.generators}

    def _text(self, c: Compile) -> str:
        """The baseline assembly of compile ``c``: gcc's, or the adopted whole-project candidate's."""
        if self.pgo_texts is not None and c.key in self.pgo_texts:
            return self.pgo_texts[c.key]
        return c.asm_path.read_text(encoding="utf-8", errors="surrogateescape")

    def _note(self, message: str) -> None:
        if self.progress is not None:
            self.progress.status(message)

    # -- the test command and the workload ------------------------------------------------

    def _expose(self, binary: Path) -> list[Path]:
        """The tree a launcher works in is visible to its runs (and only that one)."""
        tree = workload.tree_of(binary)
        return [tree] if tree is not None and tree.is_dir() else []

    def _stdin_workload(self, tree: Path, tests: list) -> list[str]:
        """Stdin tests as a workload: the binary run on each input, inside the tree."""
        inputs = tree / ".sgcc-inputs"
        inputs.mkdir()
        commands = []
        for n, t in enumerate(tests):
            (inputs / f"{n}.in").write_bytes(t.stdin)
            commands.append(f"./{self.spec.binary} < .sgcc-inputs/{n}.in > /dev/null")
        return commands

    # -- a candidate's build --------------------------------------------------------------

    def _linker(self, built_tree: Path, group: list[Compile], searched: Compile, binaries: set[str], sandbox):
        """``link(asm_text, obj, where)`` for the engine: the candidate's program (see step 3)."""
        from sgcc.asm.units import AsmFile

        root = self.spec.root.resolve()
        others = [(c, self._text(c)) for c in group if c.key != searched.key]
        rel_source = searched.source.resolve().relative_to(root)

        def link(asm_text: str, obj: Path, where: Path, replacements: dict[str, str]):
            from sgcc.asm import WHOLE_UNIT

            changed = dict(replacements)
            overlay = {searched.key: asm_text}
            for c, text in others:
                if WHOLE_UNIT in changed:
                    return None, f"a whole-unit candidate cannot be substituted into the other compiles of {rel_source}"
                try:
                    overlay[c.key] = AsmFile.parse(text).join(changed)
                except KeyError as exc:
                    return None, (f"{exc.args[0]} cannot be substituted into the other compile of "
                                  f"{rel_source} ({' '.join(c.args)})")
            n = next(self._count)
            tree = self.workdir / "cands" / f"c{n}"
            tree.parent.mkdir(exist_ok=True)
            shutil.copytree(built_tree, tree, symlinks=True)
            overlay_path = self.workdir / "cands" / f"c{n}.overlay.json"
            overlay_path.write_text(json.dumps(overlay), encoding="utf-8", errors="surrogateescape")
            # Newer than everything built: make recompiles this source in every mode (from the
            # overlay) and relinks what depends on it, nothing else.
            source_times = os.stat(tree / rel_source)
            future = time.time() + 2
            os.utime(tree / rel_source, (future, future))
            env = self.builder.overlay_env(overlay_path, tree)
            r = self.builder.run(self.spec.build, tree, env, "build", check=False)
            # Back to its own time: the test command's make must find the tree up to date.
            os.utime(tree / rel_source, ns=(source_times.st_atime_ns, source_times.st_mtime_ns))
            if not r.ok:
                lines = [ln for ln in (r.stdout + r.stderr).decode(errors="replace").splitlines()
                         if "error" in ln.lower()]
                return None, "\n".join(lines[:5]) or r.describe()
            if record.unused(overlay_path, [searched.key]):
                # Timing such a tree would time gcc's build under the candidate's name.
                return None, (f"the build did not use the candidate's assembly for {rel_source} (its compile "
                              f"had another cache key than the recorded build's)")
            stale = [b for b in sorted(binaries)
                     if not (tree / b).is_file() or (tree / b).read_bytes() == (built_tree / b).read_bytes()]
            if stale:
                return None, f"not rebuilt with the candidate: {', '.join(stale)} (the build did not relink it)"
            self._live(changed, "built")
            if self.spec.command_mode:
                # The tests run in their own copy: what they write (or a hostile candidate
                # rewrites) is not what the workload is then timed on.
                test_tree = workload.copy_tree(tree, tree.with_name(tree.name + "-test"))
                ok, why = workload.run_tests(sandbox, test_tree, self.spec.test, self.spec.test_timeout)
                if not ok:
                    return None, why
                self._live(changed, "passed")
                return workload.launcher(tree, "bench", self.spec.workload), ""
            return tree / self.spec.binary, ""

        return link

    def _live(self, changed: dict, what: str) -> None:
        with self._lock:
            for fn in changed:
                counts = self.live.setdefault(fn, {"built": 0, "passed": 0})
                counts[what] += 1
        self._show("")

    def _show(self, message: str) -> None:
        parts = [f"{fn}: {c['built']} built, {c['passed']} passed" for fn, c in list(self.live.items())[:3]]
        eta = f", {self.budget.eta()}]" if self.budget is not None else "]"
        self._note(f"{self.unit_label}{eta} {'; '.join(parts)}{' | ' + message if message else ''}")

    # -- the whole run --------------------------------------------------------------------

    def run(self) -> ProjectReport:
        from sgcc.verify.box import sandbox as sandboxmod

        started = time.monotonic()
        spec = self.spec
        root = spec.root.resolve()
        report = ProjectReport(root=str(root))
        if self.progress is not None:
            self.progress.line(expected_duration(self.tmpl.budget_seconds))
        self._note("clean build with the compiles recorded")
        compiles, build_seconds = self.builder.record(self.workdir)
        self._compiles = compiles
        report.phases["build"] = round(build_seconds, 1)
        built_tree = self.workdir / "built"
        shutil.copytree(root, built_tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        with sandboxmod.Sandbox(timeout=spec.test_timeout, expose=self._expose, processes=256,
                                open_files=256, file_size=1 << 30, worlds=self.tmpl.worlds) as sb:
            base = workload.copy_tree(built_tree, self.workdir / "base", writable=False)
            if spec.command_mode:
                report.proof = (f"the project's own test command ({spec.test!r}), run in the rebuilt tree in the "
                                "isolated runner for every candidate; no generated inputs")
                self._note(f"running the project's tests on gcc's build: {spec.test}")
                t0 = time.monotonic()
                ok, why = workload.run_tests(sb, workload.copy_tree(built_tree, self.workdir / "base-first-test"),
                                             spec.test, spec.test_timeout)
                test_seconds = time.monotonic() - t0
                report.phases["tests"] = round(test_seconds, 1)
                if not ok:
                    raise SgccError(f"gcc's build fails the project's own tests: {why}",
                                    hint="the test command must pass on the plain build (exit status 0)")
                commands = spec.workload
                engine_tests = self.workdir / "bench-tests"
                engine_tests.mkdir()
                (engine_tests / "workload.in").write_bytes(b"")
            else:
                binary = root / spec.binary
                if not binary.is_file():
                    raise SgccError(f"the build did not produce {binary}", hint="check binary = ... in [project]")
                tests = sandboxmod.load_tests(Path(spec.tests))
                report.proof = (f"the stdin tests in {spec.tests} and inputs generated from them, compared with "
                                "gcc's program")
                test_seconds = 0.0
                commands = self._stdin_workload(base, tests)
                engine_tests = Path(spec.tests)
            report.workload = commands
            self._check_workload(base, commands)
            base_launcher = workload.launcher(base, "bench", commands)
            first = sb.run(base_launcher, b"", timeout=spec.test_timeout)
            if not first.ok:
                tail = (first.stdout + first.stderr).decode(errors="replace").strip().splitlines()[-6:]
                raise SgccError(f"the workload fails on gcc's build: {first.describe()}\n" + "\n".join(tail),
                                hint="bench commands run in a copy of the built tree that may not be writable to them "
                                     "(write to /tmp or /dev/null); exit status 0 is expected")

            cap = profile_cap(self.tmpl.budget_seconds)
            self._note(f"profiling the workload under callgrind (at most {cap:.0f} s): {'; '.join(commands)}")
            self.progress and self.progress.tick(True)
            try:
                t0 = time.monotonic()
                costs = attribute.profile(sb, base_launcher, base, self.workdir / "prof-bench", timeout=cap,
                                          partial=True)
                report.phases["profile_workload"] = round(time.monotonic() - t0, 1)
                if costs is None:
                    raise SgccError("the workload could not be profiled (valgrind missing, or the workload failed "
                                    "under it)", hint="sgcc searches only code the workload runs; install valgrind")
                if attribute.was_partial(costs):
                    report.notes.append(f"the workload's profile was cut at {cap:.0f} s: its hottest functions are "
                                        "those of the part that ran by then")
                found = attribute.attribute(costs, base, compiles, root)
                ran_tests = None
                if spec.command_mode:
                    # Callgrind runs a program some 20-50x slower: say what to expect, and cap it.
                    self._note(f"profiling the test command under callgrind (natively {test_seconds:.0f} s; "
                               f"at most {cap:.0f} s): {spec.test}")
                    test_tree = workload.copy_tree(built_tree, self.workdir / "base-test")
                    t0 = time.monotonic()
                    tcosts = attribute.profile(sb, workload.launcher(test_tree, "test", [spec.test]), test_tree,
                                               self.workdir / "prof-test", timeout=cap, partial=True)
                    report.phases["profile_tests"] = round(time.monotonic() - t0, 1)
                    if tcosts is None:
                        raise SgccError("the test command could not be profiled (it failed under valgrind)",
                                        hint="sgcc searches only code the tests run; a smaller test command "
                                             "(a subset of the suite) may do")
                    if attribute.was_partial(tcosts):
                        # Sound: every function in the cut profile did run under the tests.
                        report.notes.append(f"the test command's profile was cut at {cap:.0f} s: only functions "
                                            "its tests had run by then are searched")
                    ran_tests = attribute.attribute(tcosts, test_tree, compiles, root)
            finally:
                self.progress and self.progress.tick(False)
            if self.progress is not None:
                ph = report.phases
                took = ph.get("profile_workload", 0) + ph.get("profile_tests", 0)
                self.progress.line(f"profiled in {took:.0f} s (workload {ph.get('profile_workload', 0):.0f} s"
                                   + (f", tests {ph['profile_tests']:.0f} s" if "profile_tests" in ph else "") + ")")
            plan = self._plan(found, ran_tests, compiles, report)
            if not plan:
                report.notes.append("no executed code could be charged to the project's compiles: the workload "
                                    "runs none of them, or its programs are stripped (build with symbols)")
            budget = ProjectBudget.choose(self.tmpl.budget_seconds, plan, build_seconds, test_seconds)
            report.budget_seconds, report.budget_rule = budget.total, budget.rule
            budget.start(started)
            if self.progress is not None and plan:
                self.progress.line(f"budget {budget.total / 60:.0f} min ({budget.rule}), "
                                   f"{(time.monotonic() - started) / 60:.1f} min of it spent: "
                                   f"{len(plan)} source(s) to search")
            gens = self._generator_names()
            if plan and gens & {"pgo", "flags"}:
                if "pgo" in gens:
                    self._train(root, compiles, sb, commands, report)
                t0 = time.monotonic()
                try:
                    adopted = self._whole_project(compiles, built_tree, sb, base_launcher, report, commands, budget)
                except Exception as exc:  # noqa: BLE001 - the search goes on from gcc's build
                    adopted = None
                    report.whole_project = {"adopted": False, "why": f"{type(exc).__name__}: {exc}"}
                report.phases["whole_project"] = round(time.monotonic() - t0, 1)
                if self.pgo_tree is not None:
                    # Its build is the PGO-everywhere reference's: kept back in the reserve, spent now.
                    budget.reserve = max(0.0, budget.reserve - build_seconds)
                if adopted is not None:
                    built_tree = adopted
                    if spec.command_mode:
                        search_base = workload.launcher(adopted, "bench", commands)
                    else:
                        search_base = adopted / spec.binary
            search_started = time.monotonic()
            if self.pgo_texts is None:
                search_base = base_launcher if spec.command_mode else base / spec.binary
            for n, (source, weight, weights, group, searched, binaries) in enumerate(plan):
                try:
                    rel = str(Path(source).resolve().relative_to(root))
                except ValueError:
                    report.notes.append(f"{source}: outside the project tree, not searched")
                    continue
                seconds = budget.share(weight)
                if seconds is None:
                    report.not_searched.append(rel)
                    continue
                self.unit_label = f"[{n + 1}/{len(plan)} {rel}"
                self.budget = budget
                self.live = {}
                unit = self._search(rel, group, searched, binaries, weights, seconds, built_tree, engine_tests,
                                    search_base, sb)
                budget.spent(weight)
                unit["modes"] = f"{len(group)} modes" if len(group) > 1 else ""
                report.units.append(unit)
                if self.progress is not None:
                    self.progress.line(f"{rel}: {unit['tally']}")
                if not self.tmpl.keep_temps:
                    shutil.rmtree(self.workdir / "cands", ignore_errors=True)
            self._store_siblings(report, plan)
            self._store_whole(report)
            report.phases["search"] = round(time.monotonic() - search_started, 1)
            t0 = time.monotonic()
            report.final = self._rebuild_and_check(base_launcher, sb, report, commands)
            report.phases["final"] = round(time.monotonic() - t0, 1)
            t0 = time.monotonic()
            try:
                self._references(root, compiles, sb, report, commands, base_launcher, base)
            except Exception as exc:  # noqa: BLE001 - a reference never fails the run
                report.references.setdefault("pgo_everywhere", {"error": f"{type(exc).__name__}: {exc}"})
            report.phases["references"] = round(time.monotonic() - t0, 1)
        report.seconds = time.monotonic() - started
        return report

    def _train(self, root: Path, compiles, sb, commands: list[str], report: ProjectReport,
               for_reference: bool = False) -> None:
        """The whole project's profile for the pgo generator and the PGO-everywhere reference
        (:mod:`sgcc.project.pgo`)."""
        from sgcc.project import pgo

        self._note("profile-guided: building the whole project instrumented and running the workload once"
                   + (" (for the PGO-everywhere reference)" if for_reference else ""))
        self.progress and self.progress.tick(True)
        try:
            inputs = self.workdir / "base" / ".sgcc-inputs"  # stdin tests as a workload
            self.profile = pgo.train(self.builder, self.spec, self.tmpl.compiler, root, compiles, sb, commands,
                                     self.workdir, self.spec.test_timeout * 5,
                                     inputs=inputs if inputs.is_dir() else None)
        finally:
            self.progress and self.progress.tick(False)
        report.pgo = {"seconds": round(self.profile.seconds, 1), "profiles": len(self.profile.gcda),
                      "error": self.profile.error}
        report.phases["pgo_profile"] = round(self.profile.seconds, 1)
        if self.profile.error:
            report.notes.append(f"no whole-project profile: {self.profile.error}")
        elif self.profile.build_error:
            report.notes.append(f"whole-project profile: {self.profile.build_error}; the workload ran on what "
                                "was built before the failure")
            report.pgo["build_error"] = self.profile.build_error

    def _whole_project(self, compiles, built_tree: Path, sb, base_launcher: Path, report: ProjectReport,
                       commands: list[str], budget: ProjectBudget) -> Path | None:
        """Whole-project candidates (:mod:`sgcc.project.whole`), and the search's baseline when
        one wins.

        Each variant's compiles are made by gcc; a copy of the built tree is cleaned and rebuilt
        by the drop-in with those texts as its overlay (so what is tested and timed is exactly
        what the cache will substitute), and the project's tests must pass in it. The field
        races on the workload against gcc's build; a winner other than PGO everywhere must be
        significantly faster than PGO everywhere on fresh rounds (else PGO everywhere is the
        winner); the winner is confirmed on fresh rounds against gcc's build and adopted when
        the interval's lower end is above 1 + ``WHOLE_MIN_GAIN``. gcc's own output
        is trusted as gcc's build is: no per-function proof, the tests and the timing decide.
        Then the tree is the baseline of every source's search (candidates are built on it,
        substituted into its texts and timed against it) and :meth:`_store_whole` stores each
        compile's text, its winners joined in, as a whole unit under the compile's key. The
        variants' preparation may take ``WHOLE_SHARE`` of the budget (the first always runs).
        Returns the tree, or None (the reason in ``report.whole_project``)."""
        from sgcc.engine import estimate_dict
        from sgcc.project import pgo, whole
        from sgcc.verify.timing import halving
        from sgcc.verify.timing import rounds as timing

        info: dict = {"adopted": False, "field": []}
        report.whole_project = info
        if not self.tmpl.cache_dir:
            info["why"] = "no cache: the build could not substitute it"
            return None
        variants = whole.field(self._generator_names(), self.tmpl.isa)
        prof = self.profile
        started = time.monotonic()
        cap = WHOLE_SHARE * budget.total
        root = self.spec.root.resolve()
        built: dict = {}  # variant -> (tree, texts, entry)
        prep = 0.0
        for n, v in enumerate(variants):
            e: dict = {"name": v.name, "flags": list(v.flags), "profile": v.profile}
            info["field"].append(e)
            if n and time.monotonic() - started + prep > cap:
                e["why"] = f"cut by the budget (the whole-project candidates may take {cap:.0f} s)"
                continue
            if v.profile and (prof is None or prof.error or not prof.gcda):
                e["why"] = f"no whole-project profile ({prof.error if prof else 'not made'})"
                continue
            t0 = time.monotonic()
            self._note(f"{v.name} as a candidate: compiling"
                       + (f" {len(prof.gcda)} profiled source(s)" if v.profile else " every source"))
            self.progress and self.progress.tick(True)
            try:
                texts, failed = whole.compile_all(self.tmpl.compiler, compiles, v, self.workdir, root, prof,
                                                  self.tmpl.jobs)
            finally:
                self.progress and self.progress.tick(False)
            e.update({"compiles": len(texts), "failed": failed[:5]})
            if not texts:
                e["why"] = "no source compiled: " + "; ".join(failed[:2])
                continue
            differ = whole.changed(compiles, texts)
            e["compiles_changed"] = len(differ)
            if not differ:
                e["why"] = "the same as gcc's build (every compile's assembly unchanged)"
                continue
            tree = self._build_whole(v, texts, differ, built_tree, sb, e)
            prep = max(prep, time.monotonic() - t0)
            if tree is not None:
                built[v] = (tree, texts, e)
                if v == whole.PGO:
                    self.pgo_tree = tree
        if not built:
            info["why"] = "; ".join(f"{e['name']}: {e['why']}" for e in info["field"] if e.get("why")) or \
                "no whole-project candidate"
            return None
        case, base_run, run_of = self._workload_runs(base_launcher, sb, commands)
        runs = {v: run_of(t) for v, (t, _, _) in built.items()}
        rounds = max(PGO_ROUNDS, 2 * self.tmpl.timing_rounds)
        winner = next(iter(built))
        if len(built) > 1:
            self._note(f"racing {len(built)} whole-project candidates on the workload against gcc's build")

            def afford(alive: int, rungs: int, sample: float) -> bool:
                # The winner's confirmation (``rounds`` pairs) must still fit in the share.
                need = (rungs * (alive + 1) + 2 * rounds) * sample
                return time.monotonic() - started + need <= max(cap, prep + 2 * rounds * sample)

            try:
                r = halving.race(base_run, runs, keep=1, min_rounds=self.tmpl.timing_rounds,
                                 min_sample_seconds=self.tmpl.min_sample, seed=self.tmpl.seed,
                                 worlds=len(sb.worlds), futile_below=1.0, afford=afford)
            except timing.TimingRunFailed as exc:
                info["why"] = f"gcc's build's workload failed while racing: {exc}"
                return None
            for v, (_, _, e) in built.items():
                if v in r.estimates:
                    e["race"] = estimate_dict(r.estimates[v])
                if v in r.failed:
                    e["why"] = f"its workload did not behave as gcc's build's: {r.failed[v]}"
                elif v in r.untimed:
                    e["why"] = "not timed: the budget"
                elif v in r.dropped:
                    e["why"] = halving.describe(r, v)
            if not r.survivors:
                info["why"] = "no whole-project candidate survived the race"
                return None
            winner = r.survivors[0]
        if winner != whole.PGO and whole.PGO in built:
            # PGO everywhere is what a user compares with: another variant replaces it only when
            # fresh rounds show it faster than PGO itself (a race among near-equals picks noise).
            w_entry = built[winner][2]
            self._note(f"{winner.name} won the race: timing it against PGO everywhere on {rounds} fresh rounds")
            try:
                vs = timing.measure(runs[whole.PGO], runs[winner], rounds=rounds,
                                    min_sample_seconds=self.tmpl.min_sample, seed=self.tmpl.seed,
                                    worlds=len(sb.worlds), futile_below=1.0)
                w_entry["vs_pgo"] = estimate_dict(vs)
                better = timing.decide(vs, WHOLE_MIN_GAIN)
                why = f"{vs.speedup:.3f}x [{vs.low:.3f}, {vs.high:.3f}] against PGO everywhere"
            except timing.TimingRunFailed as exc:
                better, why = False, f"its workload did not behave as PGO everywhere's: {exc}"
            if not better:
                w_entry["why"] = f"won the race, but not significantly faster than PGO everywhere ({why})"
                winner = whole.PGO
        tree, texts, e = built[winner]
        self._note(f"{winner.name}: confirming its gain on {rounds} fresh rounds against gcc's build (interleaved)")
        try:
            # The project's big lever, timed once more: at least PGO_ROUNDS to narrow the
            # interval on a noisy machine; stopped early only when it cannot win.
            est = timing.measure(base_run, runs[winner], rounds=rounds, min_sample_seconds=self.tmpl.min_sample,
                                 seed=self.tmpl.seed, worlds=len(sb.worlds), futile_below=1.0)
        except timing.TimingRunFailed as exc:
            e["why"] = info["why"] = f"{winner.name}: its workload did not behave as gcc's build's: {exc}"
            return None
        e["timing"] = estimate_dict(est)
        info.update({"variant": winner.name, "timing": e["timing"], "compiles": len(texts),
                     "compiles_used": e.get("compiles_used"), "tests_passed": True})
        if winner == whole.PGO:
            self.pgo_confirmed = e["timing"]
        if not timing.decide(est, WHOLE_MIN_GAIN):
            e["why"] = info["why"] = (f"{winner.name}: not significantly faster than gcc's build "
                                      f"({est.speedup:.3f}x [{est.low:.3f}, {est.high:.3f}])")
            return None
        info["adopted"] = True
        self.pgo_texts = texts
        self.whole_variant = winner
        if winner.profile:
            self.pgo_digests = {k: pgo.profile_digest(prof.gcda[k]) for k in texts}
        if self.progress is not None:
            self.progress.line(f"{winner.name} adopted as the baseline: {est.speedup:.3f}x [{est.low:.3f}, "
                               f"{est.high:.3f}] as fast as gcc's build, the project's tests pass; "
                               "the function search starts from it")
        return tree

    def _build_whole(self, v, texts: dict[str, str], differ: set[str], built_tree: Path, sb,
                     e: dict) -> Path | None:
        """A copy of the built tree rebuilt by the drop-in with ``texts`` as its overlay, and
        the project's tests run on it: the tree, or None (the reason in ``e['why']``).
        ``differ``: the keys whose text is not gcc's. Compiles of the copy that did not use
        their text are dropped from ``texts`` (they stay gcc's, in the copy as in the shipped
        build)."""

        slug = "whole-" + ("pgo" if v.profile else "") + "".join(f.strip("-").replace("=", "_") for f in v.flags)
        overlay = self.workdir / f"{slug}.overlay.json"
        overlay.write_text(json.dumps(texts), encoding="utf-8", errors="surrogateescape")
        tree = self.workdir / slug
        shutil.copytree(built_tree, tree, symlinks=True)
        self._note(f"{v.name} as a candidate: building the project with its compiles")
        self.builder.run(self.spec.clean, tree, self.builder.env(), "clean", check=False)
        r = self.builder.run(self.spec.build, tree, self.builder.overlay_env(overlay, tree), "build", check=False)
        if not r.ok:
            e["why"] = "the project does not build with its compiles"
            return None
        missed = record.unused(overlay, texts)
        e["compiles_used"] = len(texts) - len(missed)
        if missed:
            # The overlay is keyed by each compile's cache key, which hashes gcc's assembly; a
            # compile of the copy with another key (a build that differs from the recorded one)
            # is gcc's. When none of the changed ones was used, the tree timed would be gcc's
            # build under the variant's name. One source whose assembly changes with every build
            # (berry.c spells __DATE__ and __TIME__) only stays gcc's, here as in a later
            # make CC=sgcc, where its key is new too.
            names = {c.key: c.source.name for c in self._compiles}
            e["not_used"] = sorted(names.get(k, k) for k in missed)
            if not differ - set(missed):
                e["why"] = (f"{len(missed)} of its {len(texts)} compiles were not used by the build of the copy "
                            "(their cache keys differ from the recorded build's), none of those it changes was")
                return None
            for k in missed:
                del texts[k]
        if self.spec.command_mode:
            self._note(f"{v.name} as a candidate: the project's tests: {self.spec.test}")
            ok, why = workload.run_tests(sb, workload.copy_tree(tree, tree.with_name(slug + "-test")),
                                         self.spec.test, self.spec.test_timeout)
            if not ok:
                e["why"] = f"the project's tests fail: {why}"
                return None
        else:
            outcome = sb.check(tree / self.spec.binary, self._stdin_tests(sb))
            if outcome.first_failure is not None:
                e["why"] = f"its program fails a test: {outcome.first_failure}"
                return None
        e["tests_passed"] = True
        return tree

    def _workload_runs(self, base_launcher: Path, sb, commands: list[str]):
        """(the recorded case, gcc's build's run, tree -> that tree's run) of the workload, as
        :func:`sgcc.verify.timing.rounds.measure` takes them. gcc's outputs are recorded once a run."""
        from sgcc.verify.box import sandbox as sandboxmod
        from sgcc.verify.timing import rounds as timing

        if self.spec.command_mode:
            if self._case is None:
                self._case = sb.record(base_launcher, [sandboxmod.TestCase(name="workload", stdin=b"")])
            case = self._case
            return (case, timing.runner(sb, base_launcher, case),
                    lambda t: timing.runner(sb, workload.launcher(t, "bench", commands), case))
        tests = self._stdin_tests(sb)
        return (tests, timing.runner(sb, self.workdir / "base" / self.spec.binary, tests),
                lambda t: timing.runner(sb, t / self.spec.binary, tests))

    def _stdin_tests(self, sb):
        """The stdin tests with gcc's build's outputs, recorded once a run (stdin mode)."""
        from sgcc.verify.box import sandbox as sandboxmod

        if self._case is None:
            self._case = sb.record(self.workdir / "base" / self.spec.binary,
                                   sandboxmod.load_tests(Path(self.spec.tests)))
        return self._case

    def _store_whole(self, report: ProjectReport) -> None:
        """Each compile's text of the adopted whole-project candidate (its winners, proven
        against it, joined in) as a whole unit under the compile's key, naming the variant's
        flags and its profile's digest: a plain ``make CC=sgcc`` then rebuilds the tree that
        was tested and timed."""
        from sgcc.asm import WHOLE_UNIT
        from sgcc.cache.entry import Applied
        from sgcc.gcc import args as gccargs

        if not self.pgo_texts or not self.tmpl.cache_dir:
            return
        store = self.tmpl.cache_store()
        compiles = {c.key: c for c in self._compiles}
        variant = self.whole_variant
        timed = (report.whole_project or {}).get("timing", {})
        for key, text in self.pgo_texts.items():
            c = compiles[key]
            entry = store.get(key)
            found = entry.applied if entry is not None else None
            functions: list[str] = []
            if found is not None and found.baseline == text and not found.whole:
                # Winners found against the variant's text (this run's search): joined into it.
                text = found.join(text)
                functions = sorted(found.units)
            applied = Applied({WHOLE_UNIT: text}, generator=variant.generator, flags=list(variant.flags),
                              profile_sha256=self.pgo_digests.get(key, "") if variant.profile else None,
                              functions=functions,
                              baseline=c.asm_path.read_text(encoding="utf-8", errors="surrogateescape"),
                              context=c.context,
                              asm_flags=gccargs.parse(c.args).flags_without_inputs(drop_dependency_flags=True),
                              speedup=timed.get("speedup"), low=timed.get("low"), high=timed.get("high"))
            store.update(key, functools.partial(_applying, str(c.source), applied))

    def _check_workload(self, tree: Path, commands: list[str]) -> None:
        """A workload command naming a path (``./prog``) must name something the build made."""
        import shlex

        for c in commands:
            first = shlex.split(c)[0]
            if "/" in first and not first.startswith("/") and not (tree / first).exists():
                raise SgccError(f"the bench command {c!r}: {first} does not exist after the build",
                                hint="bench commands run in the project's directory")

    def _plan(self, found, ran_tests, compiles: list[Compile], report: ProjectReport) -> list:
        """The sources to search, hottest first: (source, weight, function weights, its
        compiles, the one to search, the binaries that ran it), covering ``coverage``."""
        total = max(1, found.project)
        report.project_share = found.project / max(1, found.total)
        items = []
        untested: list[tuple[int, str]] = []
        for source, fns in found.by_source.items():
            for fn, ir in fns.items():
                if ran_tests is not None and not ran_tests.executed(source, fn):
                    untested.append((ir, f"{Path(source).name}:{fn}"))
                    continue
                items.append((ir, source, fn))
        items.sort(reverse=True)
        if untested:
            untested.sort(reverse=True)
            share = sum(ir for ir, _ in untested) / total
            report.notes.append(f"{len(untested)} function(s) the workload runs and the tests do not are not searched "
                                f"({share:.1%} of the workload): " + ", ".join(n for _, n in untested[:5]))
        chosen: dict[str, dict[str, float]] = {}
        covered = 0
        for ir, source, fn in items:
            if covered >= self.spec.coverage * total:
                break
            chosen.setdefault(source, {})[fn] = ir / total
            covered += ir
        report.coverage = covered / total
        if found.ambiguous:
            report.notes.append(f"{len(found.ambiguous)} function(s) could have come from more than one source "
                                "and were not searched: " + ", ".join(sorted(found.ambiguous)[:5]))
        plan = []
        for source, weights in chosen.items():
            group = [c for c in compiles if str(c.source) == source]
            seen = found.seen_in.get(source, {})
            searched = max((c for c in group if c.key in seen), key=lambda c: len(seen[c.key]))
            binaries = set().union(*seen.values())
            plan.append((source, sum(weights.values()), weights, group, searched, binaries))
        plan.sort(key=lambda p: -p[1])
        return plan

    def _search(self, rel: str, group: list[Compile], searched: Compile, binaries: set[str], weights: dict,
                seconds: float, built_tree: Path, engine_tests: Path, base_binary: Path, sb) -> dict:
        from sgcc.asm.units import AsmFile
        from sgcc.engine import Program, optimize, target_for
        from sgcc.gcc import args as gccargs
        from sgcc.proc import run

        c = searched
        inv = gccargs.parse(c.args)
        asm_text = self._text(c)  # gcc's, or its -fprofile-use compile when PGO everywhere is the baseline
        asm = AsmFile.parse(asm_text)
        asm_flags = inv.flags_without_inputs(drop_dependency_flags=True)
        obj = self.workdir / f"{c.key[:16]}.o"
        s_file = self.workdir / f"{c.key[:16]}.s"
        s_file.write_text(asm_text, encoding="utf-8", errors="surrogateescape")
        r = run([self.tmpl.compiler, *asm_flags, "-c", "-x", "assembler", str(s_file), "-o", str(obj)],
                cwd=c.cwd, timeout=300)
        if not r.ok:
            return {"source": rel, "key": c.key, "tally": "gcc's own assembly does not assemble here; not searched",
                    "functions": [], "honest": {"functions": []}}
        target = target_for(self.tmpl.compiler, self.tmpl.isa, inv.target_flags)
        names = {u.name for u in asm.units}
        program = Program(source=c.source, source_text=c.source.read_text(errors="replace"),
                          flags=asm_flags, asm=asm, asm_text=asm_text, obj=obj, binary=base_binary,
                          target=target, asm_flags=asm_flags,
                          link=self._linker(built_tree, group, c, binaries, sb),
                          cache_key=c.key, cache_context=c.context, expose=self._expose,
                          weights={n: weights.get(n, 0.0) for n in names},
                          compile_cwd=c.cwd, source_arg=inv.sources[0].path if inv.sources else None,
                          profile=self.profile.for_compile(c.key) if self.profile is not None else None)
        req = replace(self.tmpl, source=c.source, tests=engine_tests, output=self.workdir / f"{c.key[:16]}.out",
                      flags=asm_flags, budget_seconds=seconds, test_timeout=self.spec.test_timeout,
                      mutants=0 if self.spec.command_mode else self.tmpl.mutants)
        unit_report = optimize(req, _Relay(self), program=program).to_dict()
        return {"source": rel, "key": c.key, "keys": [g.key for g in group], "budget_seconds": seconds,
                "ran_in": sorted(binaries), "searched_flags": asm_flags,
                "tally": tally(unit_report["candidates"]), "functions": function_lines(unit_report),
                "honest": unit_report["honest"], "report": unit_report}

    def _store_siblings(self, report: ProjectReport, plan) -> None:
        """A winner found on one compile of a source applies to its other modes too (its
        candidate builds substituted it there, and the test command ran them): store it
        under every mode's key, with that mode's own baseline and context."""
        from sgcc.gcc import args as gccargs

        if not self.tmpl.cache_dir:
            return
        store = self.tmpl.cache_store()
        groups = {p[4].key: p[3] for p in plan}
        for unit in report.units:
            if not unit["honest"].get("functions"):
                continue
            entry = store.get(unit["key"])
            applied = entry.applied if entry is not None else None
            if applied is None or applied.whole:
                continue
            for c in groups.get(unit["key"], []):
                if c.key == unit["key"]:
                    continue
                text = self._text(c)
                try:
                    applied.join(text)
                except KeyError:
                    continue
                sibling = applied.but(baseline=text, context=c.context, mode_of=unit["key"],
                                      asm_flags=gccargs.parse(c.args).flags_without_inputs(drop_dependency_flags=True))
                store.update(c.key, functools.partial(_applying, str(c.source), sibling))

    def _rebuild_and_check(self, base_launcher: Path, sb, report: ProjectReport, commands: list[str]) -> dict | None:
        from sgcc.engine import estimate_dict
        from sgcc.verify.timing import rounds as timing

        root = self.spec.root.resolve()
        shipped = [u for u in report.units if u["honest"].get("functions")] or bool(self.pgo_texts)
        self._note("rebuilding the project with the cache")
        self.builder.run(self.spec.clean, root, self.builder.env(), "clean")
        self.builder.run(self.spec.build, root, self.builder.env(SGCC_CACHE="1"), "build")
        final = workload.copy_tree(root, self.workdir / "final", writable=False)
        if not shipped:
            return None
        if self.spec.command_mode:
            self._note(f"running the project's tests on the rebuilt tree: {self.spec.test}")
            tests_passed, why = workload.run_tests(sb, workload.copy_tree(root, self.workdir / "final-test"),
                                                   self.spec.test, self.spec.test_timeout)
        case, base_run, run_of = self._workload_runs(base_launcher, sb, commands)
        runs = (base_run, run_of(final))
        if not self.spec.command_mode:
            outcome = sb.check(final / self.spec.binary, case)
            tests_passed, why = outcome.first_failure is None, str(outcome.first_failure)
        if not tests_passed:
            # Cannot happen when every candidate build passed them, but never leave a wrong tree.
            self._withdraw(report)
            self.builder.run(self.spec.clean, root, self.builder.env(), "clean")
            self.builder.run(self.spec.build, root, self.builder.env(SGCC_CACHE="0"), "build")
            report.notes.append(f"the rebuilt project failed its tests ({why}); its winners were withdrawn and "
                                "the project rebuilt with gcc's code")
            return None
        self._note("timing the rebuilt project's workload against gcc's build (interleaved)")
        est = timing.measure(*runs, rounds=self.tmpl.timing_rounds, min_sample_seconds=self.tmpl.min_sample,
                             seed=self.tmpl.seed, worlds=len(sb.worlds))
        result = {**estimate_dict(est), "tests_passed": True, "significant": timing.decide(est, self.tmpl.min_gain)}
        if not result["significant"]:
            report.notes.append("the rebuilt project's workload is not significantly faster as a whole "
                                "(each function's gain was proven on its own)")
        return result

    def _references(self, root: Path, compiles, sb, report: ProjectReport, commands: list[str],
                    base_launcher: Path, base: Path) -> None:
        """What the user could have had instead, timed on the same workload, interleaved with
        gcc's build: the whole project built with gcc's own profile-guided optimization from
        the same workload (PGO everywhere), sgcc's result against it, and the best
        whole-project flag set tried. In every report, also when nothing shipped."""
        from sgcc.engine import estimate_dict
        from sgcc.project import pgo
        from sgcc.verify.timing import rounds as timing

        refs: dict = {"build": {"speedup": 1.0, "low": 1.0, "high": 1.0, "what": "gcc's build (the one replaced)"}}
        report.references = refs
        refs["flag_set"] = self._flag_set_reference(report)
        if self.profile is None:
            self._train(root, compiles, sb, commands, report, for_reference=True)
        self._note("building the PGO-everywhere reference (the whole project with -fprofile-use)")
        self.progress and self.progress.tick(True)
        try:
            if self.pgo_tree is not None:  # built as a whole-project candidate
                tree, why = self.pgo_tree, ""
            else:
                tree, why = pgo.pgo_everywhere(self.builder, self.spec, self.tmpl.compiler, self.profile,
                                               self.workdir)
        finally:
            self.progress and self.progress.tick(False)
        if tree is None:
            refs["pgo_everywhere"] = {"error": why}
            return
        ref_tree = workload.copy_tree(tree, self.workdir / "pgo-reference", writable=False)
        _, base_run, run_of = self._workload_runs(base_launcher, sb, commands)
        pgo_run = run_of(ref_tree)
        final_run = run_of(self.workdir / "final") if report.final else None
        try:
            if self.pgo_confirmed is not None:
                # Timed already, interleaved with gcc's build, as the confirmed whole-project candidate.
                refs["pgo_everywhere"] = {**self.pgo_confirmed, "what": "the whole project with -fprofile-use from "
                                                                        "the same workload (timed as a candidate)"}
            else:
                self._note("timing the PGO-everywhere reference against gcc's build (interleaved)")
                est = timing.measure(base_run, pgo_run, rounds=self.tmpl.timing_rounds,
                                     min_sample_seconds=self.tmpl.min_sample, seed=self.tmpl.seed)
                refs["pgo_everywhere"] = {**estimate_dict(est), "what": "the whole project with -fprofile-use "
                                                                        "from the same workload"}
            if final_run is not None:
                self._note("timing sgcc's result against the PGO-everywhere reference (interleaved)")
                est = timing.measure(pgo_run, final_run, rounds=self.tmpl.timing_rounds,
                                     min_sample_seconds=self.tmpl.min_sample, seed=self.tmpl.seed)
                refs["sgcc_vs_pgo_everywhere"] = estimate_dict(est)
        except timing.TimingRunFailed as exc:
            refs["pgo_everywhere"] = {"error": f"the PGO build's workload did not behave as gcc's: {exc}"}

    def _flag_set_reference(self, report: ProjectReport) -> dict:
        """The best whole-project flag set the whole-project candidates timed (confirmed, or
        its race estimate: the best of a race errs high, so it flatters the reference, not
        sgcc), or why there is none."""
        field = (report.whole_project or {}).get("field") or []
        flag_sets = [e for e in field if not e.get("profile")]
        if not flag_sets:
            return {"error": "not tried (the flags generator is off)" if "flags" not in self._generator_names()
                    else "not tried"}
        timed = [(e.get("timing") or e.get("race"), e) for e in flag_sets if e.get("timing") or e.get("race")]
        if not timed:
            return {"error": "; ".join(f"{e['name']}: {e.get('why', 'not timed')}" for e in flag_sets)}
        est, e = max(timed, key=lambda te: te[0]["speedup"])
        how = "confirmed" if e.get("timing") else f"race estimate, {est.get('rounds', '?')} rounds"
        return {**est, "what": f"{e['name']} ({how})", "flags": e["flags"]}

    def _withdraw(self, report: ProjectReport) -> None:
        if not self.tmpl.cache_dir:
            return
        store = self.tmpl.cache_store()
        keys = [k for u in report.units for k in u.get("keys", [u["key"]])] + list(self.pgo_texts or {})
        if report.whole_project and report.whole_project.get("adopted"):
            report.whole_project["withdrawn"] = True
        for key in keys:
            store.update(key, functools.partial(_applying, None, None))

    def close(self) -> None:
        if not self.tmpl.keep_temps:
            shutil.rmtree(self.workdir, ignore_errors=True)


#: A whole-project candidate becomes the baseline when its workload's interval clears 1 + this:
#: gcc's own output, its gain on the whole workload measured (not a function's share of it).
WHOLE_MIN_GAIN = 0.01
#: Fewest interleaved rounds the whole-project winner is confirmed with.
PGO_ROUNDS = 30
#: Share of the budget the whole-project candidates' compiles, builds and tests may take (the
#: first candidate is always tried): the function search has found nothing on real projects
#: that these do not (docs/results.md), so they come first.
WHOLE_SHARE = 0.35


def profile_cap(budget_seconds: float | None) -> float:
    """Most seconds one callgrind profile may take: a fifth of the budget (of the default
    for two sources when none is given), at least a minute; what ran by then is used."""
    from sgcc.project.budget import BASE, PER_SOURCE

    return max(60.0, 0.2 * (budget_seconds or BASE + 2 * PER_SOURCE))


def expected_duration(budget_seconds: float | None) -> str:
    """The line shown before any work: how long the run will take."""
    from sgcc.project.budget import BASE, MOST, PER_SOURCE

    if budget_seconds:
        return (f"expected duration: about {budget_seconds / 60:.0f} min (--budget), builds, profiles, search and the "
                "final rebuild and timing included")
    return (f"expected duration: {BASE / 60:.0f} min + {PER_SOURCE / 60:.0f} min per source holding the workload's "
            f"hot code, at most {MOST / 60:.0f} min (fixed once the workload is profiled; --budget sets it)")


def _applying(source: str | None, applied: Applied | None, old: Entry | None) -> Entry:
    """``old`` (or a new entry) with ``applied`` as what builds substitute (None: nothing),
    and ``source`` as its source when given: an update of a project compile's entry."""
    from sgcc.cache.entry import Entry

    entry = old or Entry()
    if source is not None:
        entry.source = source
    entry.applied = applied
    return entry


class _Relay:
    """The engine's progress, shown on the project's line: which unit, the project's ETA,
    and per function how many candidates were built and passed the tests."""

    def __init__(self, project: Project):
        self.project = project

    def status(self, message: str) -> None:
        self.project._show(message)

    def tick(self, on: bool) -> None:
        if self.project.progress is not None:
            self.project.progress.tick(on)
