"""Red team of the information-flow rule (issue 24): hostile variations the first tests did
not cover, each refused by a named rule.

Every candidate replaces ``count_bits`` of the popcount example (the helpers of
``test_infoflow``) and first passes the *trusted* rules (the control the test fails on the
old code: every one of these shipped before the rule it names below was added, unless the
docstring says otherwise). The tell is always a branch to gcc's zero-count exit, so the
candidate is right in the box and wrong (or slow) wherever the tell differs.
"""

from __future__ import annotations

import pytest

from tests.test_infoflow import COUNT, _rules, program  # noqa: F401 - the fixture

#: Branch to the wrong answer when %rcx, the tell, is not zero.
TELL = "\ttestq\t%rcx, %rcx\n\tjne\t.Lh6\n"

#: name -> (body, the rule that refuses it). Each shipped before this file's fixes.
SHIPPED_BEFORE = {
    # The flags of a constant step of %rsp (gcc's own `sub $24,%rsp`) hold bits of the stack
    # address: PF is the parity of its low byte, which the environment's size moves.
    "parity_of_a_stack_step": ("\tsubq\t$8, %rsp\n\taddq\t$8, %rsp\n\tjp\t.Lh6\n" + COUNT, "flags"),
    "pushf_after_a_stack_step": ("\tsubq\t$24, %rsp\n\tpushfq\n\tpopq\t%rcx\n\taddq\t$24, %rsp\n"
                                 "\tandl\t$4, %ecx\n" + TELL + COUNT, "flags"),
    "sbb_carry_of_a_stack_step": ("\tsubq\t$16, %rsp\n\tsbbl\t%ecx, %ecx\n\taddq\t$16, %rsp\n" + TELL + COUNT,
                                  "flags"),
    # The flags on entry are what the caller's last compare left: its state, not an argument.
    "entry_flags_branch": ("\tjp\t.Lh6\n" + COUNT, "flags"),
    "entry_flags_pushf": ("\tpushfq\n\tpopq\t%rcx\n\tandl\t$4, %ecx\n" + TELL + COUNT, "flags"),
    "entry_carry_adc": ("\tmovl\t$0, %ecx\n\tadcl\t$0, %ecx\n" + TELL + COUNT, "flags"),
    # Flags the manual leaves undefined differ between a CPU and the emulator the
    # function-level test runs in: a tell of the emulator.
    "undefined_flags_after_imul": ("\tmovl\t$3, %ecx\n\timull\t%ecx, %ecx\n\tjp\t.Lh6\n" + COUNT, "flags"),
    # Vector registers on entry: what the caller or the C library left there.
    "vector_register_on_entry": ("\tmovq\t%xmm5, %rcx\n" + TELL + COUNT, "entry-register"),
    # Machine state no operand carries: the CPU's features, the shadow stack's address.
    "xgetbv": ("\txorl\t%ecx, %ecx\n\txgetbv\n\tmovl\t%eax, %ecx\n\tandl\t$4, %ecx\n" + TELL + COUNT,
               "instruction"),
    "cpuid_with_a_clean_leaf": ("\tpushq\t%rbx\n\txorl\t%eax, %eax\n\txorl\t%ecx, %ecx\n\tcpuid\n\tpopq\t%rbx\n"
                                "\tcmpl\t$1818588270, %ecx\n\tje\t.Lh6\n" + COUNT, "instruction"),
    "rdsspq": ("\txorl\t%ecx, %ecx\n\trdsspq\t%rcx\n" + TELL + COUNT, "instruction"),
    # xlatb reads (%rbx,%al) with no operand the decoder shows: the caller's %rbx as a pointer.
    "xlatb_through_the_callers_rbx": ("\txorl\t%eax, %eax\n\txlatb\n\tmovzbl\t%al, %ecx\n" + TELL + COUNT,
                                      "instruction"),
    # enter moves %rsp and %rbp with no operand the model follows.
    "enter": ("\tpushq\t%rbp\n\tmovq\t%rsp, %rax\n\tenter\t$0, $0\n\tmovq\t%rax, %rsp\n\tpopq\t%rbp\n" + COUNT, "instruction"),
    # pop into memory carries a slot's stack address (or the caller's %rbx) out of the frame,
    # where it reads back as clean data.
    "stack_address_popped_to_memory": ("\tpushq\t%rsp\n\tpopq\t-8(%rdi)\n\tmovq\t-8(%rdi), %rcx\n"
                                       "\tandl\t$4080, %ecx\n" + TELL + COUNT, "stack-address"),
    "callers_rbx_popped_to_memory": ("\tpushq\t%rbx\n\tpopq\t-8(%rdi)\n\tmovq\t-8(%rdi), %rcx\n"
                                     "\tmovq\t(%rcx), %rcx\n" + TELL + COUNT, "callee-saved"),
    # A 16-bit pop takes the low half of a pushed stack address.
    "low_bits_of_a_stack_address_by_popw": ("\txorl\t%ecx, %ecx\n\tpushq\t%rsp\n\tpopw\t%cx\n\taddq\t$6, %rsp\n"
                                            + TELL + COUNT, "stack-slot"),
    # Instructions that may leave their destination as it was, which the decoder lists as
    # written only: a false cmov, bsf/bsr of zero, a failed cmpxchg keep a stack address (or
    # what the caller left) under a register the model took for freshly written.
    "false_cmov_keeps_a_stack_address": ("\tleaq\t8(%rsp), %rcx\n\txorl\t%eax, %eax\n\tcmovne\t%rdi, %rcx\n"
                                         "\tandl\t$4080, %ecx\n" + TELL + COUNT, "stack-address"),
    "false_cmov32_keeps_the_low_half": ("\tleaq\t8(%rsp), %rcx\n\txorl\t%eax, %eax\n\tcmovnel\t%edi, %ecx\n"
                                        "\tandl\t$4080, %ecx\n" + TELL + COUNT, "stack-address"),
    "false_cmov_keeps_the_callers_rcx": ("\txorl\t%eax, %eax\n\tcmovne\t%rdi, %rcx\n" + TELL + COUNT,
                                         "entry-register"),
    "bsf_of_zero_keeps_a_stack_address": ("\tleaq\t8(%rsp), %rcx\n\txorl\t%eax, %eax\n\tbsfq\t%rax, %rcx\n"
                                          "\tandl\t$4080, %ecx\n" + TELL + COUNT, "stack-address"),
    "bsr_of_zero_keeps_the_callers_r8": ("\txorl\t%eax, %eax\n\tbsrq\t%rax, %r8\n\tmovq\t%r8, %rcx\n" + TELL + COUNT,
                                         "entry-register"),
    "failed_cmpxchg_keeps_a_stack_address": ("\tleaq\t8(%rsp), %rcx\n\tmovl\t$1, %eax\n\txorl\t%edx, %edx\n"
                                             "\tcmpxchgq\t%rdx, %rcx\n\tandl\t$4080, %ecx\n" + TELL + COUNT,
                                             "stack-address"),
    # pushf after a clean compare: the status flags are clean, but IF (bit 9) and the other
    # system flags are the machine's (an emulator's differ): a tell of the function-level test.
    "pushf_of_the_system_flags": ("\tcmpl\t$0, %edi\n\tpushfq\n\tpopq\t%rcx\n\tandl\t$512, %ecx\n" + TELL + COUNT,
                                  "instruction"),
    # clzero zeroes the 64-byte line holding %rax, which no memory operand shows: from a stack
    # address, up to 63 bytes of the caller's frame, as the stack's alignment decides.
    "clzero_through_a_stack_address": ("\tleaq\t-64(%rsp), %rax\n\tclzero\n" + COUNT, "instruction"),
    # A shift by zero (%cl = 0, or $32 on 32 bits) leaves the flags as they were: the caller's.
    "shift_by_cl_zero_keeps_the_entry_flags": ("\tmovl\t$0, %ecx\n\tmovl\t$1, %eax\n\tshll\t%cl, %eax\n\tjp\t.Lh6\n"
                                               + COUNT, "flags"),
    "shift_by_32_keeps_the_entry_flags": ("\tmovl\t$1, %eax\n\tshll\t$32, %eax\n\tjp\t.Lh6\n" + COUNT, "flags"),
}

