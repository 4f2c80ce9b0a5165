"""The information-flow rule (sgcc.verify.static.infoflow): an untrusted candidate reads only what
gcc's same function reads, so it cannot tell the box from real use.

Each hostile candidate below replaces ``count_bits`` of the popcount example, the function
issue 24's attacks were offered for, and is assembled and checked as the engine does. Each
test first runs the *trusted* rules (today's control-flow proof, what main applied to every
candidate before this rule): the candidate passes them, which is the control showing the
test fails on the old code. Then the untrusted rules refuse it by the named rule.

The end-to-end tests offer the environment tell through ``sgcc optimize --generators
replay``, as the caller and (when root) as user nobody, and check that it is refused at the
control stage and that the shipped program is gcc's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.verify.static import controlflow

ROOT = Path(__file__).resolve().parent.parent
POPCOUNT = ROOT / "examples" / "programs" / "popcount"
HONEST = (POPCOUNT / "candidates" / "count_bits.s").read_text()

#: gcc's own loop, the tail every hostile candidate ends with (it counts right).
COUNT = """\ttestl\t%esi, %esi
\tjle\t.Lh6
\tmovslq\t%esi, %rsi
\txorl\t%edx, %edx
\tleaq\t(%rdi,%rsi,8), %rsi
.Lh5:
\tmovq\t(%rdi), %rax
\ttestq\t%rax, %rax
\tje\t.Lh3
.Lh4:
\tmovq\t%rax, %rcx
\tandl\t$1, %ecx
\taddq\t%rcx, %rdx
\tshrq\t%rax
\tjne\t.Lh4
.Lh3:
\taddq\t$8, %rdi
\tcmpq\t%rdi, %rsi
\tjne\t.Lh5
\tmovq\t%rdx, %rax
\tret
.Lh6:
\txorl\t%edx, %edx
\tmovq\t%rdx, %rax
\tret
"""

#: Walks up the stack from its frame into main's frame and beyond (argc, argv, envp lie up
#: there), summing what it finds: no call, no system call, nothing the text screen knows.
ENV_TELL = """\tleaq\t8(%rsp), %rcx
\tmovl\t$32, %edx
.Lt1:
\taddq\t(%rcx), %rax
\taddq\t$8, %rcx
\tsubl\t$1, %edx
\tjne\t.Lt1
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("flow")
    proc.run(["gcc", "-O3", "-S", str(POPCOUNT / "popcount.c"), "-o", str(d / "base.s")], check=True)
    proc.run(["gcc", "-c", str(d / "base.s"), "-o", str(d / "base.o")], check=True)
    return d


def _with_body(program: Path, body: str, name: str) -> Path:
    """gcc's assembly with count_bits' instructions replaced by ``body``."""
    text = (program / "base.s").read_text()
    pattern = re.compile(r"(^count_bits:\n)(.*?)(^\t\.size\tcount_bits, )", re.S | re.M)
    new = pattern.sub(lambda m: m.group(1) + body + m.group(3), text, count=1)
    src = program / f"{name}.s"
    src.write_text(new)
    obj = program / f"{name}.o"
    r = proc.run(["gcc", "-c", str(src), "-o", str(obj)], timeout=60)
    assert r.ok, r.stderr.decode()
    return obj


def _with_unit(program: Path, text: str, name: str) -> Path:
    """gcc's assembly with the unit count_bits replaced by ``text``, as the engine does."""
    from sgcc.asm.units import AsmFile

    src = program / f"{name}.s"
    src.write_text(AsmFile.parse((program / "base.s").read_text()).join({"count_bits": text}))
    obj = program / f"{name}.o"
    r = proc.run(["gcc", "-c", str(src), "-o", str(obj)], timeout=60)
    assert r.ok, r.stderr.decode()
    return obj


def _rules(program: Path, body: str, name: str) -> set[str]:
    """The rules the candidate breaks as untrusted, after checking the control: it passes
    the rules every candidate was held to before this one (trusted)."""
    obj = _with_body(program, body, name)
    assert controlflow.check(obj, program / "base.o") == [], "control: the trusted rules refuse it already"
    return {p.rule for p in controlflow.check(obj, program / "base.o", frozenset({"count_bits"}))}


def test_gcc_program_passes_its_own_rule(program):
    assert controlflow.check(program / "base.o", program / "base.o", frozenset({"count_bits"})) == []


