"""The SMT equivalence tier (issue 25 items 2-3; docs/proof.md, "Part three").

Real gcc, the real assembler, real angr/VEX and the real z3 solver: a loop-free candidate is
proven equivalent to gcc -O3's function, one that is wrong on a single 64-bit value no random
test would hit is refused with that value as the counterexample, the narrow popcount
candidates are never called equivalent, and ``proof = "equivalent"`` works end to end.
"""

from __future__ import annotations

import json
import os

import pytest

from sgcc import proc
from sgcc.verify.function import smt  # angr itself comes with the test extra (the [proof] extra); no skip
from tests.conftest import EXAMPLES

POPCOUNT = EXAMPLES / "programs" / "popcount"
NARROW = sorted((POPCOUNT / "narrow").glob("*.s"))

MAX_C = """
long lmax(long a, long b) { return a > b ? a : b; }
"""
#: An honest candidate, written by hand (cmov, other operand order than gcc's).
MAX_OK = """
    .text
    .globl lmax
    .type lmax, @function
lmax:
    movq %rsi, %rax
    cmpq %rsi, %rdi
    cmovg %rdi, %rax
    ret
"""
#: Wrong only when a == 0x5eed1234cafef00d: a value random testing would never hit.
MAX_MAGIC = """
    .text
    .globl lmax
    .type lmax, @function
lmax:
    movabsq $0x5eed1234cafef00d, %rax
    cmpq %rax, %rdi
    je 1f
    movq %rsi, %rax
    cmpq %rsi, %rdi
    cmovg %rdi, %rax
    ret
1:  movq %rsi, %rax
    ret
"""
#: The same wrong value, but built from parts (no immediate equals it, so the function-level
#: test's constants from the code do not reach it): what the solver adds.
MAX_MAGIC_BUILT = MAX_MAGIC.replace("    movabsq $0x5eed1234cafef00d, %rax\n",
                                    "    movl $0x5eed1234, %eax\n    shlq $32, %rax\n"
                                    "    addq $0x4afef00d, %rax\n    addq $0x40000000, %rax\n"
                                    "    addq $0x40000000, %rax\n")
assert MAX_MAGIC_BUILT != MAX_MAGIC
#: gcc's max of a buffer's two words, and a candidate that stores through the pointer as well.
PAIR_C = """
long pairmax(long *p) { long a = p[0], b = p[1]; p[2] = a + b; return a > b ? a : b; }
"""
PAIR_WRONG_STORE = """
    .text
    .globl pairmax
    .type pairmax, @function
pairmax:
    movq (%rdi), %rax
    movq 8(%rdi), %rdx
    leaq (%rax,%rdx), %rcx
    cmpq $-1, %rdx
    jne 1f
    addq $1, %rcx
1:  movq %rcx, 16(%rdi)
    cmpq %rdx, %rax
    cmovl %rdx, %rax
    ret
"""