#: Tried and already refused on the old code (kept so a regression shows): name -> (body, rule).
REFUSED_BEFORE = {
    "lea_then_and": ("\tleaq\t8(%rsp), %rcx\n\tandl\t$4080, %ecx\n" + TELL + COUNT, "stack-address"),
    "lea_then_or_shr": ("\tleaq\t8(%rsp), %rcx\n\torq\t$1, %rcx\n\tshrq\t$40, %rcx\n" + TELL + COUNT,
                        "stack-address"),
    "lea_then_shl": ("\tleaq\t8(%rsp), %rcx\n\tshlq\t$52, %rcx\n" + TELL + COUNT, "stack-address"),
    "difference_of_two_stack_addresses": ("\tleaq\t8(%rsp), %rcx\n\tleaq\t-8(%rsp), %rax\n\tsubq\t%rax, %rcx\n"
                                          "\tsubq\t$16, %rcx\n" + TELL + COUNT, "stack-address"),
    "cmov_selecting_a_stack_address": ("\txorl\t%ecx, %ecx\n\tleaq\t8(%rsp), %rax\n\ttestl\t%esi, %esi\n"
                                       "\tcmovne\t%rax, %rcx\n\tandl\t$4080, %ecx\n" + TELL + COUNT,
                                       "stack-address"),
    "push_pop_of_a_caller_saved_register": ("\tpushq\t%r8\n\tpopq\t%rcx\n" + TELL + COUNT, "entry-register"),
    "push_pop_of_the_callers_rbx": ("\tpushq\t%rbx\n\tpopq\t%rcx\n" + TELL + COUNT, "callee-saved"),
    "stack_address_through_xmm": ("\tmovq\t%rsp, %xmm0\n\tmovq\t%xmm0, %rcx\n\tandl\t$4080, %ecx\n" + TELL + COUNT,
                                  "stack-address"),
    "bt_on_the_stack_pointer": ("\tbtq\t$4, %rsp\n\tjc\t.Lh6\n" + COUNT, "stack-address"),
    "xadd_of_a_stack_address": ("\tleaq\t8(%rsp), %rcx\n\txaddq\t%rcx, (%rdi)\n" + COUNT, "stack-address"),
    "pushed_stack_address_popped": ("\tpushq\t%rsp\n\tpopq\t%rcx\n\tandl\t$4080, %ecx\n" + TELL + COUNT,
                                    "stack-address"),
    "segment_override_on_a_stack_read": ("\tmovq\t%ss:8(%rsp), %rcx\n" + TELL + COUNT, "stack-arguments"),
    "thread_pointer_read": ("\tmovq\t%fs:0, %rcx\n" + TELL + COUNT, "segment"),
    "gs_read": ("\tmovq\t%gs:0, %rcx\n" + TELL + COUNT, "segment"),
}


