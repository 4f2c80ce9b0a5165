"""Optimizing a whole project built by make (or any build command): ``sgcc optimize --project``.

1. **Record.** Clean, then build once with ``CC`` set to sgcc, the cache off and
   ``SGCC_RECORD`` set: every eligible compile writes down its source, flags, working
   directory, gcc's assembly and the cache key it will have in later builds. The result is
   plain gcc's build: the baseline binary.
2. **Profile.** The baseline binary runs its tests under callgrind; each function's share of
   the instructions tells which translation units matter, hottest first. Units the tests
   never execute are not searched.
3. **Search per unit.** Each hot translation unit goes through the same engine as a single
   program. A candidate becomes a program to test by rebuilding a private copy of the built
   tree in which only that unit's source is touched and the drop-in compiles it from the
   candidate's assembly (``SGCC_OVERLAY``): make relinks exactly what depends on it, archives
   and all, so nothing about the project's build has to be understood.
4. **Store and rebuild.** Verdicts go to the cache under the keys the project's own compiles
   have; then the real tree is cleaned and rebuilt with ``CC=sgcc``, which substitutes the
   winners from the cache. That binary is tested and timed against the baseline; if it failed
   a test (it cannot, but sgcc checks), the winners are withdrawn and the tree rebuilt plainly.
   The tree is left built with the optimized binary, and every later clean ``CC=sgcc make``
   rebuilds the same bytes from the cache without searching.

The build command must honour ``$CC`` (``CC ?= gcc`` in a Makefile, or pass ``{sgcc}``:
``build = "make CC={sgcc}"``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from sgcc import proc
from sgcc.dropin import gccargs
from sgcc.errors import SgccError


@dataclass
class ProjectSpec:
    """How to build and test a project (the ``[project]`` table of its sgcc.toml)."""

    root: Path
    build: str = "make"
    clean: str = "make clean"
    binary: str = ""
    tests: str = "tests"
    build_timeout: float = 1800.0

    @classmethod
    def from_table(cls, root: Path, table: dict, **overrides) -> ProjectSpec:
        known = {"build", "clean", "binary", "tests", "build_timeout"}
        unknown = set(table) - known
        if unknown:
            raise SgccError(f"{root / 'sgcc.toml'}: unknown [project] setting(s): {', '.join(sorted(unknown))}",
                            hint=f"known: {', '.join(sorted(known))}")
        values = {k: v for k, v in table.items() if k in known}
        values.update({k: v for k, v in overrides.items() if v is not None})
        spec = cls(root=root, **values)
        if not spec.binary:
            raise SgccError("the project's binary is not named",
                            hint="set binary = \"path/to/program\" under [project] in sgcc.toml, or pass --binary")
        return spec


@dataclass
class Compile:
    """One recorded eligible compile."""

    key: str
    source: Path
    cwd: Path
    args: list[str]
    asm_path: Path
    output: Path | None
    context: dict | None = None  # the cache context of the compile (sgcc.cache.keys.context)


@dataclass
class ProjectReport:
    root: str
    binary: str
    units: list[dict] = field(default_factory=list)
    weights: dict[str, float] | None = None
    final: dict | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> str:
        from dataclasses import asdict

        from sgcc.engine import finite_json

        return json.dumps(finite_json(asdict(self)), indent=2)

    def summary(self) -> str:
        lines = [f"sgcc: project {self.root}: {self.binary}, {len(self.units)} translation unit(s) searched"]
        for u in self.units:
            h = u["honest"]
            what = (f"{', '.join(h['functions'])}: {h['speedup']:.3f}x [{h['ci_low']:.3f}, {h['ci_high']:.3f}]"
                    if h["functions"] else "gcc's code kept")
            lines.append(f"  {u['source']}: {u['candidates']} candidate(s); {what}")
        if self.final:
            lines.append(f"sgcc: rebuilt with the cache: {self.final['speedup']:.3f}x "
                         f"[{self.final['low']:.3f}, {self.final['high']:.3f}] over the baseline, "
                         f"tests {self.final['tests_passed']}/{self.final['tests_total']}")
        else:
            lines.append("sgcc: the project is built as plain gcc builds it (nothing proven faster)")
        lines += [f"sgcc: note: {n}" for n in self.notes]
        return "\n".join(lines)


def sgcc_executable() -> str:
    """The sgcc command to put in $CC (this installation's own)."""
    here = Path(sys.argv[0])
    if here.name.startswith("sgcc") and here.exists():
        return str(here.resolve())
    candidate = Path(sys.executable).parent / "sgcc"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("sgcc")
    if found:
        return found
    raise SgccError("cannot find the sgcc command to build the project with")


class Project:
    """Runs ``sgcc optimize --project`` (see the module docstring)."""

    def __init__(self, spec: ProjectSpec, request_template, cfg, progress=None):
        self.spec = spec
        self.tmpl = request_template  # an sgcc.engine.Request with everything but source/tests/output
        self.cfg = cfg
        self.progress = progress
        self.sgcc = sgcc_executable()
        self.workdir = Path(tempfile.mkdtemp(prefix="sgcc-project-"))

    def _note(self, message: str) -> None:
        if self.progress is not None:
            self.progress.status(message)

    def _build_env(self, **extra) -> dict:
        env = dict(os.environ)
        env.update({"CC": self.sgcc, "SGCC_CACHE_DIR": self.tmpl.cache_dir or env.get("SGCC_CACHE_DIR", ""),
                    "SGCC_ISA": self.tmpl.isa})
        # The build substitutes what this run signs: the same keys.
        env.update({k: v for k, v in (("SGCC_SIGNING_KEY", self.tmpl.signing_key),
                                      ("SGCC_TRUSTED_KEYS", self.tmpl.trusted_keys)) if v})
        env.pop("SGCC_RECORD", None)
        env.pop("SGCC_OVERLAY", None)
        if not env["SGCC_CACHE_DIR"]:
            env.pop("SGCC_CACHE_DIR")
        env.update(extra)
        return env

    def _run(self, command: str, cwd: Path, env: dict, what: str) -> proc.Result:
        argv = [a.replace("{sgcc}", self.sgcc) for a in shlex.split(command)]
        r = proc.run(argv, cwd=cwd, env=env, timeout=self.spec.build_timeout, capture_limit=4 << 20)
        if not r.ok:
            tail = (r.stdout + r.stderr).decode(errors="replace").strip().splitlines()[-15:]
            raise SgccError(f"{what} failed in {cwd}: {' '.join(argv)}: {r.describe()}\n" + "\n".join(tail))
        return r

    # -- 1. record ------------------------------------------------------------------------

    def record(self) -> list[Compile]:
        root = self.spec.root
        rec_dir = self.workdir / "record"
        rec_dir.mkdir()
        rec = rec_dir / "compiles.jsonl"
        self._note("clean build with the compiles recorded")
        self._run(self.spec.clean, root, self._build_env(), "clean")
        self._run(self.spec.build, root, self._build_env(SGCC_CACHE="0", SGCC_RECORD=str(rec)), "build")
        if not rec.is_file():
            raise SgccError("the build compiled nothing through sgcc",
                            hint="the build command must use $CC (CC ?= gcc in the Makefile), or write "
                                 "build = \"make CC={sgcc}\" in sgcc.toml; only -O2/-O3 C compiles are searched")
        compiles: dict[str, Compile] = {}
        for line in rec.read_text().splitlines():
            d = json.loads(line)
            c = Compile(d["key"], Path(d["source"]), Path(d["cwd"]), d["args"], Path(d["asm"]),
                        Path(d["output"]) if d.get("output") else None, d.get("context"))
            compiles[c.key] = c
        return list(compiles.values())

    # -- 3. a candidate's build -----------------------------------------------------------

    def _linker(self, built_tree: Path, source: Path):
        root = self.spec.root.resolve()
        rel_source = source.resolve().relative_to(root)

        def link(asm_text: str, obj: Path, where: Path):
            tree = where / "tree"
            shutil.copytree(built_tree, tree, symlinks=True)
            overlay = where / "overlay.json"
            target = tree / rel_source
            overlay.write_text(json.dumps({os.path.realpath(target): asm_text}), encoding="utf-8",
                               errors="surrogateescape")
            # Newer than everything built: make recompiles this unit (from the overlay) and
            # relinks what depends on it, nothing else.
            future = time.time() + 2
            os.utime(target, (future, future))
            env = self._build_env(SGCC_CACHE="0", SGCC_OVERLAY=str(overlay))
            argv = [a.replace("{sgcc}", self.sgcc) for a in shlex.split(self.spec.build)]
            r = proc.run(argv, cwd=tree, env=env, timeout=self.spec.build_timeout, capture_limit=1 << 20)
            binary = tree / self.spec.binary
            if not r.ok or not binary.is_file():
                lines = [ln for ln in (r.stdout + r.stderr).decode(errors="replace").splitlines()
                         if "error" in ln.lower()]
                return None, "\n".join(lines[:5]) or r.describe()
            return binary, ""

        return link

    # -- the whole run --------------------------------------------------------------------

    def run(self):
        from sgcc.asm.units import AsmFile
        from sgcc.engine import Program, optimize, profile, target_for
        from sgcc.verify import sandbox as sandboxmod

        started = time.perf_counter()
        spec = self.spec
        root = spec.root.resolve()
        report = ProjectReport(root=str(root), binary=spec.binary)
        compiles = self.record()
        binary = root / spec.binary
        if not binary.is_file():
            raise SgccError(f"the build did not produce {binary}", hint="check binary = ... in [project]")
        base_binary = self.workdir / "baseline"
        shutil.copy2(binary, base_binary)
        built_tree = self.workdir / "built"
        shutil.copytree(root, built_tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        tests_dir = (root / spec.tests)
        tests = sandboxmod.load_tests(tests_dir)

        # 2. profile: which units matter.
        units_of: dict[str, list[str]] = {}
        parsed = {}
        for c in compiles:
            asm_text = c.asm_path.read_text(encoding="utf-8", errors="surrogateescape")
            parsed[c.key] = (asm_text, AsmFile.parse(asm_text))
            units_of[c.key] = [u.name for u in parsed[c.key][1].units]
        all_names = sorted({n for names in units_of.values() for n in names})
        with sandboxmod.Sandbox(timeout=self.tmpl.test_timeout) as sb:
            tests = sb.record(base_binary, tests)
            self._note("profiling the baseline on the tests")
            weights = profile.function_weights(base_binary, tests, sandbox=sb, names=all_names)
        report.weights = weights
        order = sorted(compiles, key=lambda c: -sum((weights or {}).get(n, 0.0) for n in units_of[c.key]))
        if weights is not None:
            order = [c for c in order if sum(weights.get(n, 0.0) for n in units_of[c.key]) > 0]

        # 3. search, one translation unit at a time.
        for c in order:
            try:
                rel = c.source.resolve().relative_to(root)
            except ValueError:
                report.notes.append(f"{c.source}: outside the project tree, not searched")
                continue
            inv = gccargs.parse(c.args)
            asm_text, asm = parsed[c.key]
            obj = self.workdir / f"{c.key[:16]}.o"
            asm_flags = inv.flags_without_inputs(drop_dependency_flags=True)
            s_file = self.workdir / f"{c.key[:16]}.s"
            s_file.write_text(asm_text, encoding="utf-8", errors="surrogateescape")
            r = proc.run([self.tmpl.compiler, *asm_flags, "-c", "-x", "assembler", str(s_file), "-o", str(obj)],
                         cwd=c.cwd, timeout=300)
            if not r.ok:
                report.notes.append(f"{rel}: gcc's own assembly does not assemble here; not searched")
                continue
            target = target_for(self.tmpl.compiler, self.tmpl.isa, inv.target_flags)
            program = Program(source=c.source, source_text=c.source.read_text(errors="replace"),
                              flags=asm_flags, asm=asm, asm_text=asm_text, obj=obj, binary=base_binary,
                              target=target, asm_flags=asm_flags, link=self._linker(built_tree, c.source),
                              cache_key=c.key, cache_context=c.context,
                              weights={n: weights.get(n, 0.0) for n in units_of[c.key]} if weights else None)
            req = replace(self.tmpl, source=c.source, tests=tests_dir, output=self.workdir / f"{c.key[:16]}.out",
                          flags=asm_flags)
            self._note(f"searching {rel}")
            unit_report = optimize(req, self.progress, program=program)
            built = [r for r in unit_report.candidates if r.id != "-"]
            report.units.append({"source": str(rel), "key": c.key, "candidates": len(built),
                                 "honest": unit_report.honest, "report": unit_report.to_dict()})

        # 4. rebuild the real tree from the cache, and check it.
        report.final = self._rebuild_and_check(base_binary, tests, report)
        report.seconds = time.perf_counter() - started
        return report

    def _rebuild_and_check(self, base_binary: Path, tests, report: ProjectReport) -> dict | None:
        from sgcc.engine import estimate_dict
        from sgcc.verify import sandbox as sandboxmod
        from sgcc.verify import timing

        root = self.spec.root.resolve()
        shipped = [u for u in report.units if u["honest"]["functions"]]
        self._note("rebuilding the project with the cache")
        self._run(self.spec.clean, root, self._build_env(), "clean")
        self._run(self.spec.build, root, self._build_env(SGCC_CACHE="1"), "build")
        binary = root / self.spec.binary
        if not shipped:
            return None
        with sandboxmod.Sandbox(timeout=self.tmpl.test_timeout) as sb:
            outcome = sb.check(binary, tests)
            if outcome.first_failure is not None:
                # Cannot happen when every unit was validated, but never leave a wrong binary.
                self._withdraw(shipped)
                self._run(self.spec.clean, root, self._build_env(), "clean")
                self._run(self.spec.build, root, self._build_env(SGCC_CACHE="0"), "build")
                report.notes.append(f"the combined build failed test {outcome.first_failure.test}; "
                                    "its winners were withdrawn and the project rebuilt with gcc's code")
                return None
            self._note("timing the rebuilt project against the baseline")
            est = timing.measure(timing.runner(sb, base_binary, tests), timing.runner(sb, binary, tests),
                                 rounds=self.tmpl.timing_rounds, min_sample_seconds=self.tmpl.min_sample,
                                 seed=self.tmpl.seed)
        final = {**estimate_dict(est), "tests_passed": outcome.passed, "tests_total": outcome.total,
                 "significant": timing.decide(est, self.tmpl.min_gain)}
        if not final["significant"]:
            report.notes.append("the combined build is not significantly faster than the baseline as a whole "
                                "(each unit's gain was proven on its own)")
        return final

    def _withdraw(self, shipped: list[dict]) -> None:
        from sgcc.cache import store as cache

        store = cache.Store(self.tmpl.cache_dir, signing_key=self.tmpl.signing_key,
                            trusted_keys=self.tmpl.trusted_keys)
        for u in shipped:
            def change(old):
                entry = old or {"functions": {}}
                entry.pop("apply", None)
                return entry

            store.update(u["key"], change)

    def close(self) -> None:
        if not self.tmpl.keep_temps:
            shutil.rmtree(self.workdir, ignore_errors=True)
