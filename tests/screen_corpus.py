"""Every variant generator's output over the corpus, through the engine's verify stages:
which of gcc's own candidates a stage refuses (the test asserts none; run as a script to list them).
"""

from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sgcc import proc
from sgcc.candidates import flagsearch, pgo, variants
from sgcc.candidates.transplant.build import transplant
from sgcc.candidates.transplant.generator import tag_for
from sgcc.candidates.transplant.side import Side
from sgcc.candidates.transplant.wholefile import whole_file_text
from sgcc.verify.static import clobbers, controlflow, isa, objcheck, textscreen

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(__file__).parent / "asm_corpus"


def programs() -> list[Path]:
    """Every single-file C program of the corpus: the examples and the asm corpus."""
    out = sorted((ROOT / "examples" / "programs").glob("*/*.c"))
    out += sorted(CORPUS.glob("*.c"))
    return out


def flag_sets(native: bool) -> list[tuple[str, list[str]]]:
    """Every flag set a variant generator may compile with (PGO's without the profile)."""
    sets = list(variants.PORTABLE)
    if native:
        sets += variants.NATIVE + variants.isa_singles(variants.host_cpu_flags())
    gen = flagsearch.FlagSearchGenerator(seed=0)
    gen.genes = gen.space("native" if native else "flags")
    # Every value of every gene in one of a few flag sets (set k takes each gene's k-th value).
    for k in range(1, max(len(values) for _n, values in gen.genes)):
        g = tuple(k if k < len(values) else 0 for _n, values in gen.genes)
        sets.append((f"flags-mix{k}", gen.flags(g)))
    return sets


def pgo_sets(native: bool) -> list[tuple[str, str, list[str]]]:
    """(name, profile base, flags) of every profile-guided compilation."""
    out = [("pgo", "pgo", [])] + ([("pgo-native", "pgo-native", ["-march=native"])] if native else [])
    for name, base, extra in pgo.COMBINED + (pgo.COMBINED_NATIVE if native else []):
        out.append((name, base, (["-march=native"] if base == "pgo-native" else []) + extra))
    return out


def inputs(src: Path) -> list[bytes]:
    """What the program reads in its tests (its examples' small tests; nothing for the asm corpus)."""
    tests = src.parent / "tests"
    if not tests.is_dir():
        return [b""]
    return [f.read_bytes() for f in sorted(tests.glob("*.in")) if not f.name.startswith("large.")][:6] or [b""]


def train(src: Path, where: Path, base_name: str, flags: list[str]) -> Path | None:
    """A profile of ``src`` under ``flags`` from its test inputs (the corpus is trusted code)."""
    d = where / f"train-{base_name}"
    d.mkdir(parents=True, exist_ok=True)
    prof = d / "profile"
    gen = ["-O3", *flags, f"-fprofile-generate={prof}"]
    if not proc.run(["gcc", *gen, "-w", "-c", str(src), "-o", str(d / "prog.o")], timeout=300).ok:
        return None
    if not proc.run(["gcc", *gen, str(d / "prog.o"), "-lm", "-o", str(d / "inst")], timeout=300).ok:
        return None
    for data in inputs(src):
        proc.run([str(d / "inst")], stdin=data, timeout=60)
    gcda = list(prof.rglob("*.gcda"))
    return gcda[0] if len(gcda) == 1 else None


def _compile(src: Path, flags: list[str], where: Path, stem: str) -> tuple[str, Path] | None:
    s, o = where / f"{stem}.s", where / f"{stem}.o"
    r = proc.run(["gcc", "-O3", *flags, "-w", "-S", "-o", str(s), str(src)], timeout=300)
    if not r.ok:
        return None
    r = proc.run(["gcc", "-c", str(s), "-o", str(o)], timeout=300)
    return (s.read_text(), o) if r.ok else None


def check(base: Side, base_obj: Path, replacements: dict[str, str], where: Path, target) -> str | None:
    """The first verify stage that refuses the candidate, with its reason; None if all pass."""
    whole = "<translation-unit>" in replacements
    defined = frozenset(base.units)
    for text in replacements.values():
        v = textscreen.screen_text(text, may_define=defined, writable_data=whole)
        if not v.ok:
            return f"textscreen: {v.reason}"
    text = replacements["<translation-unit>"] if whole else base.asm.join(replacements)
    s, o = where / "cand.s", where / "cand.o"
    s.write_text(text)
    r = proc.run(["gcc", "-c", str(s), "-o", str(o)], timeout=300)
    if not r.ok:
        return "assemble: " + r.stderr.decode(errors="replace")[-300:]
    v = objcheck.check_object(o, base_obj, isa=target)
    if not v.ok:
        return f"objcheck: {v.reason}"
    v = controlflow.verdict(o, base_obj)
    if not v.ok:
        return f"controlflow: {v.reason}"
    if not whole:
        for name in replacements:
            extra = clobbers.extra_clobbers(o, base_obj, name, replaced=frozenset(replacements))
            if extra:
                return f"clobbers: {name} {extra}"
    return None