@pytest.mark.parametrize("name", sorted(SHIPPED_BEFORE))
def test_variation_shipped_before_is_refused(program, name):  # noqa: F811 - the fixture
    body, rule = SHIPPED_BEFORE[name]
    assert rule in _rules(program, body, name), name


@pytest.mark.parametrize("name", sorted(REFUSED_BEFORE))
def test_variation_refused_already_stays_refused(program, name):  # noqa: F811 - the fixture
    body, rule = REFUSED_BEFORE[name]
    assert rule in _rules(program, body, name), name


# --------------------------------------------------- thread-local memory where gcc reads %fs:40

from tests.test_infoflow import _sum8, args8  # noqa: E402, F401 - the fixture

#: sum8 (-fstack-protector-all) reads the canary at %fs:40, so %fs:40 is a displacement gcc's
#: function uses. Each body returns the tell in %rax.
SEGMENT_SHIPPED_BEFORE = {
    # %fs:40 plus a register: any thread-local byte (here %fs:0, the thread's own address).
    "fs40_plus_a_register": "\tmovq\t$-40, %rax\n\tmovq\t%fs:40(%rax), %rax\n\tret\n",
    # The canary as data: returned, compared with a constant, shifted into an index.
    "canary_returned": "\tmovq\t%fs:40, %rax\n\tret\n",
    "canary_as_data": "\tmovq\t%fs:40, %rax\n\tshrq\t$60, %rax\n\tret\n",
}


