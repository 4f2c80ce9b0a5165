"""The footprint rule (issues 35 and 43; docs/proof.md): on every function state a candidate
touches only the memory gcc's same function touches.

The red team's candidates (tests/footprint_attacks.py: C compiled by the real gcc) each pass
the static rules and were shipped before this rule; here each is refused by the function-level
test with the state, the instruction and the address. gcc's own function and the honest SWAR
candidate pass. The end-to-end runs (``sgcc optimize`` as the caller and as user nobody) are in
tests/test_footprint_e2e.py.
"""

from __future__ import annotations

import struct

import pytest

from sgcc import proc
from sgcc.engine.baseline import build_baseline
from sgcc.engine.request import Request
from sgcc.verify.box.sandbox import Sandbox, load_tests
from sgcc.verify.function import funcdiff, funcstate
from sgcc.verify.function.footprint import Footprint, Spans
from tests import footprint_attacks as fa

#: The function-level test is these tests' subject: its default share of time (tests/conftest.py).
pytestmark = pytest.mark.function_test


def _tester(tmp, source, tests_dir, states: int, seconds: float):
    """gcc's program of ``source``, its function states captured on ``tests_dir``, and a tester."""
    req = Request(source=source, flags=["-O3"], tests=tests_dir, output=tmp / "out")
    program = build_baseline(req, tmp)
    with Sandbox(timeout=20) as sandbox:
        tests = sandbox.record(program.binary, load_tests(tests_dir))
        capture = funcstate.capture(program, sandbox, tests, tmp / "capture", "gcc",
                                    [u.name for u in program.asm.units])
    tester = funcdiff.FunctionTester(capture, program.obj, program.source_text, states=states, seconds=seconds,
                                     seed=1)
    return program, tester, tmp


@pytest.fixture(scope="module")
def stackbits(tmp_path_factory):
    return _tester(tmp_path_factory.mktemp("footprint"), fa.STACKBITS, fa.STACKBITS_TESTS, 300, 20)


def _candidate(program, tmp, name: str, function: str = "count_bits", **defines):
    text = fa.unit(name, tmp / "src", function, defines=defines or None)
    asm = tmp / f"{name}.s"
    asm.write_text(program.asm.join({function: text}))
    obj = tmp / f"{name}.o"
    proc.run(["gcc", *program.asm_flags, "-c", "-x", "assembler", str(asm), "-o", str(obj)], check=True)
    return obj


def test_gcc_s_own_function_and_the_honest_candidate_keep_to_gcc_s_footprint(stackbits):
    program, tester, tmp = stackbits
    for obj in (program.obj, _candidate(program, tmp, "honest")):
        verdict = tester.check(obj, ["count_bits"], untrusted=True)
        assert verdict.ok, verdict.mismatch.render()
        assert "count_bits" in verdict.tested, verdict.level()
        states, mutated = verdict.tested["count_bits"]
        assert states > 20 and mutated > 10, verdict.level()


#: Attack -> the kind of access that refuses it first.
REFUSED_BY = {"env_tell": "read", "rop_chain": "read", "cpu_tell": "read", "memo": "frame",
              "static_counter": "read", "same_value_write": "write"}


@pytest.mark.parametrize("name", sorted(REFUSED_BY))
def test_each_attack_is_refused_by_the_footprint_rule_naming_state_instruction_and_address(stackbits, name):
    program, tester, tmp = stackbits
    defines = dict(fa.libc_offsets(tmp), PWNED_FILE='"/nonexistent/x"') if name == "rop_chain" else {}
    verdict = tester.check(_candidate(program, tmp, name, **defines), ["count_bits"], untrusted=True)
    assert not verdict.ok, f"{name} passed: {verdict.level()}"
    m = verdict.mismatch
    assert m.rule == "footprint", m.render()
    text = m.render()
    # The state (where it was captured and how it was mutated), the access, the instruction.
    assert text.startswith("count_bits on a function state (test "), text
    kind = REFUSED_BY[name]
    what = {"read": "reads", "write": "writes", "frame": "of its own frame that it did not write"}[kind]
    assert f"footprint: the candidate {what}" in text or what in text, text
    assert " at 0x" in text and "(the candidate's code): `" in text, text