def test_the_honest_example_candidates_pass(program):
    for path in [POPCOUNT / "candidates" / "count_bits.s", POPCOUNT / "candidates-native" / "count_bits.s"]:
        obj = _with_unit(program, path.read_text(), path.parent.name)
        assert controlflow.check(obj, program / "base.o", frozenset({"count_bits"})) == [], path


def test_environment_tell_walking_up_the_stack_is_refused(program):
    """Class 1: reads past its return address (main's frame, argv, envp) with no call."""
    rules = _rules(program, ENV_TELL + COUNT, "env_tell")
    assert "stack-arguments" in rules  # gcc's count_bits reads no stack argument
    assert "unbounded" in rules  # and the walking pointer's offset is lost in the loop


def test_slow_outside_tell_reading_dead_frames_is_refused(program):
    """Class 2: takes a slow path unless what an earlier call (scanf, the loader) left below
    its frame matches the box: reads its frame where it never wrote."""
    body = ("\tmovq\t-2048(%rsp), %rcx\n\tcmpq\t$4096, %rcx\n\tjne\t.Lslow\n" + COUNT
            + ".Lslow:\n\tmovl\t$100, %ecx\n.Lspin:\n\tsubl\t$1, %ecx\n\tjne\t.Lspin\n\tjmp\t.Lh6\n")
    # The slow path ends in gcc's loop's zero-length exit; what matters is the read.
    assert _rules(program, body, "slow_tell") == {"uninitialised"}


def test_stack_slot_desynchronisation_into_libc_is_refused(program):
    """Class 3: a slot written through (%rsp,%rcx), which the frame model did not follow,
    then %rsp loaded from it: the model's stale slot said the stack was back at its entry."""
    body = ("\tmovq\t%rsp, %rax\n\tpushq\t%rax\n\txorl\t%ecx, %ecx\n\tmovq\t%rdi, (%rsp,%rcx)\n"
            "\tmovq\t(%rsp), %rsp\n\tret\n")
    rules = _rules(program, body, "desync")
    # %rcx is proven 0, so the indexed store itself is in its frame; loading %rsp is not.
    assert "stack-pointer" in rules


def test_leave_with_a_forged_frame_pointer_is_refused(program):
    """Class 4: overwrites its saved %rbp, so `leave` hands the caller a forged frame pointer
    (the stack height is right, so the stack rules alone let it return)."""
    body = "\tpushq\t%rbp\n\tmovq\t%rsp, %rbp\n\tmovq\t%rdi, 0(%rbp)\n" + COUNT.replace("\tret\n", "\tleave\n\tret\n")
    assert "callee-saved" in _rules(program, body, "forged_rbp")


def test_leave_after_a_store_through_an_index_is_refused(program):
    body = ("\tpushq\t%rbp\n\tmovq\t%rsp, %rbp\n\txorl\t%ecx, %ecx\n\tmovq\t%rdi, (%rbp,%rcx)\n"
            + COUNT.replace("\tret\n", "\tleave\n\tret\n"))
    # %rcx is proven 0: the store is followed as one that may hit the saved %rbp, so `leave`
    # no longer restores the caller's value.
    assert "callee-saved" in _rules(program, body, "forged_rbp_index")


def test_index_register_stack_reads_are_refused(program):
    """Class 5: reads above its frame through an index register the model cannot bound."""
    body = "\tmovl\t$40, %ecx\n\tmovq\t8(%rsp,%rcx,8), %rax\n\ttestq\t%rax, %rax\n\tje\t.Lh6\n" + COUNT
    assert _rules(program, body, "index_read") == {"stack-index"}


def test_callee_saved_register_as_a_pointer_is_refused(program):
    """Class 6: main keeps its own pointers in %rbx/%rbp/%r12...; dereferencing one reads
    main's state (argv, its buffers), whatever count_bits was passed."""
    body = "\tmovq\t8(%rbx), %rax\n\ttestq\t%rax, %rax\n\tje\t.Lh6\n" + COUNT
    assert _rules(program, body, "cs_pointer") == {"callee-saved"}


def test_callee_saved_register_as_data_is_refused(program):
    body = "\tmovq\t%r12, %rcx\n\tshrq\t$12, %rcx\n\tjne\t.Lh6\n" + COUNT
    assert _rules(program, body, "cs_data") == {"callee-saved", "flags"}  # shr sets the flags jne reads