def work(native: bool) -> list[tuple]:
    """Every compilation ``refusals`` makes, each once, with the target it is checked for:
    (name, flags, "portable" | "native") or (name, profile base, flags, target). With ``native``
    the portable flag sets are not checked again for the native target: the instruction-set
    check is the only stage that depends on the target, and what it admits for the portable
    target the native one (a superset) admits too."""
    def fixed(item: tuple) -> tuple:
        return (*item[:-1], tuple(item[-1]))  # the flags as a tuple: items are compared

    portable = [(*fixed(item), "portable") for item in flag_sets(False) + pgo_sets(False)]
    if not native:
        return portable
    seen = {item[:-1] for item in portable}
    return portable + [(*fixed(item), "native") for item in flag_sets(True) + pgo_sets(True)
                       if fixed(item) not in seen]


def refusals(src: Path, where: Path, native: bool, jobs: int = 2) -> list[str]:
    """What the verify stages refuse of every variant of ``src`` (program, variant, unit: why):
    the portable flag sets checked for the portable target and, with ``native``, the native
    ones for this host's."""
    where.mkdir(parents=True, exist_ok=True)
    got = _compile(src, [], where, "base")
    if got is None:
        return []
    base_text, base_obj = got
    base = Side(base_text, obj=base_obj)
    targets = {"portable": isa.target_from_flags("gcc", ["-O3"])}
    if native:
        targets["native"] = isa.native_target("gcc")
    items = work(native)

    # Many flag sets give some unit the same text (a leaf function -funroll-loops leaves
    # alone): the stages are a function of the candidate's text, gcc's side and the target,
    # so each distinct candidate is checked once per target and its verdict shared (two
    # threads may both check a text neither has finished: the same verdict, twice).
    verdicts: dict[tuple, str | None] = {}
    guard = threading.Lock()

    def checked(replacements: dict[str, str], d: Path, target: str) -> str | None:
        key = (target, *sorted(replacements.items()))
        with guard:
            if key in verdicts:
                return verdicts[key]
        why = check(base, base_obj, replacements, d, targets[target])
        with guard:
            verdicts[key] = why
        return why

    profiles = {}
    for item in items:
        if len(item) == 4 and item[0] == item[1]:
            profiles[item[0]] = train(src, where, item[0], item[2])

    def one(item):
        name, flags, target = item[0], item[-2], item[-1]
        if target == "native":
            name += "@native"  # (the flag search's mixes are named alike for both targets)
        d = where / name
        d.mkdir(exist_ok=True)
        if len(item) == 4:  # profile-guided: the profile copied to where gcc looks for this output
            gcda = profiles.get(item[1])
            if gcda is None:
                return []
            prof = d / "profile"
            dest = prof / (os.path.abspath(d / "var").lstrip("/") + ".gcda")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(gcda.read_bytes())
            flags = [f"-fprofile-use={prof}", "-fprofile-partial-training", "-Werror=missing-profile", *flags]
        got = _compile(src, flags, d, "var")
        if got is None:
            return []
        var = Side(got[0], obj=got[1])
        out = []
        offered = 0
        for unit in base.asm.units:
            t = transplant(base, var, unit.name, tag_for(name))
            if t.text is None:
                continue
            offered += 1
            why = checked({unit.name: t.text, **t.also}, d, target)
            if why:
                out.append(f"{src.name} {name} {unit.name}: {why}")
        text, why = whole_file_text(base, var)
        if text is None:
            out.append(f"{src.name} {name} <whole> not offered: {why}")
        elif text != base_text:
            why = checked({"<translation-unit>": text}, d, target)
            if why:
                out.append(f"{src.name} {name} <whole>: {why}")
        return out

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return [x for batch in pool.map(one, items) for x in batch]


if __name__ == "__main__":
    import tempfile

    native = "--native" in sys.argv
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    tmp = Path(tempfile.mkdtemp(prefix="sgcc-screen-corpus-"))
    for src in programs():
        if only and src.stem not in only:
            continue
        for line in refusals(src, tmp / src.stem, native, jobs=os.cpu_count() or 2):
            print(line, flush=True)