def test_a_candidate_fast_only_at_the_timed_sizes_is_refused_by_the_cost_rule(stackbits):
    program, tester, tmp = stackbits
    verdict = tester.check(_candidate(program, tmp, "size_slow"), ["count_bits"], untrusted=True)
    assert not verdict.ok and verdict.mismatch.rule == "cost", verdict.level()
    text = verdict.mismatch.render()
    assert "beyond the tests'" in text and "that was timed" in text, text
    # The honest candidate's counts are recorded: what the timing saw and sizes beyond it.
    honest = tester.check(_candidate(program, tmp, "honest"), ["count_bits"], untrusted=True)
    cost = honest.cost["count_bits"]
    assert cost["timed"]["ratio"] < 0.5 and cost["beyond"], cost
    assert all(b["ratio"] < 2 * cost["timed"]["ratio"] + 0.1 for b in cost["beyond"]), cost


def test_a_candidate_wrong_only_on_a_hash_value_is_called_tested_never_proven(stackbits):
    # Expected to pass: one input in 2^32. What matters is the claim the report makes.
    program, tester, tmp = stackbits
    verdict = tester.check(_candidate(program, tmp, "hash_trigger"), ["count_bits"], untrusted=True)
    assert verdict.ok, verdict.mismatch.render()
    assert verdict.level().startswith("tested on ") and "proven" not in verdict.level()


def test_without_the_rule_the_tell_passes_the_function_level_test(stackbits):
    # The attack is real: held only to the differential test (as a trusted variant is), the
    # environment tell is correct on every captured and mutated state.
    program, tester, tmp = stackbits
    verdict = tester.check(_candidate(program, tmp, "env_tell"), ["count_bits"], untrusted=False)
    assert verdict.ok, verdict.mismatch.render()


# -- what the C library writes on the function's behalf ------------------------------------------

@pytest.fixture(scope="module")
def readsum(tmp_path_factory):
    return _tester(tmp_path_factory.mktemp("readsum"), fa.READSUM, fa.READSUM_TESTS, 60, 10)


#: gcc's sum_pair checks scanf's count, then reads a and b from its frame.
GCC_READS = "\tcmpl\t$2, %eax\n\tjne\t.L3\n\tmovq\t(%rsp), %rax\n\tleaq\t(%rax,%rax,2), %rax\n\taddq\t8(%rsp), %rax\n"
#: Candidates for sum_pair: gcc's unit with its reads of a and b replaced.
READSUM_CANDIDATES = {
    # clang's shape (crc32's main): both read before the count is checked, stale when it fails.
    "reads_first": "\tmovq\t(%rsp), %rcx\n\tmovq\t8(%rsp), %rdx\n\tcmpl\t$2, %eax\n\tjne\t.L3\n"
                   "\tleaq\t(%rcx,%rcx,2), %rax\n\taddq\t%rdx, %rax\n",
    # ... and the eight bytes above b, which scanf never wrote: what an earlier call left there.
    "reads_past": "\tmovq\t(%rsp), %rcx\n\tmovq\t8(%rsp), %rdx\n\tmovq\t16(%rsp), %rsi\n\tcmpl\t$2, %eax\n"
                  "\tjne\t.L3\n\tleaq\t(%rcx,%rcx,2), %rax\n\taddq\t%rdx, %rax\n",
}


def _readsum_candidate(program, tmp, name: str, text: str | None = None):
    unit = program.asm.unit("sum_pair").text
    assert GCC_READS in unit, unit
    text = text or unit.replace(GCC_READS, READSUM_CANDIDATES[name])
    asm = tmp / f"{name}.s"
    asm.write_text(program.asm.join({"sum_pair": text}))
    obj = tmp / f"{name}.o"
    proc.run(["gcc", *program.asm_flags, "-c", "-x", "assembler", str(asm), "-o", str(obj)], check=True)
    return obj


