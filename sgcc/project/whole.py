"""Whole-project candidates: the project rebuilt by gcc with one change on every compile.

A source's share of a whole-project lever is small: PGO everywhere gave Lua 1.13-1.25x while
no single source or function of it cleared the 3% minimum gain. So before the per-function
search, project mode tries whole-project builds as candidates of their own:

- **PGO everywhere** (the ``pgo`` generator): every compile with ``-fprofile-use`` from the
  whole project's profile (:mod:`sgcc.project.pgo`);
- **PGO + LTO** (the ``pgo`` generator): PGO everywhere with link-time optimisation
  (:data:`LTO`), and **LTO alone** (the ``flags`` generator);
- **whole-project flag sets** (the ``flags`` generator): every compile with a flag set added
  (``-O3``, ``-O2``, ``-O3 -funroll-loops``; under ``isa = native`` also ``-march=native``
  with ``-ffp-contract=off``, so floating-point results keep their rounding), and with both
  generators PGO combined with ``-O3``. A set every compile already has (``-O3`` on an ``-O3``
  build, PGO + ``-O3`` there: PGO everywhere's own compiles) is dropped before it is compiled
  (:func:`same_as`), and one whose compiles come out the same as gcc's or as an earlier
  candidate's before it is built: no candidate is built twice. A set that lowers the
  build's optimisation level (``-O2`` on an ``-O3`` build) says so (:func:`lowers`).

Each is gcc's own output for the whole tree: it is trusted as gcc's build is (no per-function
proof), built by the drop-in from an overlay keyed by each compile's cache key (so what is
tested and timed is exactly what the cache will substitute), and must pass the project's
tests. The field then races on the workload against gcc's build
(:func:`sgcc.verify.timing.halving.race`); the winner is confirmed on fresh rounds and becomes the
search's baseline when it is significantly faster than gcc's build. The best flag set, and
PGO everywhere, are also the references printed beside sgcc's result.

This module holds the field and the compiles; :mod:`sgcc.project.adopt` builds, tests and
races them.
"""

from __future__ import annotations

import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

#: Added to ``-march=native``: FMA contraction would change floating-point results.
NATIVE = ("-march=native", "-ffp-contract=off")
#: Link-time optimisation, as the distributions build their packages (``auto``: as many ltrans
#: jobs as the machine has; the job count changes no partition). Added to a compile, gcc's
#: assembly holds the compile's intermediate language in ``.gnu.lto_*`` sections; the project's
#: own link, with or without ``-flto``, hands such objects to gcc's LTO through the linker
#: plugin (and ``ar`` indexes them through the same plugin), so the build's command lines need
#: no change: the drop-in substitutes the text, the link optimises across sources. Fat objects
#: (the code too, not only the intermediate language): a later link without the plugin (another
#: ``ar`` or ``ld``, ``-fno-use-linker-plugin``) links their ordinary code instead of failing.
LTO = ("-flto=auto", "-ffat-lto-objects")


@dataclass(frozen=True)
class Variant:
    """One whole-project candidate: flags added to every compile, with or without the profile."""

    flags: tuple[str, ...] = ()
    profile: bool = False

    @property
    def name(self) -> str:
        """'PGO everywhere', 'PGO everywhere + -O3', '-O3 everywhere'."""
        added = " ".join(self.flags)
        if self.profile:
            return "PGO everywhere" + (f" + {added}" if added else "")
        return f"{added} everywhere"

    @property
    def lto(self) -> bool:
        """Whether its compiles are LTO's intermediate language: the code that ships is made at
        link time, in partitions, not in these texts (there is no function in them to search)."""
        return any(f == "-flto" or f.startswith("-flto=") for f in self.flags)

    @property
    def generator(self) -> str:
        """What a cache entry of one of its compiles names as its generator."""
        if self.profile:
            return "pgo-everywhere" + (f" {' '.join(self.flags)}" if self.flags else "")
        return f"flags-everywhere {' '.join(self.flags)}"


PGO = Variant(profile=True)


def field(generators: set[str], isa: str, lto: bool = True) -> list[Variant]:
    """The whole-project candidates the enabled generators offer, most promising first (the
    budget cuts from the back). PGO first: measured, it is the largest lever on the projects
    tried (Lua 1.25x, -O3 1.17x and PGO + -O3 1.21x in one interleaved run). ``lto``: with
    the variants that add :data:`LTO` (the project's ``lto`` setting)."""
    out: list[Variant] = []
    if "pgo" in generators:
        # PGO + LTO second: on Lua's workload 1.24x against PGO's 1.15x (docs/results.md).
        out += [PGO, *([Variant(LTO, profile=True)] if lto else [])]
    if "flags" in generators:
        out += [Variant(("-O3",)), *([Variant(LTO)] if lto else [])]
        if "pgo" in generators:
            out.append(Variant(("-O3",), profile=True))
        if isa == "native":
            out.append(Variant(("-O3", *NATIVE)))
            if "pgo" in generators:
                out.append(Variant(NATIVE, profile=True))
        out += [Variant(("-O2",)), Variant(("-O3", "-funroll-loops"))]
    return out


#: Optimisation levels sgcc intercepts, in order (``-Ofast`` is ``-O3`` and more).
_LEVELS = {"-O2": 2, "-O3": 3, "-Ofast": 4}


def level(args) -> str | None:
    """The optimisation level a command line compiles at (its last ``-O``), or None."""
    found = None
    for a in args:
        if a.startswith("-O") and (a[2:] in ("", "s", "z", "g", "fast") or a[2:].isdigit()):
            found = "-O1" if a == "-O" else a
    return found