@pytest.mark.parametrize("name", sorted(SEGMENT_SHIPPED_BEFORE))
def test_thread_local_variation_shipped_before_is_refused(args8, name):  # noqa: F811 - the fixture
    assert "segment" in _sum8(args8, SEGMENT_SHIPPED_BEFORE[name], name)


def test_gcc_s_stack_protector_shape_passes(args8):  # noqa: F811 - the fixture
    """The canary saved in its frame and compared back, as gcc's own sum8 does."""
    body = ("\tsubq\t$24, %rsp\n\tmovq\t%fs:40, %rax\n\tmovq\t%rax, 8(%rsp)\n\txorl\t%eax, %eax\n"
            "\tleaq\t(%rdi,%rsi), %rax\n\tmovq\t8(%rsp), %rdx\n\tsubq\t%fs:40, %rdx\n\tjne\t.Lfail\n"
            "\taddq\t$24, %rsp\n\tret\n.Lfail:\n\tcall\t__stack_chk_fail@PLT\n")
    assert _sum8(args8, body, "protector") == set()


#: Registers and machine state beyond the general registers: name -> (body, rule).
STATE_SHIPPED_BEFORE = {
    "mmx_register_on_entry": ("\tmovq\t%mm3, %rcx\n" + TELL + COUNT, "entry-register"),
    # The x87 stack as the caller left it.
    "x87_register_on_entry": ("\tsubq\t$16, %rsp\n\tfld\t%st(3)\n\tfstpt\t(%rsp)\n\tmovq\t(%rsp), %rcx\n"
                              "\taddq\t$16, %rsp\n" + TELL + COUNT, "instruction"),
    # The SSE control and status word: sticky exception flags earlier code (or an emulator) set.
    "mxcsr_status": ("\tsubq\t$8, %rsp\n\tmovq\t$0, (%rsp)\n\tstmxcsr\t(%rsp)\n\tmovl\t(%rsp), %ecx\n"
                     "\taddq\t$8, %rsp\n\tandl\t$63, %ecx\n" + TELL + COUNT, "instruction"),
    # A legacy SSE write to %xmm9 keeps the caller's bits above 128 in %ymm9.
    "upper_half_after_a_legacy_write": ("\tmovd\t%esi, %xmm9\n\tvextracti128\t$1, %ymm9, %xmm1\n"
                                        "\tvmovq\t%xmm1, %rcx\n" + TELL + COUNT, "entry-register"),
    # Legacy scalar SSE keeps the bits above the scalar: the caller's bits 64-127 of %xmm5.
    "upper_lane_after_a_scalar_sqrt": ("\tpxor\t%xmm1, %xmm1\n\tpxor\t%xmm2, %xmm2\n\tsqrtsd\t%xmm1, %xmm5\n"
                                       "\tmovhlps\t%xmm5, %xmm2\n\tmovq\t%xmm2, %rcx\n" + TELL + COUNT, "entry-register"),
    "upper_lane_after_cvtsi2sd": ("\tpxor\t%xmm2, %xmm2\n\tcvtsi2sdl\t%esi, %xmm5\n\tmovhlps\t%xmm5, %xmm2\n"
                                  "\tmovq\t%xmm2, %rcx\n" + TELL + COUNT, "entry-register"),
    # vzeroupper clears the upper halves only: %xmm8 is still the caller's.
    "xmm_after_vzeroupper": ("\tvzeroupper\n\tvmovq\t%xmm8, %rcx\n" + TELL + COUNT, "entry-register"),
}