def test_a_local_scanf_wrote_is_the_function_s_to_read_and_no_byte_more(readsum):
    # What scanf assigns through the pointers it is given is written in the emulator, the same
    # bytes on both sides, and counts as written in this call; the bytes next to it do not,
    # and neither does a conversion scanf did not assign: on a failed or short scanf the slot
    # keeps what an earlier call left. clang's crc32 `main` reads n right after scanf, before
    # it checks the count: on the real CPU that read takes stale stack whenever the input
    # ends, and a candidate could branch on it. It was accepted while every output counted as
    # assigned whatever scanf returned (a review found the hole); refused now.
    program, tester, tmp = readsum
    assert tester.check(program.obj, ["sum_pair"], untrusted=True).ok
    for name in ("reads_first", "reads_past"):
        verdict = tester.check(_readsum_candidate(program, tmp, name), ["sum_pair"], untrusted=True)
        assert not verdict.ok and verdict.mismatch.rule == "footprint", (name, verdict.level())
        assert "of its own frame that it did not write" in verdict.mismatch.render(), verdict.mismatch.render()
    # Reading both after the count is checked, as gcc does but in another order: honest.
    after = "\tcmpl\t$2, %eax\n\tjne\t.L3\n\tmovq\t8(%rsp), %rdx\n\tmovq\t(%rsp), %rax\n" \
            "\tleaq\t(%rax,%rax,2), %rax\n\taddq\t%rdx, %rax\n"
    unit = program.asm.unit("sum_pair").text
    verdict = tester.check(_readsum_candidate(program, tmp, "reads_after", unit.replace(GCC_READS, after)),
                           ["sum_pair"], untrusted=True)
    assert verdict.ok, verdict.mismatch.render()
    assert "sum_pair" in verdict.tested, verdict.level()


def test_scanf_writing_elsewhere_than_gcc_s_is_refused(readsum):
    # Where scanf writes is compared (its format alone was): handed the caller's frame for b,
    # scanf would write over main's saved registers, which gcc's function never writes.
    program, tester, tmp = readsum
    unit = program.asm.unit("sum_pair").text
    text = unit.replace("\tleaq\t8(%rsp), %rdx\n", "\tleaq\t40(%rsp), %rdx\n").replace(
        "\taddq\t8(%rsp), %rax\n", "\taddq\t40(%rsp), %rax\n")
    assert text != unit, unit
    obj = _readsum_candidate(program, tmp, "caller", text)
    verdict = tester.check(obj, ["sum_pair"], untrusted=True)
    # (Where scanf assigns b, the store is refused; where it fails, the call itself differs.)
    assert not verdict.ok and (verdict.mismatch.rule == "footprint" and "in __isoc99_scanf's output" in
                               verdict.mismatch.render() or "external call 1: " in verdict.mismatch.render()), \
        verdict.mismatch.render()
    # Held to the differential test alone (as gcc's variants are), the call itself differs.
    verdict = tester.check(obj, ["sum_pair"], untrusted=False)
    assert not verdict.ok and "external call 1: " in verdict.mismatch.render(), verdict.mismatch.render()
    # Handed its own stack below the stack pointer (scanf's stack in the real program), scanf's
    # store would count as the candidate's own: the run ends as a fault.
    below = unit.replace("\tmovq\t%rsp, %rsi\n", "\tleaq\t-64(%rsp), %rsi\n").replace(
        "\tmovq\t(%rsp), %rax\n", "\tmovq\t-64(%rsp), %rax\n")
    assert below != unit, unit
    verdict = tester.check(_readsum_candidate(program, tmp, "below", below), ["sum_pair"], untrusted=True)
    assert not verdict.ok and "below the stack pointer or read-only" in verdict.mismatch.render(), \
        verdict.mismatch.render()