def test_a_register_the_caller_did_not_pass_is_refused(program):
    """What main left in %r8 is no argument of count_bits (gcc's reads %rdi and %esi only)."""
    body = "\ttestq\t%r8, %r8\n\tje\t.Lh6\n" + COUNT
    assert _rules(program, body, "entry_register") == {"entry-register", "flags"}  # and the flags test sets


def test_a_stack_address_used_as_data_is_refused(program):
    """The stack's address depends on the environment's size: its bits are a tell."""
    body = "\tmovq\t%rsp, %rcx\n\tandl\t$4095, %ecx\n\tjne\t.Lh6\n" + COUNT
    assert _rules(program, body, "stack_bits") == {"stack-address", "flags"}  # and the flags and sets


def test_a_stack_address_stored_to_memory_is_refused(program):
    body = "\tmovq\t%rsp, (%rdi)\n" + COUNT
    assert _rules(program, body, "stack_store") == {"stack-address"}


def test_a_call_gcc_s_function_does_not_make_is_refused(program):
    """Per function: main calls malloc, count_bits does not."""
    body = "\tsubq\t$8, %rsp\n\tmovl\t$8, %edi\n\tcall\tmalloc@PLT\n\taddq\t$8, %rsp\n\tret\n"
    assert "call" in _rules(program, body, "call_malloc")


@pytest.mark.parametrize("name,body", [
    ("pop", "\tpopq\t%rcx\n\tpopq\t%rdx\n\tsubq\t$16, %rsp\n\tpushq\t%rcx\n\taddq\t$8, %rsp\n"),
    ("leave", "\tpushq\t%rbp\n\tleaq\t24(%rsp), %rbp\n\tleave\n\tmovq\t%rbp, %rdx\n"
              "\tsubq\t$32, %rsp\n\tpopq\t%rbp\n"),
])
def test_reading_the_caller_s_stack_by_pop_or_leave_is_refused(program, name, body):
    """Variations of class 1 without a memory operand: pop and leave read above the return
    address too."""
    assert "stack-arguments" in _rules(program, body + COUNT, f"above_{name}")


def test_the_low_half_of_a_stack_address_is_refused(program):
    body = "\tleal\t8(%rsp), %ecx\n\ttestl\t$4096, %ecx\n\tjne\t.Lh6\n" + COUNT
    assert _rules(program, body, "lea32") == {"stack-address"}


def test_a_slot_holding_different_stack_addresses_on_two_paths_is_not_clean(program):
    """Two paths store different stack addresses in one slot: the model drops the slot, and
    what is read back is still not clean data to dereference."""
    body = ("\tsubq\t$8, %rsp\n\ttestl\t%esi, %esi\n\tje\t.La\n\tleaq\t8(%rsp), %rax\n\tmovq\t%rax, (%rsp)\n"
            "\tjmp\t.Lb\n.La:\n\tleaq\t16(%rsp), %rax\n\tmovq\t%rax, (%rsp)\n.Lb:\n\tmovq\t(%rsp), %rcx\n"
            "\tmovq\t64(%rcx), %rax\n\taddq\t$8, %rsp\n" + COUNT)
    assert "unbounded" in _rules(program, body, "merged_slot")


def test_a_unit_function_gcc_s_function_does_not_call_is_refused(program):
    """Per function, inside the unit too: count_bits does not call main."""
    body = "\tsubq\t$8, %rsp\n\tcall\tmain\n\taddq\t$8, %rsp\n" + COUNT
    assert "call" in _rules(program, body, "call_main")


def test_a_stack_address_returned_by_memset_is_not_clean(args8):
    """memset returns its first argument: given a stack buffer, a stack address, whose bits
    are a tell. (sum8's gcc passes no stack address to a call; main's does, so main is the
    function offered here.)"""
    text = (args8 / "base.s").read_text()
    body = ("\tsubq\t$40, %rsp\n\tleaq\t8(%rsp), %rdi\n\tmovl\t$16, %edx\n\txorl\t%esi, %esi\n"
            "\tcall\tmemset@PLT\n\tandl\t$4095, %eax\n\taddq\t$40, %rsp\n\tret\n")
    pattern = re.compile(r"(^main:\n)(.*?)(^\t\.size\tmain, )", re.S | re.M)
    (args8 / "ms.s").write_text(pattern.sub(lambda m: m.group(1) + body + m.group(3), text, count=1))
    proc.run(["gcc", "-c", "ms.s", "-o", "ms.o"], cwd=args8, check=True)
    assert controlflow.check(args8 / "ms.o", args8 / "base.o") == []  # control
    rules = {p.rule for p in controlflow.check(args8 / "ms.o", args8 / "base.o", frozenset({"main"}))}
    assert "unbounded" in rules or "stack-address" in rules, rules


