#!/usr/bin/env python3
"""How many of the honest hand-written example candidates the static stages accept.

Every candidate under ``examples/programs/*/candidates*/``, ``examples/dataset/*/candidates/``
and ``examples/bitstats/candidates`` (``bad/``, ``wrong_output`` and ``does_not_assemble`` ones
are left out: they are meant to fail) is substituted into gcc's ``-O3``
assembly of its program, as the engine does, and put through the stages that decide from
the text and the object alone: the text screen, the assembler, the object checks and the
control-flow proof, once with today's rules for trusted generators and once as an
untrusted candidate (``--generators replay``: the information-flow rule of
sgcc.verify.static.infoflow too). Prints each candidate's outcome and the two counts.

``--function`` also puts each candidate the untrusted rules accept through the function-level
test as an untrusted candidate is (the footprint rule, the cost rule, the comparison of
instruction forms with the CPU: sgcc.verify.function), on states captured from its program's
tests, and counts those it accepts (a project's candidates, bitstats's, have no states).

Measured: 20/20 trusted; untrusted 18/20 before index ranges (sgcc.verify.static.bounds: histogram
and nqueens refused), 19/20 with them (nqueens' pointer walk over a stack array refused);
18/20 since the red team's rule that bsf may keep its destination (gcdsum's first loop
iteration has the caller's %ecx there: docs/proof.md, "Measured").

    python bench/proof_examples.py [--function]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc.asm.units import AsmFile  # noqa: E402
from sgcc.verify.static import assembler, controlflow, isa, objcheck, textscreen  # noqa: E402


def candidates():
    """(program source, function, candidate file, native?) for every honest example candidate."""
    for prog in sorted((ROOT / "examples" / "programs").iterdir()):
        src = prog / f"{prog.name}.c"
        for sub in ("candidates", "candidates-native"):
            for path in sorted((prog / sub).rglob("*.s")) if (prog / sub).is_dir() else ():
                fn = path.parent.name if path.parent.name != sub else path.stem
                yield src, fn, path, sub.endswith("native")
    # The dataset's hand-written candidates, less those written to fail.
    for path in sorted((ROOT / "examples" / "dataset").glob("*/candidates/*/*.s")):
        if path.stem not in ("wrong_output", "does_not_assemble"):
            prog = path.parents[2]
            yield prog / f"{prog.name}.c", path.parent.name, path, False
    bits = ROOT / "examples" / "bitstats"
    for path in sorted((bits / "candidates").glob("*.s")):
        src = next(c for c in sorted((bits / "src").glob("*.c")) if f" {path.stem}(" in c.read_text())
        yield src, path.stem, path, False


def verdict(src: Path, fn: str, cand: Path, native: bool, work: Path) -> tuple[str, str]:
    """The outcome for trusted rules and for untrusted ones: "ok" or the refusal."""
    flags = ["-O3"] + (["-march=native"] if native else [])
    base_s = work / "base.s"
    subprocess.run(["gcc", *flags, "-S", str(src), "-o", str(base_s), "-I", str(src.parent)], check=True)
    base = AsmFile.parse(base_s.read_text())
    if fn not in {u.name for u in base.units}:
        return ("no such function", "no such function")
    text = cand.read_text()
    v = textscreen.screen_text(text, may_define=frozenset(u.name for u in base.units))
    if not v.ok:
        return (f"check: {v.reason}",) * 2
    (work / "cand.s").write_text(base.join({fn: text}))
    for name in ("base", "cand"):
        v = assembler.assemble(work / f"{name}.s", work / f"{name}.o", flags=flags)
        if not v.ok:
            return (f"assemble: {v.reason}",) * 2
    target = isa.native_target("gcc") if native else isa.target_from_flags("gcc", flags)
    v = objcheck.check_object(work / "cand.o", work / "base.o", isa=target)
    if not v.ok:
        return (f"check: {v.reason}",) * 2
    out = []
    for untrusted in (frozenset(), frozenset({fn})):
        v = controlflow.verdict(work / "cand.o", work / "base.o", untrusted)
        out.append("ok" if v.ok else f"control: {v.reason}")
    return tuple(out)


_TESTERS: dict = {}


def function_verdict(src: Path, fn: str, text: str, native: bool, work: Path) -> str:
    """The function-level test of the candidate unit ``text`` as an untrusted candidate: "ok" or why not."""
    from sgcc.engine.baseline import build_baseline
    from sgcc.engine.request import Request
    from sgcc.verify.box.sandbox import Sandbox, load_tests
    from sgcc.verify.function import funcdiff, funcstate

    tests = src.parent / "tests"
    if not tests.is_dir():
        return "no tests to capture states from"
    key = (src, native)
    if key not in _TESTERS:
        where = work / f"fn-{len(_TESTERS)}"
        where.mkdir()
        flags = ["-O3", "-lm"] + (["-march=native"] if native else [])
        program = build_baseline(Request(source=src, flags=flags, tests=tests, output=where / "out"), where)
        with Sandbox(timeout=30) as sandbox:
            recorded = sandbox.record(program.binary, load_tests(tests))
            capture = funcstate.capture(program, sandbox, recorded, where / "capture", "gcc",
                                        [u.name for u in program.asm.units])
        declarations = subprocess.run(["gcc", "-E", "-P", str(src)], capture_output=True, text=True).stdout
        _TESTERS[key] = (program, funcdiff.FunctionTester(capture, program.obj, program.source_text, seed=1,
                                                          declarations=declarations))
    program, tester = _TESTERS[key]
    base = AsmFile.parse(program.asm_text)
    cand = work / "fcand.s"
    cand.write_text(base.join({fn: text}))
    obj = work / "fcand.o"
    subprocess.run(["gcc", *program.asm_flags, "-c", "-x", "assembler", str(cand), "-o", str(obj)], check=True)
    v = tester.check(obj, [fn], untrusted=True)
    if v.mismatch is not None:
        return f"{v.mismatch.rule}: {v.mismatch.difference[:160]}"
    if fn in v.untested:
        return f"untested: {v.untested[fn][:160]}"
    return "ok"


def main() -> int:
    function = "--function" in sys.argv[1:]
    counts = [0, 0, 0]
    total = 0
    with tempfile.TemporaryDirectory(prefix="sgcc-proof-ex-") as tmp:
        for src, fn, cand, native in candidates():
            total += 1
            trusted, untrusted = verdict(src, fn, cand, native, Path(tmp))
            counts[0] += trusted == "ok"
            counts[1] += untrusted == "ok"
            line = f"{cand.relative_to(ROOT)}: trusted rules {trusted}; untrusted {untrusted}"
            if function and untrusted == "ok":
                outcome = function_verdict(src, fn, cand.read_text(), native, Path(tmp))
                counts[2] += outcome == "ok"
                line += f"; function-level test {outcome}"
            print(line, flush=True)
    print(f"{total} honest candidates: {counts[0]} accepted under the trusted rules, "
          f"{counts[1]} as untrusted (information-flow rule)"
          + (f", {counts[2]} of those by the function-level test as untrusted (footprint, cost, forms)"
             if function else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