def test_the_path_after_a_successful_scanf_is_tested(readsum):
    # The stub returned 0 to 65535, never a count scanf can return: the path after a
    # successful scanf (2 of 2 read) ran on one call in 65,536, so a candidate wrong only there
    # passed the function-level test, and the value told the emulator from the CPU. scanf's
    # result is now the conversions assigned (all of them half the time) or EOF.
    program, tester, tmp = readsum
    unit = program.asm.unit("sum_pair").text
    wrong = unit.replace(GCC_READS, GCC_READS.replace("(%rax,%rax,2)", "(%rax,%rax,4)"))
    assert wrong != unit, unit
    verdict = tester.check(_readsum_candidate(program, tmp, "wrong_on_success", wrong), ["sum_pair"])
    assert not verdict.ok and verdict.mismatch.rule == "differs", verdict.level()


@pytest.fixture(scope="module")
def blocksum(tmp_path_factory):
    return _tester(tmp_path_factory.mktemp("blocksum"), fa.BLOCKSUM, fa.BLOCKSUM_TESTS, 60, 10)


def test_what_fread_reports_read_is_the_function_s_to_read_and_no_byte_more(blocksum):
    # fread's output was written for the comparison but never counted as the function's own:
    # gcc's own block_sum, reading the bytes fread read into its frame, was refused as a
    # candidate. fread's result is now the items it read (all of them half the time), those
    # bytes count as stored, the ones past them do not: a short read leaves what was there.
    program, tester, tmp = blocksum
    verdict = tester.check(program.obj, ["block_sum"], untrusted=True)
    assert verdict.ok, verdict.mismatch.render()
    assert "block_sum" in verdict.tested, verdict.level()
    unit = program.asm.unit("block_sum").text
    call = "\tcall\tfread@PLT\n"
    assert call in unit, unit
    # Reads the last byte of the buffer whatever fread read, into a register it then drops.
    past = unit.replace(call, call + "\tmovzbl\t31(%rsp), %r11d\n")
    asm = tmp / "past.s"
    asm.write_text(program.asm.join({"block_sum": past}))
    obj = tmp / "past.o"
    proc.run(["gcc", *program.asm_flags, "-c", "-x", "assembler", str(asm), "-o", str(obj)], check=True)
    verdict = tester.check(obj, ["block_sum"], untrusted=True)
    assert not verdict.ok and verdict.mismatch.rule == "footprint", verdict.level()
    assert "of its own frame that it did not write" in verdict.mismatch.render(), verdict.mismatch.render()


def test_the_bytes_a_scanf_format_stores_per_pointer():
    from sgcc.verify.function.emulate import scanf_outputs

    assert scanf_outputs(b"%ld %lu") == [(8, True), (8, True)]
    got = scanf_outputs(b"%d%*d %hhd %hd %5s %s %c %3c %lf %Lf %f %%d %[abc] %10[^x] %n %zu %p %Ld %lc %3ls "
                        b"%llf %zf %Lc")
    assert [n for n, _ in got] == [4, 1, 2, 6, 0, 1, 3, 8, 10, 4, 0, 11, 4, 8, 8, 8, 4, 16, 10, 8, 4]
    # Up to a width (a string, %3c at the input's end) is not stored whole: never counted as written.
    assert [fixed for _, fixed in got] == [True, True, True, False, False, True, False, True, True, True, False,
                                           False, True, True, True, True, True, False, True, True, True]
    # A format with a conversion this does not read: its pointers cannot be told apart.
    for fmt in (b"%1$d %2$ld", b"%ms %d", b"%'d %ld", b"%C %d", b"%d %"):
        assert scanf_outputs(fmt) is None, fmt


# -- the hook itself, on hand-made code (fast) ---------------------------------------------------