def test_a_frame_slot_written_then_read_passes(program):
    """Honest spills: its own frame, written before it is read, restored registers."""
    body = ("\tpushq\t%rbx\n\tsubq\t$16, %rsp\n\tmovq\t%rdi, 8(%rsp)\n\tmovq\t8(%rsp), %rbx\n\tmovq\t%rbx, %rdi\n"
            "\taddq\t$16, %rsp\n\tpopq\t%rbx\n" + COUNT)
    assert _rules(program, body, "spill") == set()


# --------------------------------------------------------------------------------- end to end

def _optimize(tmp: Path, cands: Path, as_nobody: bool) -> tuple[subprocess.CompletedProcess, dict, Path]:
    out, report = tmp / "prog", tmp / "r.json"
    sgcc = shutil.which("sgcc", path=str(Path(os.sys.executable).parent)) or "sgcc"
    argv = [sgcc, "optimize", str(tmp / "popcount.c"), "-O3", "--tests", str(tmp / "tests"), "-o", str(out),
            "--candidates", str(cands), "--generators", "replay", "--timing-rounds", "5", "--report", str(report)]
    # Everything it writes under ``tmp``, which user nobody can write too.
    env = dict(os.environ, HOME=str(tmp), XDG_CACHE_HOME=str(tmp / "cache"), TMPDIR=str(tmp),
               SGCC_CACHE_DIR=str(tmp / "cache"), SGCC_TIMING_LOCK=str(tmp / "timing.lock"),
               SGCC_CONFIG=str(tmp / "no-config.toml"))
    if as_nobody:
        argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", *argv]
    r = subprocess.run(argv, capture_output=True, timeout=600, env=env, cwd=tmp)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    return r, json.loads(report.read_text()), out


@pytest.mark.parametrize("who", ["caller", "nobody"])
def test_environment_tell_offered_by_replay_is_refused_and_gcc_s_program_ships(tmp_path_factory, who):
    if who == "nobody":
        if os.geteuid() != 0 or shutil.which("setpriv") is None:
            pytest.skip("needs root (and setpriv) to run as user nobody")
        r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                            os.sys.executable, "-c", "import sgcc"], capture_output=True)
        if r.returncode != 0:
            pytest.skip("user nobody cannot run this checkout's Python")
    tmp = Path("/tmp") / f"sgcc-flow-e2e-{who}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(mode=0o777)
    os.chmod(tmp, 0o777)
    try:
        shutil.copy(POPCOUNT / "popcount.c", tmp)
        shutil.copytree(POPCOUNT / "tests", tmp / "tests")
        cands = tmp / "cands" / "count_bits"
        cands.mkdir(parents=True)
        # The honest SWAR candidate, with the environment tell in front: correct everywhere,
        # and 2.8x faster, so the old rules timed and shipped it.
        tell = HONEST.replace("count_bits:\n\t.cfi_startproc\n", "count_bits:\n\t.cfi_startproc\n" + ENV_TELL)
        assert tell != HONEST
        (cands / "tell.s").write_text(tell)
        for p in tmp.rglob("*"):
            os.chmod(p, 0o777 if p.is_dir() else 0o666)
        _r, report, out = _optimize(tmp, tmp / "cands", who == "nobody")
        [cand] = report["candidates"]
        assert cand["stage"] == "control", cand
        assert re.match(r"(stack-arguments|unbounded): ", cand["reason"]), cand["reason"]
        assert report["honest"]["speedup"] == 1.0
        # The shipped program is gcc's, and behaves as gcc's in an ordinary environment.
        gcc_bin = tmp / "gcc_prog"
        proc.run(["gcc", "-O3", str(tmp / "popcount.c"), "-o", str(gcc_bin)], check=True)
        assert out.read_bytes() == gcc_bin.read_bytes()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp), "LANG": "C.UTF-8",
               "SOMETHING_ELSE": "x" * 1000}
        for t in sorted((tmp / "tests").glob("*.in")):
            got = subprocess.run([str(out)], input=t.read_bytes(), capture_output=True, env=env, timeout=60)
            want = subprocess.run([str(gcc_bin)], input=t.read_bytes(), capture_output=True, env=env, timeout=60)
            assert (got.returncode, got.stdout) == (want.returncode, want.stdout), t.name
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


