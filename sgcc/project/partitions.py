"""The functions that ship in an LTO build, searched: project mode once an LTO variant is adopted.

An adopted LTO variant's compiles are LTO's intermediate language; the code that ships is
made at each link, one assembly text per *partition* (:mod:`sgcc.dropin.ltrans`). So the
search goes there:

1. **Recorded** (:func:`record_env`): the variant's tree is built by the drop-in from its
   overlay with ``SGCC_RECORD`` set too, and each link's partitions are written down (their
   keys in the link's ltrans context, gcc's assembly). :func:`partitions` makes each one a
   :class:`~sgcc.project.record.Compile` of its own, assembled once so the profile can find
   its functions in the programs (its symbols with their sizes, as for a compile).
2. **Profiled** (:func:`profile`): the workload, and the test command, under callgrind in
   copies of the adopted tree, each executed function charged to the partition linked into
   the program that ran it (:func:`sgcc.project.attribute.attribute`); the partitions holding
   the hottest functions are chosen as sources are (:func:`sgcc.project.plan.choose`).
3. **Searched** (:func:`search_partition`): the engine on one partition's assembly, with the
   generators that work on assembly (:data:`ASSEMBLY_GENERATORS`: layout, the model,
   replayed candidates) and gcc's variants: the build made again in a copy with flags added
   to its LTO compiles, then linked (:func:`rebuilder`, :mod:`sgcc.candidates.ltovariants`:
   each function keeps its compile's flags, so flags added at the link alone change nothing),
   each function of the variant's partition transplanted. clang and the flag search compile a C
   source, which a partition does not have, and PGO's part is the whole-project candidate
   PGO + LTO. A candidate becomes a
   program by relinking a copy of the adopted tree (the programs that ran the partition
   removed, so the build links them again; nothing is compiled) with the candidate's text
   in the overlay under the partition's key: the link's front assembles it in place of gcc's
   (:func:`linker`). Then the project's tests, in the isolated runner, as for a source.

Winners are stored by the engine under the partition's key in the link's ltrans context, so
the final rebuild (``CC=sgcc``) and a later plain ``make CC=sgcc`` of the LTO build substitute
them at the same link: the project's link, with or without ``-flto`` on its command line.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc.project import attribute, record, search, workload
from sgcc.project.report import function_lines, tally

if TYPE_CHECKING:
    from sgcc.engine.request import Linker
    from sgcc.project.attribute import Attribution
    from sgcc.project.plan import Target
    from sgcc.project.record import Compile
    from sgcc.project.state import ProjectRun

#: Generators a partition can have: those whose candidates are made from assembly alone, and
#: gcc's variants (the build made again with flags added to its LTO compiles, :func:`rebuilder`).
ASSEMBLY_GENERATORS = frozenset({"layout", "llm", "replay", "variants"})


def record_env(env: dict, directory: Path) -> dict:
    """``env`` (an overlay build's) with the build's links' partitions recorded in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    return {**env, "SGCC_RECORD": str(directory / "compiles.jsonl")}


def partitions(run: ProjectRun, directory: Path, tree: Path | None = None) -> list[Compile]:
    """Each partition recorded in ``directory`` (once per program its links made), as a
    compile: its key and context, gcc's assembly as its source and text, an object made from
    that assembly (read only for its symbols), and the program it went into, relative to the
    tree the build ran in (``tree``, or the project's own path where the copies are placed)."""
    from sgcc.proc import run as run_command
    from sgcc.project.record import Compile

    listing = directory / "ltrans.jsonl"
    if not listing.is_file():
        return []
    objects = run.workdir / "partitions"
    objects.mkdir(exist_ok=True)
    found: dict[tuple[str, str | None], Compile] = {}
    roots = [p for p in (tree, run.root) if p is not None]
    for line in listing.read_text(encoding="utf-8", errors="surrogateescape").splitlines():
        d = json.loads(line)
        into = next((rel for rel in (os.path.relpath(d["output"], r) for r in roots) if not rel.startswith("..")),
                    None) if d.get("output") else None
        if (d["key"], into) in found:
            continue
        asm = Path(d["asm"])
        obj = objects / f"{d['key'][:24]}.o"
        r = run_command([run.tmpl.compiler, "-c", "-x", "assembler", str(asm), "-o", str(obj)], timeout=300)
        # Its name as a source (reports, the cache entry's "source"): where the link ran, which
        # partition, whose key: two links in one directory make two partitions 0.
        name = Path(d["cwd"]) / f"{d.get('partition') or 'ltrans'}.{d['key'][:10]}.ltrans.s"
        found[(d["key"], into)] = Compile(d["key"], name, Path(d["cwd"]), ["-c", str(asm)], asm,
                                          obj if r.ok else None, d.get("context"), into)
    return list(found.values())


def profile(run: ProjectRun, tree: Path, parts: list[Compile]) -> tuple[Attribution, Attribution | None]:
    """The workload's attribution to ``parts`` in copies of ``tree`` (the adopted LTO tree),
    and the test command's (None without one)."""
    from sgcc.project import plan

    spec, report = run.spec, run.report
    cap = plan.profile_cap(run.tmpl.budget_seconds, spec.profile_timeout)
    at = run.where.root
    run.note(f"profiling the workload on the LTO build under callgrind (at most {cap:.0f} s)")
    run.tick(True)
    try:
        t0 = time.monotonic()
        copy = workload.copy_tree(tree, run.workdir / "lto-prof")
        inputs = run.base / ".sgcc-inputs"
        if inputs.is_dir() and not (copy / ".sgcc-inputs").exists():
            shutil.copytree(inputs, copy / ".sgcc-inputs")  # the stdin tests as a workload
        costs = attribute.profile(run.sandbox, run.launcher(copy, "bench", run.commands), run.workdir / "prof-lto",
                                  timeout=cap, partial=True)
        found = attribute.attribute(costs or {}, copy, parts, run.root, seen_at=at)
        ran = None
        if spec.command_mode:
            test_tree = workload.copy_tree(tree, run.workdir / "lto-prof-test")
            tcosts = attribute.profile(run.sandbox, run.launcher(test_tree, "test", [spec.test]),
                                       run.workdir / "prof-lto-test", timeout=cap, partial=True)
            # Nothing profiled: no function counts as tested (none is searched).
            ran = attribute.attribute(tcosts or {}, test_tree, parts, run.root, seen_at=at)
        report.phases["profile_lto"] = round(time.monotonic() - t0, 1)
    finally:
        run.tick(False)
    if costs is None:
        report.notes.append("the workload could not be profiled on the LTO build: its partitions were not searched")
    return found, ran


def search_partition(run: ProjectRun, target: Target, label: str, seconds: float, tree: Path,
                     base_binary: Path) -> dict:
    """The engine's search of one partition (``target``, its compile the partition) for
    ``seconds``, its candidates relinked on ``tree`` (the adopted LTO tree) and timed against
    ``base_binary``: the unit's report."""
    from sgcc.asm.units import AsmFile
    from sgcc.engine import Program, lto_variants, optimize, target_for

    c, tmpl = target.searched, run.tmpl
    gens = [g if g.name != "variants" else lto_variants(rebuilder(run, tree), like=g)
            for g in tmpl.generators if g.name in ASSEMBLY_GENERATORS]
    if not gens:
        return {"source": label, "key": c.key, "keys": [c.key], "partition": True, "functions": [],
                "tally": "not searched: a partition has no C source, and no generator that works on assembly "
                         f"({', '.join(sorted(ASSEMBLY_GENERATORS))}) was chosen", "honest": {"functions": []}}
    asm_text = c.asm_path.read_text(encoding="utf-8", errors="surrogateescape")
    asm = AsmFile.parse(asm_text)
    names = {u.name for u in asm.units}
    assert c.output is not None  # (attributed: its object was made)
    program = Program(source=c.source, source_text="", flags=[], asm=asm, asm_text=asm_text, obj=c.output,
                      binary=base_binary, target=target_for(tmpl.compiler, tmpl.isa, []), asm_flags=[],
                      link=linker(run, tree, c, target.binaries), cache_key=c.key, cache_context=c.context,
                      expose=workload.expose, weights={n: target.weights.get(n, 0.0) for n in names},
                      compile_cwd=c.cwd)
    req = replace(tmpl, source=c.source, tests=run.engine_tests, output=run.workdir / f"{c.key[:16]}.out",
                  flags=[], budget_seconds=seconds, test_timeout=run.spec.test_timeout, generators=gens,
                  mutants=0 if run.spec.command_mode else tmpl.mutants)
    unit_report = optimize(req, run.line, program=program).to_dict()
    return {"source": label, "key": c.key, "keys": [c.key], "partition": True, "budget_seconds": seconds,
            "ran_in": sorted(target.binaries), "searched_flags": [],
            "tally": tally(unit_report["candidates"]), "functions": function_lines(unit_report, target.evidence),
            "evidence": target.evidence, "honest": unit_report["honest"], "report": unit_report}


def rebuilder(run: ProjectRun, tree: Path):
    """``rebuild(flags, directory)`` for the partitions' variants: a copy of ``tree`` in
    ``directory``, cleaned and built again with ``flags`` added to its LTO compiles and its
    links' partitions recorded: (their assembly texts, why the build failed or ""). An
    adopted LTO variant's compiles are made again by gcc with the flags added (its texts
    are the build's overlay); gcc's own LTO build gets them on its ``-flto`` compiles from
    the drop-in (``SGCC_LTO_COMPILE_FLAGS``, read while the build is recorded)."""
    import threading

    from sgcc.project import whole

    # A profiled compile runs in the profile's tree and writes its output where gcc's build
    # did (gcc finds the profile by that name): two variants compiled at once (the engine's -j)
    # wrote one file, and lto1 then read a corrupted stream ("Data corruption detected").
    profiled = threading.Lock()

    def rebuild(flags: list[str], directory: Path) -> tuple[list[str], str]:
        import shlex

        copy = directory / "tree"
        shutil.copytree(tree, copy, symlinks=True)
        try:
            run.builder.run(run.spec.clean, copy, run.builder.env(), "clean", check=False)
            adopted = run.adopted if run.adopted is not None and run.adopted.variant.lto else None
            if adopted is not None:
                v = whole.Variant((*adopted.variant.flags, *flags), profile=adopted.variant.profile)
                with profiled if v.profile else contextlib.nullcontext():
                    texts, failed = whole.compile_all(run.tmpl.compiler, run.compiles, v, directory, run.root,
                                                      run.profile, run.tmpl.jobs)
                if not texts:
                    return [], "no compile: " + "; ".join(failed[:2])
                overlay = directory / "overlay.json"
                overlay.write_text(json.dumps(texts), encoding="utf-8", errors="surrogateescape")
                env = run.builder.overlay_env(overlay, copy)
            else:
                env = run.builder.env(SGCC_CACHE="0", SGCC_LTO_COMPILE_FLAGS=shlex.join(flags))
            rec = directory / "record"
            r = run.builder.run(run.spec.build, copy, record_env(env, rec), "build", check=False)
            listing = rec / "ltrans.jsonl"
            lines = listing.read_text(encoding="utf-8", errors="surrogateescape").splitlines() \
                if listing.is_file() else []
            why = "" if r.ok else "; ".join([r.describe(), *search.build_errors(r, 2)])[:300]
            return ([Path(json.loads(ln)["asm"]).read_text(encoding="utf-8", errors="surrogateescape")
                     for ln in lines], why)
        finally:
            shutil.rmtree(copy, ignore_errors=True)

    return rebuild


def linker(run: ProjectRun, tree: Path, part: Compile, binaries: set[str]) -> Linker:
    """``link(asm_text, obj, where, replacements)`` for the engine: the candidate's program,
    relinked on a copy of ``tree`` (see the module docstring), or None and why not."""
    spec = run.spec

    def link(asm_text: str, obj: Path, where: Path, replacements: dict[str, str]) -> tuple[Path | None, str]:
        n = run.candidate_tree()
        cand = run.workdir / "cands" / f"p{n}"
        cand.parent.mkdir(exist_ok=True)
        shutil.copytree(tree, cand, symlinks=True)
        overlay_path = run.workdir / "cands" / f"p{n}.overlay.json"
        overlay_path.write_text(json.dumps({part.key: asm_text}), encoding="utf-8", errors="surrogateescape")
        for b in binaries:
            # Gone, so the build links it again (its objects are up to date: nothing compiles).
            (cand / b).unlink(missing_ok=True)
        r = run.builder.run(spec.build, cand, run.builder.overlay_env(overlay_path, cand), "build", check=False)
        if not r.ok:
            return None, "\n".join(search.build_errors(r)) or r.describe()
        if record.unused(overlay_path, [part.key]):
            # Timing such a tree would time the adopted build under the candidate's name.
            return None, "the relink did not use the candidate's partition (its key differs from the recorded link's)"
        stale = [b for b in sorted(binaries) if not (cand / b).is_file()]
        if stale:
            return None, f"not linked again: {', '.join(stale)}"
        return search.tested_program(run, cand, replacements)

    return link


def label(part: Compile, binaries: set[str]) -> str:
    """How reports name a partition: its key's start and the programs it was linked into."""
    return f"LTO partition {part.key[:10]} of {', '.join(sorted(binaries)) or 'the build'}"
