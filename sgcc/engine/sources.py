"""A program of several C sources: ``sgcc optimize a.c b.c c.c --tests DIR -o OUT``.

gcc compiles each source once, with the given flags, to an object. gcc's whole program is
profiled once on the tests (:func:`sgcc.engine.profile.function_weights`); each source's
share of the tests' instructions orders the search (hottest first) and shares the budget
among the sources (one whose functions the tests never run is not searched). Each source
searched is one engine run (:func:`sgcc.engine.driver.optimize`) whose baseline is the whole
program: that source compiled by gcc, linked with every other source's current object (gcc's,
or the object a run before it shipped). So each run's speedup is measured on the whole
program against what the runs before it shipped, its winners go to the cache under that
source's own compile (a later ``CC=sgcc make`` substitutes them), and OUT is the last run's
program, which links every source's shipped object: tested and timed like any OUT.

Static functions of the same name in two sources share one weight (the profile names
functions, not files): a source may then be searched for another one's time.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from sgcc import proc
from sgcc.engine.baseline import build_baseline
from sgcc.engine.driver import optimize
from sgcc.engine.report import Report, finite_json
from sgcc.engine.request import Request
from sgcc.errors import SgccError

#: A source whose share of what is left of the budget is below this many seconds is not
#: searched (after the first): a run's own set-up (expected outputs, generated inputs, the
#: generators' preparation) takes about this long before it builds any candidate.
MIN_SOURCE_SECONDS = 20.0

#: ``make_request(source, flags, output)``: a fresh request (its own generators) for one run.
MakeRequest = Callable[[Path, list[str], Path], Request]


@dataclass
class Run:
    """One source's engine run: the source, its share of the tests' instructions, the
    budget it was given and its report."""

    source: str
    weight: float | None
    budget_seconds: float | None
    budget_candidates: int | None
    report: Report


@dataclass
class SourcesReport:
    """What ``sgcc optimize a.c b.c ...`` did: one engine report per source searched (in the
    order searched), why the others were not, and the whole run's time."""

    sources: list[str]
    weights: dict[str, float] | None = None  # source -> share of the tests' instructions
    runs: list[Run] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # source -> why it was not searched
    budget_seconds: float | None = None
    before_seconds: float = 0.0  # compiling every source and profiling gcc's program
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    failed: list = field(default_factory=list)  # (source, generator) that could not run once begun

    def to_dict(self) -> dict:
        return finite_json({"sources": self.sources, "weights": self.weights, "skipped": self.skipped,
                            "budget_seconds": self.budget_seconds, "before_seconds": round(self.before_seconds, 1),
                            "seconds": round(self.seconds, 1), "notes": self.notes,
                            "shipped": {r.source: r.report.honest for r in self.runs if r.report.shipped},
                            "runs": [{"source": r.source, "weight": r.weight, "budget_seconds": r.budget_seconds,
                                      "budget_candidates": r.budget_candidates, "report": r.report.to_dict()}
                                     for r in self.runs]})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def summary(self) -> str:
        """Each run's summary under a heading, then what the program shipped."""
        lines = [f"sgcc: {' '.join(self.sources)}: a program of {len(self.sources)} sources, searched hottest first"]
        for run in self.runs:
            share = f"{100 * run.weight:.1f}% of the tests' instructions" if run.weight is not None else "no profile"
            budget = f"; budget {run.budget_seconds:.0f} s" if run.budget_seconds is not None else ""
            lines.append(f"sgcc: ---- {run.source} ({share}{budget}) ----")
            lines.append(run.report.summary())
        lines.append(f"sgcc: ---- the program ({' '.join(self.sources)}) ----")
        for run in self.runs:
            h = run.report.honest
            if h["functions"]:
                lines.append(f"sgcc: {run.source}: shipped {', '.join(h['functions'])}: {h['speedup']:.3f}x "
                             f"[{h['ci_low']:.3f}, {h['ci_high']:.3f}] over the program as the runs before it "
                             "left it (re-measured)")
            else:
                lines.append(f"sgcc: {run.source}: gcc's code ({run.report.outcome()})")
        for source, why in self.skipped.items():
            lines.append(f"sgcc: {source}: gcc's code, not searched: {why}")
        if self.budget_seconds is not None:
            parts = ", ".join(f"{r.source} {r.report.seconds:.0f} s" for r in self.runs)
            over = self.seconds - self.budget_seconds
            lines.append(f"sgcc: budget {self.budget_seconds:g} s of wall time for the whole run: used "
                         f"{self.seconds:.0f} s ({self.before_seconds:.1f} s compiling the sources and profiling "
                         f"gcc's program; {parts})" + (f"; over by {over:.1f} s (see each source's budget lines)"
                                                         if over > 0 else ""))
        for note in self.notes:
            lines.append(f"sgcc: note: {note}")
        return "\n".join(lines)