def _uc_with(code: bytes):
    import unicorn

    uc = unicorn.Uc(unicorn.UC_ARCH_X86, unicorn.UC_MODE_64)
    uc.mem_map(0x10000, 0x1000)
    uc.mem_write(0x10000, code + b"\xf4")
    uc.mem_map(0x100000, 0x10000)  # data
    uc.mem_map(0x7f0000, 0x10000)  # stack
    return uc


def _run(uc, fp, mode, allowed=None, rdi=0x100100):
    from unicorn import x86_const as x

    uc.reg_write(x.UC_X86_REG_RSP, 0x7f8000)
    uc.reg_write(x.UC_X86_REG_RDI, rdi)
    fp.start(mode, 0x7f8000, allowed, [], frame_low=0x7f0000)
    uc.emu_start(0x10000, 0x10000 + 0x40, count=64)
    return fp


def test_the_hook_records_bytes_and_holds_a_run_to_them():
    # movq (%rdi), %rax ; movl 12(%rdi), %ecx ; movb %al, 20(%rdi) ; hlt
    code = bytes.fromhex("488b07") + bytes.fromhex("8b4f0c") + bytes.fromhex("884714")
    uc = _uc_with(code)
    fp = Footprint(uc)
    _run(uc, fp, "record")
    spans = fp.spans()
    assert Spans.unpack(spans.touched) == [(0x100100, 0x100108), (0x10010C, 0x100110), (0x100114, 0x100115)]
    assert Spans.unpack(spans.written) == [(0x100114, 0x100115)]
    # The same code on the same state keeps to it; shifted by 4 bytes, it reads what was not read.
    assert _run(uc, fp, "check", spans).violation() is None
    v = _run(uc, fp, "check", spans, rdi=0x100104).violation()
    assert v is not None and v.kind == "read" and v.address == 0x100104 + 0 and v.size == 8


def test_the_hook_refuses_a_write_gcc_only_read_and_a_frame_read_not_written_first():
    # movq (%rdi), %rax ; movq %rax, (%rdi)   -- a write where gcc's run only read
    uc = _uc_with(bytes.fromhex("488b07") + bytes.fromhex("488907"))
    fp = Footprint(uc)
    read_only = Spans(Spans.pack([(0x100100, 0x100108)]), b"")
    v = _run(uc, fp, "check", read_only).violation()
    assert v is not None and v.kind == "write" and v.address == 0x100100
    # movq -0x100(%rsp), %rax   -- its frame below the stack pointer, never written in this call
    uc = _uc_with(bytes.fromhex("488b842400ffffff"))
    fp = Footprint(uc)
    v = _run(uc, fp, "check", Spans(b"", b"")).violation()
    assert v is not None and v.kind == "frame"
    # pushq $1 ; movq (%rsp), %rax   -- what it wrote itself it may read back
    uc = _uc_with(bytes.fromhex("6a01") + bytes.fromhex("488b0424"))
    fp = Footprint(uc)
    assert _run(uc, fp, "check", Spans(b"", b"")).violation() is None


def test_spans_pack_round_trip():
    ranges = [(1, 5), (2**63, 2**63 + 8)]
    assert Spans.unpack(Spans.pack(ranges)) == ranges
    assert struct.calcsize("<QQ") == 16


# -- issue 43: the C library called on the candidate's behalf ---------------------------------------