ARGS8 = r"""#include <stdio.h>
__attribute__((noinline)) long sum8(long a, long b, long c, long d, long e, long f, long g, long h)
{ return a + b + c + d + e + f + g + h; }
int main(void) { long x; if (scanf("%ld", &x) != 1) return 1;
  printf("%ld\n", sum8(x, 1, 2, 3, 4, 5, 6, 7)); return 0; }
"""


@pytest.fixture(scope="module")
def args8(tmp_path_factory):
    d = tmp_path_factory.mktemp("args8")
    (d / "p.c").write_text(ARGS8)
    proc.run(["gcc", "-O2", "-fstack-protector-all", "-S", "p.c", "-o", "base.s"], cwd=d, check=True)
    proc.run(["gcc", "-c", "base.s", "-o", "base.o"], cwd=d, check=True)
    return d


def _sum8(d: Path, body: str, name: str) -> set[str]:
    text = (d / "base.s").read_text()
    pattern = re.compile(r"(^sum8:\n)(.*?)(^\t\.size\tsum8, )", re.S | re.M)
    (d / f"{name}.s").write_text(pattern.sub(lambda m: m.group(1) + body + m.group(3), text, count=1))
    proc.run(["gcc", "-c", f"{name}.s", "-o", f"{name}.o"], cwd=d, check=True)
    assert controlflow.check(d / f"{name}.o", d / "base.o") == []  # control: the trusted rules pass it
    return {p.rule for p in controlflow.check(d / f"{name}.o", d / "base.o", frozenset({"sum8"}))}


def test_stack_arguments_within_gcc_s_extent_pass_and_beyond_are_refused(args8):
    """gcc's sum8 reads its 7th and 8th arguments at 8(%rsp) and 16(%rsp): so may a candidate;
    24(%rsp) is the caller's frame."""
    honest = ("\taddq\t%rsi, %rdi\n\taddq\t%rcx, %rdx\n\tleaq\t(%rdi,%rdx), %rax\n\taddq\t%r8, %rax\n"
              "\taddq\t%r9, %rax\n\taddq\t8(%rsp), %rax\n\taddq\t16(%rsp), %rax\n\tret\n")
    assert _sum8(args8, honest, "in_extent") == set()
    beyond = honest.replace("\tret\n", "\taddq\t24(%rsp), %rax\n\tret\n")
    assert _sum8(args8, beyond, "beyond_extent") == {"stack-arguments"}


def test_thread_local_reads_only_where_gcc_s_function_reads(args8):
    """The stack protector's %fs:40 is gcc's; %fs:0 (the thread's own pointer) is not."""
    body = "\tmovq\t%fs:0, %rax\n\tret\n"
    assert "segment" in _sum8(args8, body, "fs0")


# ----------------------------------------------------------- register indexes on the stack

#: A 1 KiB frame (256 ints) it zeroes first, and the way out of it into gcc's loop.
FRAME = ("\tsubq\t$1024, %rsp\n\tmovq\t%rdi, %r8\n\tmovq\t%rsp, %rdi\n\tmovl\t$128, %ecx\n\txorl\t%eax, %eax\n"
         "\trep stosq\n\tmovq\t%r8, %rdi\n")
OUT = ".Lout:\n\taddq\t$1024, %rsp\n" + COUNT


def _indexed(program: Path, bound: str, name: str, access: str = "\taddl\t$1, (%rsp,%rax,4)\n") -> set[str]:
    return _rules(program, FRAME + bound + access + OUT, name)


