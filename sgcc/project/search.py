"""One source's search: the engine on the compile the workload ran, each candidate made a
program by rebuilding a private copy of the built tree.

A source compiled in several modes (static and PIC) is searched once, on the compile the
workload ran (:class:`sgcc.project.plan.Target`). A candidate becomes a program by rebuilding a
copy of the built tree (gcc's, or the adopted whole-project candidate's) in which the source
is touched and the drop-in compiles each of its compiles from the overlay (keyed by compile:
the searched one gets the candidate, every other mode gets the candidate's functions
substituted into its own assembly); make relinks exactly what depends on them
(:func:`linker`). The candidate counts as built only when every program or library that ran
the function was rebuilt, and (with a test command) when the project's test command passed
in that tree, inside the isolated runner.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc.project import record, workload
from sgcc.project.report import function_lines, tally

if TYPE_CHECKING:
    from sgcc.engine.request import Linker
    from sgcc.project.plan import Target
    from sgcc.project.record import Compile
    from sgcc.project.state import ProjectRun


def search_source(run: ProjectRun, target: Target, rel: str, seconds: float, built_tree: Path,
                  base_binary: Path) -> dict:
    """The engine's search of ``target`` (``rel``: its path in the tree) for ``seconds``, its
    candidates built on ``built_tree`` and timed against ``base_binary``: the unit's report."""
    from sgcc.asm.units import AsmFile
    from sgcc.engine import Program, optimize, target_for
    from sgcc.gcc import args as gccargs
    from sgcc.proc import run as run_command

    c, tmpl = target.searched, run.tmpl
    inv = gccargs.parse(c.args)
    asm_text = run.text(c)  # gcc's, or its -fprofile-use compile when PGO everywhere is the baseline
    asm = AsmFile.parse(asm_text)
    asm_flags = inv.flags_without_inputs(drop_dependency_flags=True)
    obj = run.workdir / f"{c.key[:16]}.o"
    s_file = run.workdir / f"{c.key[:16]}.s"
    s_file.write_text(asm_text, encoding="utf-8", errors="surrogateescape")
    r = run_command([tmpl.compiler, *asm_flags, "-c", "-x", "assembler", str(s_file), "-o", str(obj)],
                    cwd=c.cwd, timeout=300)
    if not r.ok:
        return {"source": rel, "key": c.key, "tally": "gcc's own assembly does not assemble here; not searched",
                "functions": [], "honest": {"functions": []}}
    isa_target = target_for(tmpl.compiler, tmpl.isa, inv.target_flags)
    names = {u.name for u in asm.units}
    program = Program(source=c.source, source_text=c.source.read_text(errors="replace"),
                      flags=asm_flags, asm=asm, asm_text=asm_text, obj=obj, binary=base_binary,
                      target=isa_target, asm_flags=asm_flags,
                      link=linker(run, built_tree, target.group, c, target.binaries),
                      cache_key=c.key, cache_context=c.context, expose=workload.expose,
                      weights={n: target.weights.get(n, 0.0) for n in names},
                      compile_cwd=c.cwd, source_arg=inv.sources[0].path if inv.sources else None,
                      profile=run.profile.for_compile(c.key) if run.profile is not None else None)
    req = replace(tmpl, source=c.source, tests=run.engine_tests, output=run.workdir / f"{c.key[:16]}.out",
                  flags=asm_flags, budget_seconds=seconds, test_timeout=run.spec.test_timeout,
                  mutants=0 if run.spec.command_mode else tmpl.mutants)
    unit_report = optimize(req, run.line, program=program).to_dict()
    return {"source": rel, "key": c.key, "keys": [g.key for g in target.group], "budget_seconds": seconds,
            "ran_in": sorted(target.binaries), "searched_flags": asm_flags,
            "tally": tally(unit_report["candidates"]), "functions": function_lines(unit_report, target.evidence),
            "evidence": target.evidence,
            "honest": unit_report["honest"], "report": unit_report}


def linker(run: ProjectRun, built_tree: Path, group: list[Compile], searched: Compile, binaries: set[str]) -> Linker:
    """``link(asm_text, obj, where, replacements)`` for the engine: the candidate's program (see
    the module docstring), or None and why not."""
    from sgcc.asm.units import AsmFile

    spec = run.spec
    others = [(c, run.text(c)) for c in group if c.key != searched.key]
    rel_source = searched.source.resolve().relative_to(run.root)

    def link(asm_text: str, obj: Path, where: Path, replacements: dict[str, str]) -> tuple[Path | None, str]:
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
        n = run.candidate_tree()
        tree = run.workdir / "cands" / f"c{n}"
        tree.parent.mkdir(exist_ok=True)
        shutil.copytree(built_tree, tree, symlinks=True)
        overlay_path = run.workdir / "cands" / f"c{n}.overlay.json"
        overlay_path.write_text(json.dumps(overlay), encoding="utf-8", errors="surrogateescape")
        # Newer than everything built: make recompiles this source in every mode (from the
        # overlay) and relinks what depends on it, nothing else.
        source_times = os.stat(tree / rel_source)
        future = time.time() + 2
        os.utime(tree / rel_source, (future, future))
        env = run.builder.overlay_env(overlay_path, tree)
        r = run.builder.run(spec.build, tree, env, "build", check=False)
        # Back to its own time: the test command's make must find the tree up to date.
        os.utime(tree / rel_source, ns=(source_times.st_atime_ns, source_times.st_mtime_ns))
        if not r.ok:
            return None, "\n".join(build_errors(r)) or r.describe()
        if record.unused(overlay_path, [searched.key]):
            # Timing such a tree would time gcc's build under the candidate's name.
            return None, (f"the build did not use the candidate's assembly for {rel_source} (its compile "
                          f"had another cache key than the recorded build's)")
        stale = [b for b in sorted(binaries)
                 if not (tree / b).is_file() or (tree / b).read_bytes() == (built_tree / b).read_bytes()]
        if stale:
            return None, f"not rebuilt with the candidate: {', '.join(stale)} (the build did not relink it)"
        return tested_program(run, tree, changed)

    return link


def build_errors(r, most: int = 5) -> list[str]:
    """The lines of a failed build's output that say "error" (at most ``most``)."""
    return [ln for ln in (r.stdout + r.stderr).decode(errors="replace").splitlines() if "error" in ln.lower()][:most]


def tested_program(run: ProjectRun, tree: Path, changed) -> tuple[Path | None, str]:
    """A candidate's tree built with ``changed`` (functions) counted, and, with a test
    command, the project's tests passed in a copy of it: the program to time (the workload's
    launcher, or the binary) or None and why."""
    spec = run.spec
    run.line.count(changed, "built")
    if spec.command_mode:
        # The tests run in their own copy: what they write (or a hostile candidate
        # rewrites) is not what the workload is then timed on.
        test_tree = workload.copy_tree(tree, tree.with_name(tree.name + "-test"))
        ok, why = run.run_tests(test_tree)
        if not ok:
            return None, why
        run.line.count(changed, "passed")
        return run.launcher(tree, "bench", spec.workload), ""
    return tree / spec.binary, ""