def lowers(compiles, variant: Variant) -> str:
    """'lowers the build's -O3 to -O2 on 12 of 12 compiles' when ``variant`` sets a lower
    optimisation level than compiles of the build have, else ''."""
    mine = level(variant.flags)
    if mine not in _LEVELS:
        return ""
    higher: dict[str, int] = {}
    for c in compiles:
        theirs = level(c.args)
        if theirs in _LEVELS and _LEVELS[theirs] > _LEVELS[mine]:
            higher[theirs] = higher.get(theirs, 0) + 1
    if not higher:
        return ""
    what = "/".join(sorted(higher, key=_LEVELS.__getitem__))
    return f"lowers the build's {what} to {mine} on {sum(higher.values())} of {len(compiles)} compiles"


def _has(args, flag: str) -> bool:
    """Whether a command line already compiles as if ``flag`` were added after it."""
    if flag in _LEVELS or flag.startswith("-O"):
        return level(args) == flag
    if flag.startswith("-f"):
        name = flag[5:] if flag.startswith("-fno-") else flag[2:]
        state = None
        for a in args:
            if a in (f"-f{name}", f"-fno-{name}"):
                state = a
        return state == flag
    return flag in args


def same_as(compiles, variant: Variant, profiled=None) -> str:
    """The name of what ``variant`` would compile exactly as (gcc's build, or PGO everywhere
    for a profile-guided set), when every compile it covers has its flags already; else ''.
    ``profiled``: the keys with a profile."""
    covered = [c for c in compiles if not variant.profile or profiled is None or c.key in profiled]
    if not variant.flags or not covered or not all(_has(c.args, f) for c in covered for f in variant.flags):
        return ""
    return PGO.name if variant.profile else "gcc's build"


def compile_one(compiler: str, c, variant: Variant, workdir: Path, root: Path, prof=None) -> tuple[str | None, str]:
    """gcc's assembly of recorded compile ``c`` with ``variant``'s flags added after the
    compile's own (so ``-O3`` overrides the build's ``-O2``): (text, '') or (None, why).

    With the profile, the compile runs in the profile's tree (:func:`sgcc.project.pgo.
    compile_with_profile`: gcc matches a profile by the output's name). Without it, it runs
    in the compile's own directory of the project's tree, as the build ran it, and writes
    only under ``workdir``: its debug information names the same directory as gcc's build."""
    from sgcc.gcc import args as gccargs
    from sgcc.project import pgo

    if variant.profile:
        gcda = prof.gcda.get(c.key) if prof is not None else None
        if gcda is None:
            return None, "no profile (the workload did not run it)"
        return pgo.compile_with_profile(compiler, c, gcda, prof.tree, root, extra=list(variant.flags),
                                        placed=prof.at is not None)
    inv = gccargs.parse(c.args)
    if not inv.sources:
        return None, "no source on the compile's command line"
    out = workdir / f"{c.key[:24]}.s"
    out.parent.mkdir(parents=True, exist_ok=True)
    flags = inv.flags_without_inputs(drop_dependency_flags=True)
    return pgo.gcc_assembly([compiler, *flags, *variant.flags, "-S", "-o", str(out), inv.sources[0].path], c.cwd,
                            out)


def compile_all(compiler: str, compiles, variant: Variant, workdir: Path, root: Path, prof=None,
                jobs: int = 0) -> tuple[dict[str, str], list[str]]:
    """Every compile of ``compiles`` with ``variant`` (those the profile covers, with the
    profile): (compile key -> assembly, what failed)."""
    todo = [c for c in compiles if not variant.profile or (prof is not None and c.key in prof.gcda)]
    where = workdir / ("texts-" + "-".join(f.strip("-").replace("=", "_") for f in variant.flags)
                       + ("-pgo" if variant.profile else ""))
    if where.exists():
        shutil.rmtree(where)

    def one(c):
        return c, compile_one(compiler, c, variant, where, root, prof)

    with ThreadPoolExecutor(max_workers=max(1, jobs or os.cpu_count() or 1)) as pool:
        done = list(pool.map(one, todo))
    texts = {c.key: text for c, (text, _) in done if text is not None}
    failed = [f"{c.source.name}: {why}" for c, (text, why) in done if text is None]
    return texts, failed


#: A string of gcc's ``.debug_str`` under -g (``.LASF7:`` then its ``.string``).
_DEBUG_STR = re.compile(r'^(\.LASF\d+):\n\t\.string\t("[^"\n]*")\n', re.M)


def _without_producer(text: str) -> tuple[str, list[str]]:
    """``text`` without its debug strings, and those strings (sorted) but for gcc's
    DW_AT_producer string. Under -g the producer spells the command line's flags, so ``-O2``
    added to an ``-O2`` build changes that string, and with its length the order gcc gives
    the other strings: nothing else."""
    pairs = _DEBUG_STR.findall(text)
    rest = _DEBUG_STR.sub("", text)
    return rest, sorted(f"{label} {string}" for label, string in pairs if not string.startswith('"GNU '))


def same_texts(a: dict[str, str], b: dict[str, str]) -> bool:
    """Whether two variants' compiles came out the same (but for the producer string)."""
    return a.keys() == b.keys() and all(a[k] == b[k] or _without_producer(a[k]) == _without_producer(b[k])
                                        for k in a)


def changed(compiles, texts: dict[str, str]) -> set[str]:
    """The keys of ``texts`` whose text differs from gcc's recorded assembly of their compile,
    but for the producer string of the debug information (which names the flags)."""
    by_key = {c.key: c for c in compiles}
    out = set()
    for k, t in texts.items():
        gcc = by_key[k].asm_path.read_text(encoding="utf-8", errors="surrogateescape")
        if t != gcc and _without_producer(t) != _without_producer(gcc):
            out.add(k)
    return out