@pytest.mark.parametrize("name, bound", [
    ("zero_extended", "\tmovzbl\t(%rdi), %eax\n"),
    ("masked", "\tmovl\t(%rdi), %eax\n\tandl\t$255, %eax\n"),
    ("unsigned_check", "\tmovq\t(%rdi), %rax\n\tcmpq\t$255, %rax\n\tja\t.Lout\n"),
    ("unsigned_check_32", "\tmovl\t(%rdi), %eax\n\tcmpl\t$256, %eax\n\tjnb\t.Lout\n"),
    ("signed_check_with_sign", "\tmovq\t(%rdi), %rax\n\ttestq\t%rax, %rax\n\tjs\t.Lout\n"
                               "\tcmpq\t$255, %rax\n\tjg\t.Lout\n"),
    ("counted_loop", "\txorl\t%eax, %eax\n.Lc:\n\tmovl\t(%rsp,%rax,4), %ecx\n\tmovl\t%ecx, (%rdi)\n"
                     "\taddq\t$1, %rax\n\tcmpq\t$256, %rax\n\tjne\t.Lc\n\txorl\t%eax, %eax\n"),
    ("counted_loop_100", "\txorl\t%eax, %eax\n.Lc:\n\taddl\t$1, 8(%rsp,%rax,4)\n"
                         "\taddq\t$1, %rax\n\tcmpq\t$100, %rax\n\tjne\t.Lc\n\txorl\t%eax, %eax\n"),
])
def test_a_proven_index_into_its_written_frame_passes(program, name, bound):
    """Honest shapes (histogram's counts, a table walked by a counted loop): every index the
    model can bound lands in the 1 KiB it zeroed."""
    assert _indexed(program, bound, name) == set()


@pytest.mark.parametrize("name, bound", [
    # (a) nothing bounds it
    ("unbounded_index", "\tmovq\t(%rdi), %rax\n"),
    # (c) checked on one path only: the other reaches the access unbounded
    ("one_path_checked", "\tmovq\t(%rdi), %rax\n\ttestl\t%esi, %esi\n\tjle\t.Lj\n\tcmpq\t$255, %rax\n"
                         "\tja\t.Lout\n.Lj:\n"),
    # (d) checked, then written again before the access
    ("rewritten_after_check", "\tmovq\t(%rdi), %rax\n\tcmpq\t$255, %rax\n\tja\t.Lout\n\tmovq\t8(%rdi), %rax\n"),
    # (e) a signed check: a negative index passes it and reaches below (or, wrapped, above)
    ("signed_check_only", "\tmovq\t(%rdi), %rax\n\tcmpq\t$255, %rax\n\tjg\t.Lout\n"),
    # a 32-bit check says nothing of the upper half it did not clear
    ("low_half_checked", "\tmovq\t(%rdi), %rax\n\tcmpl\t$255, %eax\n\tja\t.Lout\n"),
    # a check whose flags another instruction replaced before the branch
    ("flags_replaced", "\tmovq\t(%rdi), %rax\n\tcmpq\t$255, %rax\n\taddl\t$1, %esi\n\tja\t.Lout\n"),
    # the register written between its compare and the branch (mov writes no flags)
    ("written_before_branch", "\tmovq\t(%rdi), %rax\n\tcmpq\t$255, %rax\n\tmovq\t8(%rdi), %rax\n\tja\t.Lout\n"),
    # bsf of zero leaves the whole register as it was: its 32-bit write proves no clear upper half
    ("bsf_of_zero", "\tmovq\t(%rdi), %rax\n\tbsfl\t8(%rdi), %eax\n\tcmpl\t$255, %eax\n\tja\t.Lout\n"),
    # a counted loop one entry past the array
    ("counted_loop_past", "\txorl\t%eax, %eax\n.Lc:\n\taddl\t$1, 4(%rsp,%rax,4)\n"
                          "\taddq\t$1, %rax\n\tcmpq\t$256, %rax\n\tjne\t.Lc\n\txorl\t%eax, %eax\n"),
    # an upper bound past the array (256 entries + 1)
    ("one_past", "\tmovq\t(%rdi), %rax\n\tcmpq\t$256, %rax\n\tja\t.Lout\n"),
])
def test_an_index_the_model_cannot_bound_inside_its_frame_is_refused(program, name, bound):
    assert "stack-index" in _indexed(program, bound, name), name