def _obj(tmp, name, text, c=False):
    src = tmp / (name + (".c" if c else ".s"))
    src.write_text(text)
    out = tmp / (name + ".o")
    r = proc.run(["gcc", "-O3", "-c", str(src), "-o", str(out)], timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return out


def test_loop_free_honest_candidate_is_proven_equivalent(tmp_path):
    gcc = _obj(tmp_path, "gcc", MAX_C, c=True)
    v = smt.prove(gcc, _obj(tmp_path, "cand", MAX_OK), "lmax", MAX_C)
    assert v.status == "proven" and v.level() == "proven equivalent", v.to_dict()
    # gcc's own function against itself, as a sanity check that cannot pass vacuously
    assert smt.prove(gcc, gcc, "lmax", MAX_C).level() == "proven equivalent"


def test_candidate_wrong_on_one_magic_value_is_refused_with_the_counterexample(tmp_path):
    gcc = _obj(tmp_path, "gcc", MAX_C, c=True)
    v = smt.prove(gcc, _obj(tmp_path, "cand", MAX_MAGIC), "lmax", MAX_C)
    assert v.status == "refuted", v.to_dict()
    assert v.counterexample["regs"]["rdi"] == 0x5EED1234CAFEF00D
    text = v.render_counterexample()
    assert "lmax on a solver's counterexample" in text and "rdi=0x5eed1234cafef00d" in text
    assert "(confirmed in the emulator: rax is" in text  # run concretely on both objects in Unicorn


def test_memory_effect_differing_on_one_buffer_value_is_refused_and_assumptions_are_named(tmp_path):
    gcc = _obj(tmp_path, "gcc", PAIR_C, c=True)
    v = smt.prove(gcc, _obj(tmp_path, "cand", PAIR_WRONG_STORE), "pairmax", PAIR_C)
    assert v.status == "refuted", v.to_dict()
    assert v.counterexample["memory"]["rdi"][8:16] == b"\xff" * 8
    assert "memory byte" in v.counterexample["difference"]
    assert "(confirmed in the emulator:" in v.render_counterexample()
    same = smt.prove(gcc, gcc, "pairmax", PAIR_C)
    # equal, but only under the memory model: never "proven equivalent"
    assert same.status == "proven" and same.level().startswith("equivalent assuming rdi points to"), same.to_dict()


def test_calls_are_not_decided(tmp_path):
    src = "long g(long); long f(long x) { return g(x) + 1; }\n"
    gcc = _obj(tmp_path, "gcc", src, c=True)
    v = smt.prove(gcc, gcc, "f", src)
    assert v.status == "undecided" and "call" in v.reason, v.to_dict()


@pytest.mark.slow
@pytest.mark.parametrize("path", NARROW, ids=lambda p: p.stem)
def test_narrow_popcount_candidates_are_never_called_equivalent(tmp_path, path):
    gcc = tmp_path / "gcc.o"
    assert proc.run(["gcc", "-O3", "-c", str(POPCOUNT / "popcount.c"), "-o", str(gcc)], timeout=60).returncode == 0
    cand = _obj(tmp_path, "cand", path.read_text())
    v = smt.prove(gcc, cand, "count_bits", (POPCOUNT / "popcount.c").read_text(), bound=8, seconds=10)
    # gcc's loop runs once per bit of each word, for up to 2^31 words: no bound unrolls it, and
    # the regions these candidates are wrong in lie far beyond any bound: the tier must say so.
    assert v.status in ("undecided", "refuted", "bounded"), v.to_dict()
    assert v.level() != "proven equivalent"
    if v.status == "undecided":
        assert v.reason and v.level() == f"not decided ({v.reason})"
    if v.status == "bounded":
        assert v.level().startswith("equivalent up to bound 8")


@pytest.mark.slow
def test_proof_equivalent_end_to_end_accepts_the_proven_and_refuses_the_merely_tested(tmp_path, sgcc_exe):
    # gcc's lmax is built at -O0 (spills through its frame, still loop-free), so the honest -O3
    # candidates are faster and timing hands them to the proof, which is what is tested here.
    prog = tmp_path / "prog.c"
    prog.write_text(
        "#include <stdio.h>\n"
        "__attribute__((noinline, optimize(\"O0\"))) long lmax(long a, long b) {\n"
        "  long r = a > b ? a : b, k = 0x5555;\n" + "  r ^= k; r += k; r -= k; r ^= k;\n" * 8 + "  return r; }\n"
        "int main(void) { long n, a, s = 0; if (scanf(\"%ld %ld\", &n, &a) != 2) return 1;\n"
        "  for (long i = 0; i < n; i++) s += lmax(a ^ i, i * 3);\n"
        "  printf(\"%ld\\n\", s); return 0; }\n")
    tests = tmp_path / "tests"
    tests.mkdir()
    exe = tmp_path / "ref"
    assert proc.run(["gcc", "-O3", str(prog), "-o", str(exe)], timeout=60).returncode == 0
    for i, inp in enumerate(["20000000 12345\n", "15000000 -7\n"]):
        (tests / f"t{i}.in").write_text(inp)
        out = proc.run([str(exe)], stdin=inp.encode(), timeout=60)
        (tests / f"t{i}.out").write_bytes(out.stdout)
    cands = tmp_path / "cands" / "lmax"
    cands.mkdir(parents=True)
    (cands / "ok.s").write_text(MAX_OK)
    (cands / "magic.s").write_text(MAX_MAGIC)
    (cands / "built.s").write_text(MAX_MAGIC_BUILT)
    report = tmp_path / "r.json"
    r = proc.run([sgcc_exe, "optimize", str(prog), "-O3", "--tests", str(tests), "-o", str(tmp_path / "p"),
                  "--candidates", str(cands.parent), "--generators", "replay", "--proof", "equivalent",
                  "--min-gain", "0", "--timing-rounds", "4", "--no-cache", "--report", str(report), "-q"],
                 timeout=600, env={**os.environ, "SGCC_RACE": "0"})  # every faster one reaches the proof
    assert r.returncode == 0, r.stderr.decode()
    data = json.loads(report.read_text())
    by = {c["origin"].rsplit("/", 1)[-1]: c for c in data["candidates"]}
    # The magic value as an immediate (and no .size, which once hid the function's constants):
    # the function-level test reaches it from the code's own constants.
    magic = by["magic.s"]
    assert magic["stage"] == "prove", magic
    assert magic["reason"] == "differs from gcc's function on a function state", magic
    assert "rdi=0x5eed1234cafef00d" in magic["detail"]
    built = by["built.s"]
    assert built["stage"] == "prove", built
    assert built["reason"] == "differs from gcc's function on a solver's counterexample", built
    assert "rdi=0x5eed1234cafef00d" in built["detail"]
    # what the level adds: the function-level test passed it (a merely tested candidate)
    assert built["proof"].startswith(("tested on ", "whole-program tests only")), built
    ok = by["ok.s"]
    if ok["stage"] == "accepted":  # whether it is faster is the timing's call; proven is ours
        assert ok["proof"].startswith("proven equivalent"), ok
    else:
        assert ok["stage"] == "time", ok


def test_without_the_extra_bounded_and_equivalent_say_so(tmp_path, monkeypatch):
    from sgcc.engine.funcproof import FunctionProof
    from sgcc.engine.request import Request

    monkeypatch.setattr(smt, "available", lambda: False)
    req = Request(source=tmp_path / "x.c", flags=[], tests=tmp_path, output=tmp_path / "o", proof="bounded")
    with pytest.raises(smt.NeedsExtra) as exc:
        FunctionProof(req, None, None, [], tmp_path)
    assert exc.value.render().startswith("sgcc: error: proof = bounded/equivalent needs the proof extra")
    assert "pip install" in exc.value.render()


SUM_C = """
long upto(long n) { long s = 0; for (long i = 0; i < n; i++) s += i ^ (i >> 1); return s; }
"""


def test_the_bound_setting_reaches_the_tier_and_a_loop_is_only_bounded(tmp_path, monkeypatch):
    # gcc's loop against itself: no path ends for every n within any bound, so the verdict is
    # "equivalent up to bound k" with the k the setting gives, never "proven".
    from sgcc.engine.request import request_from_options

    monkeypatch.setenv("SGCC_PROOF_BOUND", "3")
    monkeypatch.setenv("SGCC_PROOF_SECONDS", "45")
    cfg, req = request_from_options({}, source=tmp_path / "x.c", flags=["-O3"], tests=tmp_path,
                                    output=tmp_path / "o")
    assert (req.proof_bound, req.proof_seconds) == (3, 45.0)
    gcc = _obj(tmp_path, "gcc", SUM_C, c=True)
    v = smt.prove(gcc, gcc, "upto", SUM_C, bound=req.proof_bound, seconds=req.proof_seconds)
    assert v.status == "bounded" and v.level() == "equivalent up to bound 3", v.to_dict()
    assert v.paths[0] < smt.prove(gcc, gcc, "upto", SUM_C, bound=6, seconds=45).paths[0]  # the bound is what cuts


# -- "proven" is never false: traps are outcomes (issue 35 item 3) ------------------------------------

#: gcc's lmax, and a candidate with a dead `div` whose divisor is zero for one input in 2^32:
#: its quotient is never used, so VEX (which computes some value for x / 0) found them equal.
MAX_DEAD_DIV = """
    .text
    .globl lmax
    .type lmax, @function
lmax:
    movq %rdi, %rax
    xorl %edx, %edx
    movl %edi, %ecx
    xorl $0x5eedf00d, %ecx
    divl %ecx
    movq %rsi, %rax
    cmpq %rsi, %rdi
    cmovg %rdi, %rax
    ret
"""
#: ... and one whose dead `idiv` overflows (INT64_MIN / -1) for one pair of inputs.
MAX_DEAD_IDIV = """
    .text
    .globl lmax
    .type lmax, @function
lmax:
    movq %rdi, %rax
    cqto
    movq %rsi, %rcx
    orq $1, %rcx
    idivq %rcx
    movq %rsi, %rax
    cmpq %rsi, %rdi
    cmovg %rdi, %rax
    ret
"""
#: An aligned SSE load from its own frame at an unaligned place: it always faults on the CPU.
MAX_MISALIGNED = """
    .text
    .globl lmax
    .type lmax, @function
lmax:
    subq $40, %rsp
    movq %rdi, 8(%rsp)
    movq %rsi, 16(%rsp)
    movdqa 8(%rsp), %xmm0
    addq $40, %rsp
    movq %rsi, %rax
    cmpq %rsi, %rdi
    cmovg %rdi, %rax
    ret
"""


@pytest.mark.parametrize("text, signal", [(MAX_DEAD_DIV, "SIGFPE"), (MAX_DEAD_IDIV, "SIGFPE"),
                                          (MAX_MISALIGNED, "SIGSEGV")], ids=["div0", "idiv-overflow", "movdqa"])
def test_a_candidate_that_can_fault_is_never_proven_equivalent(tmp_path, text, signal):
    gcc = _obj(tmp_path, "gcc", MAX_C, c=True)
    v = smt.prove(gcc, _obj(tmp_path, "cand", text), "lmax", MAX_C)
    assert v.status == "refuted", v.to_dict()
    assert f"the candidate's faults with {signal}" in v.counterexample["difference"], v.counterexample
    if signal == "SIGFPE" and "divl" in text:
        assert v.counterexample["regs"]["rdi"] & 0xFFFFFFFF == 0x5EEDF00D
    if "idivq" in text:
        assert v.counterexample["regs"]["rdi"] == 2**63 and v.counterexample["regs"]["rsi"] | 1 == 2**64 - 1


def test_a_division_that_cannot_fault_is_still_proven(tmp_path):
    # gcc's own idiv by a constant-ored divisor against itself: a trap on one side only never
    # arises, so the verdict stands (the trap paths pair with each other).
    c = "long q(long a, long b) { return a / (b | 1); }"
    gcc = _obj(tmp_path, "gcc", c, c=True)
    v = smt.prove(gcc, gcc, "q", c)
    assert v.status == "proven", v.to_dict()
