#!/usr/bin/env python3
"""Clang's functions fitted into gcc's units over the corpus, and what each static proof refuses.

For every single-file program of the corpus (the examples and ``tests/asm_corpus``), portable
and ``--isa native``: gcc's ``-O3`` unit is the baseline; clang compiles the same source under
each setting of the ``clang`` generator (``sgcc.candidates.clang``), and every function gcc
defines is fitted by the transplant. Each function then either

* is not offered, and why (the transplant's reason, grouped: a runtime helper or other
  external gcc's unit lacks, a static local clang names otherwise, a static function of
  clang's whose callers cannot come along...), or is the same code as gcc's;
* or goes through the stages that decide from the text and the object alone, as the engine
  runs them (text screen, assembly, object check, control flow and clobbers, then the same
  control-flow proof as an untrusted candidate, with the information-flow rule): the first
  stage that refuses it, and the rule.

Prints the counts per reason and per stage (functions, not candidates: the first setting that
offers the function's unit counts, and ``--all`` counts every setting's). What the box's
tests and the function-level test refuse needs the program run: the report of ``sgcc
optimize --generators clang`` says so per candidate (``bench/search_vs_flags.py`` tallies it).

    python bench/clang_fit.py [--native] [--all] [--only NAME ...] [--sources FILE.c ...] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc import proc  # noqa: E402
from sgcc.candidates import clang  # noqa: E402
from sgcc.candidates.transplant.asmtext import compiler_made, normalized  # noqa: E402
from sgcc.candidates.transplant.build import transplant  # noqa: E402
from sgcc.candidates.transplant.generator import Variant, tag_for  # noqa: E402
from sgcc.candidates.transplant.side import Side  # noqa: E402
from sgcc.verify.static import controlflow, isa  # noqa: E402
from tests import screen_corpus  # noqa: E402

#: Transplant reasons, grouped (first match wins).
GROUPS = [
    ("external gcc's unit does not use (runtime helper, library call)", r"which the baseline does not use"),
    ("static local or object named otherwise (clang: f.x, gcc: x.N)", r"which the baseline does not define"),
    ("static function: callers cannot all come along", r"internal linkage"),
    ("address of a static function taken by gcc only", r"takes the address of"),
    ("gcc's callers rely on gcc's version (-fipa-ra, stack alignment)", r"fipa-ra|aligned stack"),
    ("clone or inlined on one side", r"compiler-made clone|not a function of its own|no unit"),
    ("a different kind of object", r"different kind of object"),
    ("labels of gcc's function referenced from outside", r"referenced from outside"),
    ("inline asm", r"inline asm"),
]


def group(reason: str) -> str:
    for name, pattern in GROUPS:
        if re.search(pattern, reason):
            return name
    return "other: " + reason[:90]


def stage(base: Side, base_obj: Path, replacements: dict[str, str], where: Path, target) -> str | None:
    """The first static stage that refuses the candidate (untrusted), or None."""
    why = screen_corpus.check(base, base_obj, replacements, where, target)
    if why:
        return why
    v = controlflow.verdict(where / "cand.o", base_obj, frozenset(replacements))
    return None if v.ok else f"infoflow: {v.reason}"


def rule_of(why: str) -> str:
    kind = why.split(":", 1)[0]
    m = re.search(r"\(rule ([\w-]+)\)|^[\w]+: ([\w-]+):", why)
    if kind in ("controlflow", "infoflow"):
        m = re.match(r"\w+: (?:\S+: )?([\w-]+)", why)
        return f"{kind} ({m.group(1) if m else '?'})"
    return kind + (f" ({m.group(1) or m.group(2)})" if m else "")


def program(src: Path, native: bool, command: list[str], work: Path, every: bool) -> list[dict]:
    work.mkdir(parents=True, exist_ok=True)
    flags = ["-O3"] + (["-march=native"] if native else [])
    s, o = work / "base.s", work / "base.o"
    if not proc.run(["gcc", *flags, "-w", "-S", "-o", str(s), str(src)], timeout=300).ok:
        return []
    proc.run(["gcc", "-c", str(s), "-o", str(o)], timeout=300)
    base = Side(s.read_text(), obj=o)
    # gcc's callers under -fno-ipa-ra, which come with clang's function where only -fipa-ra
    # needs callers (the generator's abi_callers).
    a_s, a_o = work / "abi.s", work / "abi.o"
    abi = None
    if proc.run(["gcc", *flags, "-fno-ipa-ra", "-w", "-S", "-o", str(a_s), str(src)], timeout=300).ok and \
            proc.run(["gcc", "-c", str(a_s), "-o", str(a_o)], timeout=300).ok:
        abi = Side(a_s.read_text(), obj=a_o)
        abi.callers_assume_abi = True
    target = isa.native_target("gcc") if native else isa.target_from_flags("gcc", flags)
    ctx = SimpleNamespace(program=SimpleNamespace(source=src, flags=flags, asm_flags=[], source_arg=None,
                                                 compile_cwd=None), compiler="gcc")
    base_flags = clang.gcc_defaults("gcc", flags) + clang.clang_flags(flags, isa="native" if native else "flags")
    gen = clang.ClangGenerator()
    rows: list[dict] = []
    done: set[str] = set()
    for name, opts in gen.chosen("native" if native else "flags"):
        v = clang.compile_clang(ctx, command, base_flags, Variant(name, list(opts)), work / "clang")
        if v.side is None:
            rows.append({"program": src.stem, "setting": name, "function": "*", "outcome": v.error})
            continue
        for unit in base.asm.units:
            if compiler_made(unit.name) or (unit.name in done and not every):
                continue
            t = transplant(base, v.side, unit.name, tag_for(name), abi=lambda: abi)
            row = {"program": src.stem, "setting": name, "function": unit.name}
            if t.text is None:
                if unit.name in v.side.units and normalized(v.side.units[unit.name].text) == \
                        normalized(unit.text):
                    row["outcome"] = "same code"
                else:
                    row["outcome"], row["reason"] = "not offered", t.reason
            else:
                why = stage(base, o, {unit.name: t.text, **t.also}, work, target)
                row["outcome"] = "passed" if why is None else "refused"
                if why:
                    row["reason"] = why
                if t.also:
                    row["with"] = sorted(t.also)
                if t.abi_callers:
                    row["with_gcc_no_ipa_ra"] = t.abi_callers
            done.add(unit.name)
            rows.append(row)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--native", action="store_true")
    ap.add_argument("--all", action="store_true", help="every setting's unit, not the first offered")
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--sources", nargs="*", type=Path, default=[],
                    help="other single-file C programs (such as bench/search_vs_flags.py's PolyBench files)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    command, why = clang.locate()
    if command is None:
        print(f"clang {why}")
        return 1
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="sgcc-clang-fit-") as tmp:
        for src in list(screen_corpus.programs()) + args.sources:
            if args.only and src.stem not in args.only:
                continue
            for row in program(src, args.native, command, Path(tmp) / src.stem, args.all):
                rows.append(row)
                if row["outcome"] not in ("passed", "same code"):
                    print(f"{row['program']} {row['setting']} {row['function']}: {row['outcome']}: "
                          f"{row.get('reason', '')[:200]}", flush=True)
    outcomes = Counter(r["outcome"] for r in rows if r["function"] != "*")
    print(f"\n{sum(outcomes.values())} functions ({'native' if args.native else 'portable'}): "
          + ", ".join(f"{n} {k}" for k, n in outcomes.most_common()))
    print("not offered, by reason:")
    for k, n in Counter(group(r["reason"]) for r in rows if r["outcome"] == "not offered").most_common():
        print(f"  {n:4} {k}")
    print("refused by the static proofs, by stage and rule:")
    for k, n in Counter(rule_of(r["reason"]) for r in rows if r["outcome"] == "refused").most_common():
        print(f"  {n:4} {k}")
    came = [r for r in rows if r.get("with")]
    print(f"offered with callers: {len(came)} functions; with gcc's own callers under -fno-ipa-ra: "
          f"{sum(1 for r in came if r.get('with_gcc_no_ipa_ra'))}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