def optimize_sources(request: Request, sources: list[Path], make_request: MakeRequest,
                     progress=None) -> SourcesReport:
    """Optimize the program that ``sources`` make together (see the module docstring).
    ``request`` holds the user's flags (without the sources), tests, output and budget;
    ``make_request`` makes each run's request. ``request.output`` is always written."""
    from sgcc.engine import profile
    from sgcc.engine.select import ship
    from sgcc.verify.box import sandbox as sandboxmod

    started = time.perf_counter()
    note = progress.status if progress is not None else (lambda message: None)
    seen: set[Path] = set()
    for src in sources:
        if not src.is_file():
            raise SgccError(f"no such source file: {src}")
        if src.resolve() in seen:
            raise SgccError(f"{src} is named twice", hint="name each source of the program once")
        seen.add(src.resolve())
    out = SourcesReport(sources=[str(s) for s in sources], budget_seconds=request.budget_seconds)
    work = Path(tempfile.mkdtemp(prefix="sgcc-sources-"))
    try:
        note(f"compiling {len(sources)} sources with gcc")
        gcc_obj: dict[Path, Path] = {}
        for i, src in enumerate(sources):
            obj = work / f"gcc-{i}-{src.stem}.o"
            r = proc.run([request.compiler, *request.flags, "-c", str(src), "-o", str(obj)], timeout=300)
            if not r.ok:
                raise SgccError(f"gcc cannot compile {src}:\n{r.stderr.decode(errors='replace').strip()}")
            gcc_obj[src] = obj
        current = dict(gcc_obj)

        def baseline(src: Path, name: str):
            where = work / name
            where.mkdir()
            flags = [*request.flags, *(str(current[s]) for s in sources if s != src)]
            return build_baseline(replace(request, source=src, flags=flags, generators=[]), where), flags

        first, _ = baseline(sources[0], "gcc")
        units = {src: [u.name for u in (first if src == sources[0] else baseline(src, f"units-{i}")[0]).asm.units]
                 for i, src in enumerate(sources)}
        note("profiling gcc's program on the tests")
        seconds = profile.PROFILE_SECONDS
        if request.budget_seconds is not None:
            seconds = min(seconds, 0.1 * request.budget_seconds)
        with sandboxmod.Sandbox(timeout=request.test_timeout, worlds=request.worlds,
                                world_seed=request.world_seed) as sandbox:
            found = profile.profile_tests(first.binary, sandboxmod.load_tests(request.tests), sandbox=sandbox,
                                          names=sorted({n for names in units.values() for n in names}),
                                          seconds=seconds)
        weights = None if found is None else found.weights
        scope = "the tests" if found is None else found.scope()
        cut = None if found is None else found.cut_note(seconds)
        if cut:
            out.notes.append(cut)
        share = {src: sum((weights or {}).get(n, 0.0) for n in units[src]) for src in sources}
        if weights is not None:
            out.weights = {str(s): round(share[s], 6) for s in sources}
        order = sorted(sources, key=lambda s: -share[s]) if weights else list(sources)
        # A profile that left tests out cannot say a source never runs: those it did not see
        # are searched last (sgcc.engine.search.weigh does the same for functions).
        complete = found is None or found.profiled >= found.total
        todo = [s for s in order if share[s] > 0 or not complete] if weights else order
        todo = todo or order[:1]
        unseen = [str(s) for s in order if weights and share[s] <= 0 and not complete]
        if unseen:
            out.notes.append(f"{scope} never run the functions of {', '.join(unseen)}, so searched last")
        for src in order:
            if src not in todo:
                out.skipped[str(src)] = f"{scope} never run its functions"
        out.before_seconds = time.perf_counter() - started
        last: Path | None = None
        for k, src in enumerate(todo):
            rest = todo[k:]
            part = share[src] / sum(share[s] for s in rest) if weights and sum(share[s] for s in rest) > 0 \
                else 1 / len(rest)
            secs = cands = None
            if request.budget_seconds is not None:
                secs = (request.budget_seconds - (time.perf_counter() - started)) * part
                if last is not None and secs < MIN_SOURCE_SECONDS:
                    out.skipped[str(src)] = (f"the budget had {secs:.0f} s left for it, less than a run's own "
                                             f"set-up (about {MIN_SOURCE_SECONDS:.0f} s)")
                    continue
                secs = round(max(secs, 1.0), 1)
            if request.budget_candidates is not None:
                used = sum(sum(c.id != "-" for c in r.report.candidates) for r in out.runs)
                cands = max(1, round((request.budget_candidates - used) * part))
            program, flags = baseline(src, f"base-{k}")
            if weights is not None:
                program.weights = {u.name: weights.get(u.name, 0.0) for u in program.asm.units}
                program.weights_scope, program.weights_complete = scope, complete
            req = make_request(src, flags, work / f"out-{k}")
            req.budget_seconds, req.budget_candidates = secs, cands
            req.object_output = work / f"opt-{k}-{src.stem}.o"
            if progress is not None:
                what = f"{100 * share[src]:.1f}% of the tests' instructions" if weights else "no profile"
                progress.line(f"searching {src} ({what}" + (f", budget {secs:.0f} s" if secs is not None else "")
                              + f"; source {k + 1} of {len(todo)})")
            report = optimize(req, progress, program=program)
            out.runs.append(Run(str(src), share[src] if weights else None, secs, cands, report))
            for gen in req.generators:
                if gen.error is not None:
                    out.notes.append(f"{src}: the {gen.name} generator could not run: {gen.error.message}")
                    out.failed.append((src, gen))
            if report.shipped:
                current[src] = req.object_output
            last = req.output
        assert last is not None  # the hottest source always runs
        ship(last, request.output)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out.seconds = time.perf_counter() - started
    return out
