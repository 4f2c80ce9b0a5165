"""Profile-guided candidates: gcc told where the program spends its time on its own tests.

sgcc has the workload (the tests), so it can do what most builds never do: compile the
program with ``-fprofile-generate``, run every test on it in the sandbox (as the unprivileged
user, so the profile directory is the one place it may write), and compile again with
``-fprofile-use``. gcc then knows which branches go which way, which loops run long and
which functions are hot, and lays out, unrolls, inlines and splits accordingly. Each
function's unit from that compilation is offered as a candidate (made to fit the baseline
by :mod:`sgcc.candidates.transplant`), and so is the whole file, since profile-guided
layout (hot/cold splitting, function order) works across functions.

Under ``--isa native`` a second profile and compilation add ``-march=native``.

The profile also guides other variants (:data:`COMBINED`): each is one more compilation with
``-fprofile-use`` and the same profile, plus flags of the variants generator that
``-fprofile-use`` does not already imply (it turns on unrolling, peeling and
vectorization itself). Flags that act after instrumentation point leave the profile valid;
where gcc finds a function's profile does not fit, ``-Wno-coverage-mismatch`` lets it
compile that function without one. A profile only steers optimisation, never the meaning.
``-fprofile-partial-training`` keeps code the tests never reach optimized as usual (rather
than for size), so a unit the tests cover poorly does not get slower for it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sgcc import proc
from sgcc.candidates.transplant.generator import TransplantGenerator, Variant, compile_variant
from sgcc.gcc import args as gccargs

#: Wall seconds one test may take when instrumented (counters slow a program down).
TRAINING_TIMEOUT_FACTOR = 5.0
USE_FLAGS = ["-fprofile-partial-training", "-Wno-missing-profile", "-Wno-coverage-mismatch"]
#: (name, the profile's base, flags added to that base's): PGO combined with other variants.
COMBINED: list[tuple[str, str, list[str]]] = [
    ("pgo-sched", "pgo", ["-fschedule-insns", "-fsched-pressure"]),
    ("pgo-tune-native", "pgo", ["-mtune=native"]),
    ("pgo-align32", "pgo", ["-falign-functions=32", "-falign-loops=32"]),
    ("pgo-novect", "pgo", ["-fno-tree-vectorize"]),
]
#: Added under ``--isa native`` (see sgcc.candidates.variants.NATIVE on FMA contraction).
COMBINED_NATIVE: list[tuple[str, str, list[str]]] = [
    ("pgo-native-nocontract", "pgo-native", ["-ffp-contract=off"]),
    ("pgo-native-sched", "pgo-native", ["-fschedule-insns", "-fsched-pressure"]),
]


class PgoGenerator(TransplantGenerator):
    """Offers every function (and the whole file) of the profile-guided compilation."""

    name = "pgo"
    trusted = True  # gcc's own code
    whole_always = True
    #: asked first by the search (set in project mode, see _from_project)
    leads = False

    def __init__(self):
        super().__init__()
        self.profile_dir: Path | None = None
        self.trained: dict[str, tuple[int, int]] = {}  # variant -> (training runs that ended well, profile files)

    def _prepare(self, context) -> None:
        self._setup_base(context.program)
        if context.program.link is not None:
            # A project's source is no program of its own: its profile comes from the whole
            # project's instrumented build, trained on the workload (sgcc.project.pgo).
            self._from_project(context)
            return
        # The instrumented program runs as nobody: the profile directory must be reachable
        # and writable by it (and by nothing else of sgcc's), like the profiler's (profile.py).
        self.profile_dir = Path(tempfile.mkdtemp(prefix="sgcc-pgo-"))
        os.chmod(self.profile_dir, 0o733)
        bases = [("pgo", [])]
        if context.isa == "native":
            bases.append(("pgo-native", ["-march=native"]))
        with ThreadPoolExecutor(max_workers=len(bases)) as pool:
            self.variants = list(pool.map(lambda b: self._one(context, *b), bases))
        self.variants += self._combined(context, {v.name: v for v in self.variants})
        for v in self.variants:
            if v.error:
                self.notes.append(f"{v.name}: {v.error}")

    def _one(self, context, name: str, extra: list[str]) -> Variant:
        program = context.program
        work = Path(context.workdir) / name
        work.mkdir(parents=True, exist_ok=True)
        profile = self.profile_dir / name
        profile.mkdir()
        os.chmod(profile, 0o733)
        variant = Variant(name, [*extra, "-fprofile-use", *USE_FLAGS])
        obj, binary = work / "prog.o", work / "prog-instrumented"
        gen = [*program.flags, *extra, f"-fprofile-generate={profile}", "-fprofile-update=prefer-atomic"]
        if context.note:
            context.note(f"{name}: building the instrumented program")
        r = proc.run([context.compiler, *gen, "-c", str(program.source), "-o", str(obj)], timeout=300)
        if r.ok:
            r = proc.run(gccargs.link_argv(context.compiler, gen, [str(obj)], str(binary)), timeout=300)
        if not r.ok:
            variant.error = "the instrumented build failed: " + r.stderr.decode(errors="replace").strip()[-300:]
            return variant
        if context.note:
            context.note(f"{name}: training on {len(context.tests)} tests")
        timeout = max(30.0, context.sandbox.timeout * TRAINING_TIMEOUT_FACTOR)

        def train(test):
            return context.sandbox.run(binary, test.stdin, timeout=timeout, writable=[self.profile_dir])

        with ThreadPoolExecutor(max_workers=max(1, context.jobs)) as pool:
            results = list(pool.map(train, context.tests))
        bad = [t.name for t, r in zip(context.tests, results) if r.timed_out or r.returncode < 0]
        self.trained[name] = (len(context.tests) - len(bad), len(list(profile.rglob("*.gcda"))))
        if not any(profile.rglob("*.gcda")):
            variant.error = "the training runs left no profile" + (f" (failed: {', '.join(bad[:3])})" if bad else "")
            return variant
        # The profile is found by the output's name: compile to prog.s next to prog.o.
        variant.flags = [*extra, f"-fprofile-use={profile}", *USE_FLAGS]
        variant.shown = [*extra, "-fprofile-use", *USE_FLAGS[:1]]
        if context.note:
            context.note(f"{name}: compiling with the profile")
        return compile_variant(context, variant, work, stem="prog")

    def _from_project(self, context) -> None:
        """``-fprofile-use`` with the whole project's profile of this compile, and the combined
        variants with it: each compiles to ``<dir>/prog.s`` beside a copy of the profile as
        ``prog.gcda`` (where a bare ``-fprofile-use`` looks), in the compile's own directory
        with the source spelled as the build spelled it (the profile's checksums name it).

        They compile as the search asks, plain ``pgo`` first, and this generator's candidates
        are the search's first (``leads``), the whole file before its functions: the whole
        project's PGO build is the measured gain, so its compile of this source is what a
        source's share of the budget tries first."""
        self.leads = self.whole_first = True
        profile = context.program.profile
        if profile is None or not Path(profile).is_file():
            v = Variant("pgo", ["-fprofile-use"])
            v.error = ("no whole-project profile for this compile (the project's instrumented build or its "
                       "workload run did not produce one)")
            self.variants = [v]
            return
        todo = [Variant("pgo", ["-fprofile-use", *USE_FLAGS])]
        todo += [Variant(name, ["-fprofile-use", *USE_FLAGS, *extra]) for name, base, extra in COMBINED
                 if base == "pgo"]
        if context.isa == "native":
            todo += [Variant(name, ["-march=native", "-fprofile-use", *USE_FLAGS, *extra])
                     for name, base, extra in [("pgo-native", "pgo-native", []), *COMBINED_NATIVE]]
        for v in todo:
            v.shown = [f for f in v.flags if f not in USE_FLAGS[1:]]
            where = Path(context.workdir) / v.name
            where.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(profile, where / "prog.gcda")
        self.trained["project"] = (1, 1)
        self.defer(context, todo,
                   lambda v: compile_variant(context, v, Path(context.workdir) / v.name, stem="prog"))

    def _combined(self, context, trained: dict[str, Variant]) -> list[Variant]:
        """The combined variants whose base was trained, compiled with that base's profile."""
        combos = COMBINED + (COMBINED_NATIVE if context.isa == "native" else [])
        todo = []
        for name, base_name, extra in combos:
            base = trained.get(base_name)
            if base is None or base.side is None:
                continue  # no profile: the base said why
            # gcc finds the profile by the output's path (under DIR, the absolute path as
            # directories, or mangled to #abs#path#prog.gcda for a relative one): the combined
            # compilation writes elsewhere, so its copy of the profile is named for that place.
            profile = self.profile_dir / base_name
            src = dst = None
            for form in (_nested, _mangled):
                if (profile / form(Path(context.workdir) / base_name / "prog")).is_file():
                    src = profile / form(Path(context.workdir) / base_name / "prog")
                    dst = profile / form(Path(context.workdir) / name / "prog")
                    break
            if src is None:
                self.notes.append(f"{name}: the profile of {base_name} is not where gcc looks for it")
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            v = Variant(name, [*base.flags, *extra])
            v.shown = [*(base.shown or base.flags), *extra]
            todo.append(v)
        if not todo:
            return []
        if context.note:
            context.note(f"pgo: compiling {len(todo)} combined variants")
        # Each compiles to its own directory under the stem "prog": -fprofile-use=DIR finds
        # the profile by the object's name, which must be the training build's.
        with ThreadPoolExecutor(max_workers=max(1, context.jobs)) as pool:
            return list(pool.map(lambda v: compile_variant(context, v, Path(context.workdir) / v.name, stem="prog"),
                                 todo))

    def close(self) -> None:
        if self.profile_dir is not None:
            shutil.rmtree(self.profile_dir, ignore_errors=True)
            self.profile_dir = None


def _mangled(path: Path) -> str:
    """Where, under ``-fprofile-generate=DIR``, gcc puts the profile of an object ``path``
    named relative to the working directory."""
    return str(Path(os.path.abspath(path))).replace("/", "#") + ".gcda"


def _nested(path: Path) -> str:
    """Like :func:`_mangled`, for an object named by its absolute path."""
    return str(Path(os.path.abspath(path))).lstrip("/") + ".gcda"


def from_config(cfg) -> PgoGenerator:
    return PgoGenerator()