@pytest.fixture(scope="module")
def sortbits(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("footprint-sort")
    req = Request(source=fa.SORTBITS, flags=["-O3"], tests=fa.SORTBITS_TESTS, output=tmp / "out")
    program = build_baseline(req, tmp)
    with Sandbox(timeout=20) as sandbox:
        tests = sandbox.record(program.binary, load_tests(fa.SORTBITS_TESTS))
        capture = funcstate.capture(program, sandbox, tests, tmp / "capture", "gcc",
                                    [u.name for u in program.asm.units])
    declarations = proc.run(["gcc", "-E", "-P", str(fa.SORTBITS)], check=True).stdout.decode()
    tester = funcdiff.FunctionTester(capture, program.obj, program.source_text, states=200, seconds=20, seed=2,
                                     declarations=declarations)
    return program, tester, tmp, fa.libc_offsets(tmp)


def test_the_honest_candidate_that_calls_memcpy_and_qsort_as_gcc_does_passes(sortbits):
    program, tester, tmp, _ = sortbits
    verdict = tester.check(_candidate(program, tmp, "sort_honest"), ["count_bits"], untrusted=True)
    assert verdict.ok, verdict.mismatch.render()
    assert verdict.tested["count_bits"][0] > 10


@pytest.mark.parametrize("name, where", [("memcpy_len", "in memcpy("), ("memcpy_over_ra", "(the candidate's code)")])
def test_a_library_call_touching_what_gcc_s_call_does_not_is_refused(sortbits, name, where):
    program, tester, tmp, offsets = sortbits
    obj = _candidate(program, tmp, name, **offsets, PWNED_FILE='"/nonexistent/x"')
    verdict = tester.check(obj, ["count_bits"], untrusted=True)
    assert not verdict.ok and verdict.mismatch.rule == "footprint", verdict.level()
    assert where in verdict.mismatch.render(), verdict.mismatch.render()


@pytest.mark.parametrize("name", ["qsort_system", "qsort_computed"])
def test_a_comparator_computed_from_data_is_refused_before_it_runs(sortbits, name):
    from sgcc.verify.static import controlflow

    program, _tester, tmp, offsets = sortbits
    obj = _candidate(program, tmp, name, **offsets, PWNED_FILE='"/nonexistent/x"')
    verdict = controlflow.verdict(obj, program.obj, frozenset({"count_bits"}))
    assert not verdict.ok and verdict.reason.startswith("callback: "), verdict.reason
    assert "hands qsort a code pointer in %rcx" in verdict.reason


# -- issue 35: arguments that alias where no captured state does ------------------------------------

def test_a_candidate_wrong_only_when_the_arguments_alias_is_refused(tmp_path):
    req = Request(source=fa.SCALE, flags=["-O3"], tests=fa.SCALE_TESTS, output=tmp_path / "out")
    program = build_baseline(req, tmp_path)
    with Sandbox(timeout=20) as sandbox:
        tests = sandbox.record(program.binary, load_tests(fa.SCALE_TESTS))
        capture = funcstate.capture(program, sandbox, tests, tmp_path / "capture", "gcc", ["scale"])
    tester = funcdiff.FunctionTester(capture, program.obj, program.source_text, states=200, seconds=20, seed=3)
    assert tester.check(program.obj, ["scale"], untrusted=True).ok  # gcc's own checks for overlap
    verdict = tester.check(_candidate(program, tmp_path, "scale_backwards", "scale"), ["scale"], untrusted=True)
    assert not verdict.ok, verdict.level()
    assert "(the arguments alias)" in verdict.mismatch.mutation, verdict.mismatch.render()


def test_a_form_the_emulator_runs_unlike_the_cpu_leaves_an_untrusted_function_untested(stackbits, tmp_path,
                                                                                           monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    program, tester, tmp = stackbits
    text = fa.unit("honest", tmp / "src").replace("count_bits:\n", "count_bits:\n\txorps\t%xmm2, %xmm2\n"
                                                  "\taddps\t%xmm2, %xmm1\n", 1)
    asm = tmp / "addps.s"
    asm.write_text(program.asm.join({"count_bits": text}))
    obj = tmp / "addps.o"
    proc.run(["gcc", "-c", str(asm), "-o", str(obj)], check=True)
    verdict = tester.check(obj, ["count_bits"], untrusted=True)
    assert "count_bits" not in verdict.tested
    assert "the emulator runs `addps xmm, xmm` unlike this CPU" in verdict.untested["count_bits"], verdict.level()
    # gcc's own variants are not held to it (their code is gcc's)
    assert tester.check(obj, ["count_bits"], untrusted=False).tested