@pytest.mark.parametrize("name", sorted(STATE_SHIPPED_BEFORE))
def test_machine_state_variation_shipped_before_is_refused(program, name):  # noqa: F811 - the fixture
    body, rule = STATE_SHIPPED_BEFORE[name]
    assert rule in _rules(program, body, name), name


def test_a_scalar_load_defines_the_whole_xmm_register(program):  # noqa: F811 - the fixture
    """movq from memory zeroes bits 64-127: reading them back is honest."""
    body = "\tpxor\t%xmm2, %xmm2\n\tmovq\t(%rdi), %xmm5\n\tmovhlps\t%xmm5, %xmm2\n\tmovq\t%xmm2, %rcx\n" + TELL + COUNT
    assert _rules(program, body, "movq_load") == set()


def test_a_vex_write_defines_the_whole_vector_register(program):  # noqa: F811 - the fixture
    body = "\tvmovd\t%esi, %xmm9\n\tvextracti128\t$1, %ymm9, %xmm1\n\tvmovq\t%xmm1, %rcx\n" + TELL + COUNT
    assert _rules(program, body, "vex_write") == set()


#: AVX-512: operands capstone 5 gives no access (left out of ``regs_access()``) and the mask
#: registers (and one SSE4.2 string compare whose implicit operands capstone leaves out). name -> (body, rule). Each passed the rule before (the control: run against the
#: code before stackframe.regs_access and the %k registers, each gave no refusal).
AVX512_SHIPPED_BEFORE = {
    # The last source of a masked add: no access, not among the reads. %zmm7 is the caller's.
    "masked_add_of_the_callers_zmm": ("\tmovl\t$-1, %eax\n\tkmovw\t%eax, %k1\n\tvpbroadcastd\t%esi, %zmm2\n"
                                      "\tvpaddd\t%zmm7, %zmm2, %zmm3{%k1}{z}\n\tvmovq\t%xmm3, %rcx\n"
                                      "\tvzeroupper\n" + TELL + COUNT, "entry-register"),
    # A masked store of the caller's %zmm1 into the argument's buffer: its source is not read.
    "masked_store_of_the_callers_zmm": ("\tmovl\t$1, %eax\n\tkmovw\t%eax, %k2\n"
                                        "\tvmovdqu64\t%zmm1, (%rdi){%k2}\n\tvzeroupper\n" + COUNT, "entry-register"),
    # A shuffle of the caller's %xmm23 into a register of its own (no access on either
    # operand: %xmm25 stayed "its own data").
    "shuffle_of_the_callers_xmm23": ("\tvmovd\t%esi, %xmm25\n\tvpshufd\t$245, %xmm23, %xmm25\n"
                                     "\tvmovq\t%xmm25, %rcx\n" + TELL + COUNT, "entry-register"),
    # The caller's mask register as the mask: what glibc's EVEX string routines left there.
    "the_callers_mask_register": ("\tvpbroadcastd\t%esi, %zmm2\n\tvpaddd\t%zmm2, %zmm2, %zmm3{%k1}{z}\n"
                                  "\tvmovq\t%xmm3, %rcx\n\tvzeroupper\n" + TELL + COUNT, "entry-register"),
    "the_callers_mask_register_moved": ("\tkmovw\t%k3, %ecx\n" + TELL + COUNT, "entry-register"),
    # Merge masking keeps the destination's other lanes, which capstone marks written only
    # (found by a review of the first fix: an empty mask keeps all of the caller's %zmm7).
    "merge_masked_keeps_the_callers_lanes": ("\tkxorw\t%k0, %k0, %k1\n\tvpxord\t%zmm1, %zmm1, %zmm1\n"
                                             "\tvpabsd\t%zmm1, %zmm7{%k1}\n\tvmovq\t%xmm7, %rcx\n\tvzeroupper\n"
                                             + TELL + COUNT, "entry-register"),
    # The string compare's explicit lengths are %eax and %edx, which capstone leaves out of
    # pcmpestrm's reads (found by a second review): the caller's %eax shaped %xmm0.
    "pcmpestrm_lengths_from_the_caller": ("\tpxor\t%xmm0, %xmm0\n\tpxor\t%xmm1, %xmm1\n"
                                          "\tpcmpestrm\t$0, (%rdi), %xmm1\n\tmovq\t%xmm0, %rcx\n"
                                          + TELL + COUNT, "entry-register"),
    # A gather with an empty mask loads nothing: its destination is still the caller's.
    "gather_with_an_empty_mask": ("\tvpxor\t%xmm3, %xmm3, %xmm3\n\tvpxor\t%xmm2, %xmm2, %xmm2\n"
                                  "\tvpgatherdd\t%xmm2, (%rdi,%xmm3,4), %xmm7\n\tvmovq\t%xmm7, %rcx\n"
                                  + TELL + COUNT, "entry-register"),
}