def test_a_byte_index_into_a_small_array_is_refused(program):
    """(b) 256 possible indexes into 16 ints: the access reaches its return address and its
    caller's frame above."""
    body = ("\tsubq\t$64, %rsp\n\tmovq\t%rdi, %r8\n\tmovq\t%rsp, %rdi\n\tmovl\t$8, %ecx\n\txorl\t%eax, %eax\n"
            "\trep stosq\n\tmovq\t%r8, %rdi\n\tmovzbl\t(%rdi), %eax\n\tmovl\t(%rsp,%rax,4), %edx\n"
            "\tmovl\t%edx, (%rdi)\n\taddq\t$64, %rsp\n" + COUNT)
    assert "stack-index" in _rules(program, body, "small_array")


def test_a_proven_index_reads_only_what_it_wrote(program):
    """In its frame, but where it never wrote: what an earlier call left there."""
    body = "\tsubq\t$1024, %rsp\n\tmovzbl\t(%rdi), %eax\n\tmovl\t(%rsp,%rax,4), %edx\n\tmovl\t%edx, (%rdi)\n" + OUT
    assert _rules(program, body, "indexed_uninitialised") == {"uninitialised"}


def test_a_store_through_a_proven_index_over_a_saved_register_is_followed(program):
    """Inside its frame, but over the slot where it pushed the caller's %rbx: the model may no
    longer take `pop %rbx` to restore the caller's value."""
    body = ("\tpushq\t%rbx\n\tsubq\t$1016, %rsp\n\tmovzbl\t(%rdi), %eax\n\tmovb\t%al, (%rsp,%rax,4)\n"
            "\taddq\t$1016, %rsp\n\tpopq\t%rbx\n" + COUNT)
    assert "callee-saved" in _rules(program, body, "indexed_over_rbx")


def _rules_untrusted(program: Path, body: str, name: str) -> set[str]:
    obj = _with_body(program, body, name)
    return {p.rule for p in controlflow.check(obj, program / "base.o", frozenset({"count_bits"}))}


def test_an_int_spilled_from_ebp_and_reloaded_passes(program):
    """gcc -O3 keeps ints in %ebp and spills them to its frame (examples/dataset/triangles):
    a 32-bit load cannot restore a frame pointer, and the slot's content is checked as any
    read of the frame is."""
    body = ("\tpushq\t%rbp\n\tmovl\t%esi, %ebp\n\tmovl\t%ebp, -12(%rsp)\n\tmovl\t-12(%rsp), %ebp\n"
            "\tmovl\t%ebp, %esi\n\tpopq\t%rbp\n" + COUNT)
    assert _rules_untrusted(program, body, "ebp_spill") == set()


def test_a_clean_spill_reloaded_into_rbp_passes(program):
    """clang keeps values in %rbp as in any register and reloads its spills whole: a slot it
    wrote on every path with clean data only holds clean data, no frame pointer."""
    body = "\tpushq\t%rbp\n\tmovq\t%rdi, -16(%rsp)\n\tmovq\t-16(%rsp), %rbp\n\tmovq\t%rbp, %rdi\n\tpopq\t%rbp\n"
    assert _rules_untrusted(program, body + COUNT, "rbp64_clean") == set()


@pytest.mark.parametrize("name, body", [
    # all 64 bits of %rbp from a slot that holds the caller's %rbp, or a stack address
    ("rbp64", "\tpushq\t%rbp\n\tmovq\t(%rsp), %rbp\n\tmovq\t%rbp, %rdi\n\tpopq\t%rbp\n"),
    ("rbp64_stack", "\tpushq\t%rbp\n\tleaq\t8(%rsp), %rax\n\tmovq\t%rax, -16(%rsp)\n\tmovq\t-16(%rsp), %rbp\n"
                    "\tmovq\t%rbp, %rdi\n\tpopq\t%rbp\n"),
    # the low half of the slot that holds the caller's %rbp, into %ebp: a caller's register read in part
    ("rbp_low_half", "\tpushq\t%rbp\n\tmovl\t(%rsp), %ebp\n\taddl\t%ebp, %esi\n\tpopq\t%rbp\n"),
    # a slot never written, into %ebp
    ("ebp_unwritten", "\tpushq\t%rbp\n\tmovl\t-40(%rsp), %ebp\n\taddl\t%ebp, %esi\n\tpopq\t%rbp\n"),
])
def test_frame_pointer_loads_the_model_cannot_follow_are_refused(program, name, body):
    assert _rules_untrusted(program, body + COUNT, name) & {"stack-pointer", "stack-slot", "uninitialised",
                                                             "callee-saved"}