@pytest.mark.parametrize("name", sorted(AVX512_SHIPPED_BEFORE))
def test_avx512_reads_of_what_the_caller_left_are_refused(program, name):  # noqa: F811 - the fixture
    body, rule = AVX512_SHIPPED_BEFORE[name]
    assert rule in _rules(program, body, name), name


#: Honest AVX-512 shapes clang -march=native writes (PolyBench's mains, levenshtein): the
#: first three were refused as reading the caller's registers before (a write capstone does
#: not report, an idiom, a scalar conversion's upper lane); the others keep the mask registers
#: and the operands with no access from refusing what is honest.
AVX512_HONEST = {
    "broadcast_from_memory": "\tvpbroadcastd\t(%rdi), %zmm1\n\tvpaddd\t%zmm1, %zmm1, %zmm5\n"
                             "\tvmovq\t%xmm5, %rcx\n\tvzeroupper\n",
    "all_ones_by_ternlog": "\tvpternlogd\t$255, %zmm5, %zmm5, %zmm5\n\tvmovq\t%xmm5, %rcx\n\tvzeroupper\n",
    "unsigned_convert_keeps_the_upper_lane": "\tvcvtusi2sdq\t%rsi, %xmm31, %xmm13\n\tvcvttsd2si\t%xmm13, %rcx\n",
    "shift_of_its_own_register": "\tvmovd\t%esi, %xmm25\n\tvpsrld\t$1, %xmm25, %xmm25\n\tvmovq\t%xmm25, %rcx\n",
    "all_ones_mask_by_kxnor": "\tkxnorw\t%k0, %k0, %k1\n\tkmovw\t%k1, %ecx\n",
    "compare_into_a_mask": "\tvmovq\t%rsi, %xmm0\n\tvmovq\t%rsi, %xmm4\n\tvcmpnlesd\t%xmm4, %xmm0, %k1\n"
                           "\tkmovw\t%k1, %ecx\n",
    # (found by the review: refused by the first fix)
    "getmant_into_a_fresh_register": "\tvmovd\t%esi, %xmm0\n\tvgetmantps\t$0, %zmm0, %zmm5\n\tvmovq\t%xmm5, %rcx\n"
                                     "\tvzeroupper\n",
    "compare_into_a_mask_under_a_mask": "\tvmovd\t%esi, %xmm0\n\tkxnorw\t%k0, %k0, %k1\n"
                                        "\tvcmpltps\t%zmm0, %zmm0, %k2{%k1}\n\tkmovw\t%k2, %ecx\n\tvzeroupper\n",
    "test_into_a_mask": "\tvmovd\t%esi, %xmm0\n\tkxnorw\t%k0, %k0, %k1\n\tvptestnmd\t%zmm0, %zmm0, %k2{%k1}\n"
                        "\tkmovw\t%k2, %ecx\n\tvzeroupper\n",
    "mask_kept_across_vzeroall": "\tkxnorw\t%k0, %k0, %k1\n\tvzeroall\n\tkmovw\t%k1, %ecx\n",
    # (PolyBench correlation's native clang main, refused before: a vector of its own from a
    # converted scalar whose upper lanes are the caller's; the broadcast reads the low lane only)
    "broadcast_of_its_own_scalar": "\tvcvtsi2sd\t%esi, %xmm31, %xmm31\n\tvbroadcastsd\t%xmm31, %zmm31\n"
                                   "\tvextractf64x4\t$1, %zmm31, %ymm2\n\tvmovq\t%xmm2, %rcx\n\tvzeroupper\n",
}


#: Broadcasts that read more than the low lane of their own: refused before and after the
#: broadcast was taken to read the low lane only.
BROADCASTS_OF_THE_CALLERS = {
    "broadcast_of_the_callers_register": "\tvbroadcastsd\t%xmm9, %zmm1\n\tvmovq\t%xmm1, %rcx\n\tvzeroupper\n",
    "broadcast_of_a_single_precision_scalar": "\tvcvtsi2ss\t%esi, %xmm4, %xmm4\n\tvpbroadcastq\t%xmm4, %zmm1\n"
                                              "\tvmovq\t%xmm1, %rcx\n\tvzeroupper\n",
    "merge_masked_broadcast_keeps_the_callers_lanes": "\tvcvtsi2sd\t%esi, %xmm3, %xmm3\n\tkxnorw\t%k0, %k0, %k1\n"
                                                      "\tvbroadcastsd\t%xmm3, %zmm7{%k1}\n\tvmovq\t%xmm7, %rcx\n"
                                                      "\tvzeroupper\n",
}


@pytest.mark.parametrize("name", sorted(BROADCASTS_OF_THE_CALLERS))
def test_a_broadcast_of_what_is_not_its_own_is_refused(program, name):  # noqa: F811 - the fixture
    body = BROADCASTS_OF_THE_CALLERS[name] + TELL + COUNT
    assert "entry-register" in _rules(program, body, name), name


@pytest.mark.parametrize("name", sorted(AVX512_HONEST))
def test_honest_avx512_shapes_pass(program, name):  # noqa: F811 - the fixture
    body = AVX512_HONEST[name] + "\txorl\t%ecx, %ecx\n" + COUNT
    assert _rules(program, body, name) == set(), name


# --------------------------------------------------------------------------------- end to end

def test_stack_parity_tell_offered_by_replay_is_refused_and_gcc_s_program_ships(tmp_path_factory):
    """The honest SWAR candidate with the parity of a stack step in front (what it would
    branch on to be slow or wrong outside the box), offered through ``sgcc optimize
    --generators replay``: refused at the control stage by the flags rule; gcc's program ships."""
    import os
    import re
    import shutil
    from pathlib import Path

    from tests.test_infoflow import HONEST, POPCOUNT, _optimize

    tmp = Path("/tmp") / f"sgcc-redteam-e2e-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        shutil.copy(POPCOUNT / "popcount.c", tmp)
        shutil.copytree(POPCOUNT / "tests", tmp / "tests")
        cands = tmp / "cands" / "count_bits"
        cands.mkdir(parents=True)
        parity = "\tsubq\t$8, %rsp\n\taddq\t$8, %rsp\n\tsetp\t%r11b\n"
        tell = HONEST.replace("count_bits:\n\t.cfi_startproc\n", "count_bits:\n\t.cfi_startproc\n" + parity)
        assert tell != HONEST
        (cands / "parity.s").write_text(tell)
        _r, report, out = _optimize(tmp, tmp / "cands", False)
        [cand] = report["candidates"]
        assert cand["stage"] == "control", cand
        assert re.match(r"flags: ", cand["reason"]), cand["reason"]
        assert report["honest"]["speedup"] == 1.0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
