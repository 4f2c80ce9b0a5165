"""What a decoded x86-64 instruction needs: the instruction-set features it runs on.

Decided from the encoding capstone decoded, not from any text, so raw ``.byte`` spellings are
held to the same rule. Capstone's instruction groups are the starting point, but they are
incomplete (``popcnt``, ``lzcnt``, ``movbe``, ``rdrand``, the FMA3 forms, ``vpternlogd``...
carry no group), so explicit tables fill the gaps, and anything that is neither in the
baseline x86-64 set nor classified is ``unknown:<name>``. ``tzcnt`` needs ``bmi``, ``lzcnt``
needs ``lzcnt`` and ``popcnt`` needs ``popcnt`` (see :mod:`sgcc.verify.static.isa` for why, and for
what a target promises).

Module import stays cheap: capstone is imported inside the functions.
"""

from __future__ import annotations

import re

#: Integer and system instructions every x86-64 executes (capstone ``insn_name()`` spellings).
#: Instructions that are *forbidden* (syscall, in/out, ...) are listed here too when they exist
#: on every x86-64: refusing them is the screen's job, not the ISA check's.
BASE_INSNS = frozenset(
    """
    adc add and bsf bsr bswap bt btc btr bts call cbw cdq cdqe clc cld cmc
    cmova cmovae cmovb cmovbe cmove cmovg cmovge cmovl cmovle cmovne cmovno cmovnp cmovns
    cmovo cmovp cmovs cmp cmpsb cmpsd cmpsq cmpsw cmpxchg cmpxchg8b cpuid cqo cwd cwde
    dec div endbr32 endbr64 enter idiv imul inc
    ja jae jb jbe je jg jge jl jle jmp jne jno jnp jns jo jp jrcxz jecxz js
    lea leave lodsb lodsd lodsq lodsw loop loope loopne mov movabs movsb movsd movsq movsw
    movsx movsxd movzx mul neg nop not or pop popf popfq push pushf pushfq rcl rcr ret
    rol ror sal sar sbb scasb scasd scasq scasw seta setae setb setbe sete setg setge setl
    setle setne setno setnp setns seto setp sets shl shld shr shrd stc std stosb stosd stosq
    stosw sub test ud0 ud1 ud2 xadd xchg xlatb xor data16 rep repne lock
    pause lfence mfence sfence prefetchnta prefetcht0 prefetcht1 prefetcht2 clflush
    fxsave fxrstor fxsave64 fxrstor64 rdtsc emms ldmxcsr stmxcsr movnti
    syscall sysenter sysexit sysexitq sysret sysretq int int1 int3 into iret iretd iretq hlt
    in out insb insw insd outsb outsw outsd cli sti clts lgdt lidt lldt ltr lmsw sgdt sidt
    sldt str smsw invd wbinvd invlpg rdmsr wrmsr rdpmc swapgs rsm lar lsl verr verw
    lds les lfs lgs lss ljmp lcall retf retfq
    """.split()
)

#: Capstone group name (``X86_GRP_<name>``) -> feature. Groups that are not ISA extensions
#: (JUMP, CALL, PRIVILEGE, MODE64, NOVLX...) are absent on purpose.
_GROUP_FEATURES = {
    "SSE1": "sse", "SSE2": "sse2", "SSE3": "sse3", "SSSE3": "ssse3", "SSE41": "sse4.1",
    "SSE42": "sse4.2", "SSE4A": "sse4a", "AVX": "avx", "AVX2": "avx2", "AVX512": "avx512f",
    "BWI": "avx512bw", "DQI": "avx512dq", "CDI": "avx512cd", "ERI": "avx512er",
    "PFI": "avx512pf", "VLX": "avx512vl", "FMA": "fma", "FMA4": "fma4", "F16C": "f16c",
    "BMI": "bmi", "BMI2": "bmi2", "ADX": "adx", "AES": "aes", "PCLMUL": "pclmul", "SHA": "sha",
    "MMX": "mmx", "3DNOW": "3dnow", "XOP": "xop", "TBM": "tbm", "RTM": "rtm", "HLE": "hle",
    "FSGSBASE": "fsgsbase", "CMOV": "cmov", "FPU": "x87", "SGX": "sgx", "SMAP": "smap",
    "VM": "vmx",
}

#: Instructions capstone leaves ungrouped (or groups too coarsely), by exact name.
_NAME_FEATURES = {
    "popcnt": {"popcnt"},
    "lzcnt": {"lzcnt"},
    "tzcnt": {"bmi"},
    "movbe": {"movbe"},
    "crc32": {"sse4.2"},
    "rdrand": {"rdrnd"},
    "rdseed": {"rdseed"},
    "cmpxchg16b": {"cx16"},
    "lahf": {"sahf"},
    "sahf": {"sahf"},
    "adcx": {"adx"},
    "adox": {"adx"},
    "prefetchw": {"prfchw"},
    "prefetch": {"prfchw"},
    "prefetchwt1": {"prefetchwt1"},
    "xsave": {"xsave"}, "xrstor": {"xsave"}, "xsave64": {"xsave"}, "xrstor64": {"xsave"},
    "xgetbv": {"xsave"},
    "xsaveopt": {"xsaveopt"}, "xsaveopt64": {"xsaveopt"},
    "xsavec": {"xsavec"}, "xsavec64": {"xsavec"},
    "xsaves": {"xsaves"}, "xsaves64": {"xsaves"}, "xrstors": {"xsaves"}, "xrstors64": {"xsaves"},
    "clflushopt": {"clflushopt"},
    "clwb": {"clwb"},
    "clzero": {"clzero"},
    "rdpid": {"rdpid"},
    "movdiri": {"movdiri"},
    "movdir64b": {"movdir64b"},
    "rdpkru": {"pku"}, "wrpkru": {"pku"},
    "monitorx": {"mwaitx"}, "mwaitx": {"mwaitx"},
    "umonitor": {"waitpkg"}, "umwait": {"waitpkg"}, "tpause": {"waitpkg"},
    "ptwrite": {"ptwrite"},
    "cldemote": {"cldemote"},
    "wbnoinvd": {"wbnoinvd"},
    "xbegin": {"rtm"}, "xend": {"rtm"}, "xabort": {"rtm"}, "xtest": {"rtm"},
    "femms": {"3dnow"},
    "vcvtph2ps": {"f16c"}, "vcvtps2ph": {"f16c"},
    "rdtscp": {"rdtscp"},
    "rdsspd": {"shstk"}, "rdsspq": {"shstk"}, "incsspd": {"shstk"}, "incsspq": {"shstk"},
    "wrssd": {"shstk"}, "wrssq": {"shstk"}, "wrussd": {"shstk"}, "wrussq": {"shstk"},
    "rstorssp": {"shstk"}, "saveprevssp": {"shstk"}, "setssbsy": {"shstk"},
    "clrssbsy": {"shstk"},
    "monitor": {"sse3"}, "mwait": {"sse3"},
    "fisttp": {"sse3"},  # an x87 instruction that came with SSE3
}

#: AVX-512 subsets beyond the foundation, by name pattern (EVEX encodings only). Capstone
#: groups some of these (BWI, DQI, CDI...) but not all.
_EVEX_SUBSETS = [
    (re.compile(r"^vpopcnt[dq]$"), "avx512vpopcntdq"),
    (re.compile(r"^(vpopcnt[bw]|vpshufbitqmb)$"), "avx512bitalg"),
    (re.compile(r"^(vpermb|vpermi2b|vpermt2b|vpmultishiftqb)$"), "avx512vbmi"),
    (re.compile(r"^(vpcompress[bw]|vpexpand[bw]|vpshld[vwdq]*|vpshrd[vwdq]*)$"), "avx512vbmi2"),
    (re.compile(r"^vpmadd52[lh]uq$"), "avx512ifma"),
    (re.compile(r"^vpdp(busd|bussd|busds|wssd|wssds)$"), "avx512vnni"),
    (re.compile(r"^(vcvtne2ps2bf16|vcvtneps2bf16|vdpbf16ps)$"), "avx512bf16"),
    (re.compile(r"^(vpconflict[dq]|vplzcnt[dq]|vpbroadcastm(b2q|w2d))$"), "avx512cd"),
    (re.compile(r"^(vexp2p[sd]|vrcp28[ps][sd]|vrsqrt28[ps][sd])$"), "avx512er"),
    (re.compile(r"^v(gather|scatter)pf[01][dq]p[sd]$"), "avx512pf"),
    (re.compile(r"^vp2intersect[dq]$"), "avx512vp2intersect"),
    (re.compile(r"^(vp4dpwssds?)$"), "avx5124vnniw"),
    (re.compile(r"^(v4fn?madd[ps]s)$"), "avx5124fmaps"),
    (re.compile(r"^(vpmov[bw]2m|vpmovm2[bw]|vdbpsadbw|vpermw|vpermi2w|vpermt2w|vpsllvw|vpsrlvw"
                r"|vpsravw|vpmovu?s?wb|vmovdqu(8|16)|vpblendm[bw]|vptestn?m[bw]|vpcmpu?[bw])$"),
     "avx512bw"),
    (re.compile(r"^(vpmov[dq]2m|vpmovm2[dq]|vcvtt?p[sd]2u?qq|vcvtu?qq2p[sd]|vrange[ps][sd]"
                r"|vreduce[ps][sd]|vfpclass[ps][sd]|vpmullq|vextract[if](32x8|64x2)"
                r"|vinsert[if](32x8|64x2)|vbroadcast[if](32x2|32x8|64x2))$"), "avx512dq"),
    (re.compile(r"^gf2p8"), "gfni"),
]

#: SSE/SSE2 (and the SSE integer additions to MMX) by name: capstone leaves some encodings
#: of these ungrouped (the REX.W forms of cvtsi2sd/cvtsd2si, pextrw/pinsrw...). All of them
#: are part of every x86-64; used only for legacy encodings with no group at all.
_SSE_BASE_NAMES = frozenset(
    """
    addps addss andnps andps cmpps cmpss comiss cvtpi2ps cvtps2pi cvtsi2ss cvtss2si cvttps2pi
    cvttss2si divps divss ldmxcsr maxps maxss minps minss movaps movhlps movhps movlhps movlps
    movmskps movntps movss movups mulps mulss orps rcpps rcpss rsqrtps rsqrtss shufps sqrtps
    sqrtss stmxcsr subps subss ucomiss unpckhps unpcklps xorps pavgb pavgw pextrw pinsrw
    pmaxsw pmaxub pminsw pminub pmovmskb pmulhuw psadbw pshufw maskmovq movntq
    addpd addsd andnpd andpd cmppd cmpsd comisd cvtdq2pd cvtdq2ps cvtpd2dq cvtpd2pi cvtpd2ps
    cvtpi2pd cvtps2dq cvtps2pd cvtsd2si cvtsd2ss cvtsi2sd cvtss2sd cvttpd2dq cvttpd2pi
    cvttps2dq cvttsd2si divpd divsd maskmovdqu maxpd maxsd minpd minsd movapd movd movdq2q
    movdqa movdqu movhpd movlpd movmskpd movntdq movnti movntpd movq movq2dq movsd movupd
    mulpd mulsd orpd packssdw packsswb packuswb paddb paddd paddq paddsb paddsw paddusb
    paddusw paddw pand pandn pcmpeqb pcmpeqd pcmpeqw pcmpgtb pcmpgtd pcmpgtw pmaddwd pmulhw
    pmullw pmuludq por pshufd pshufhw pshuflw pslld pslldq psllq psllw psrad psraw psrld
    psrldq psrlq psrlw psubb psubd psubq psubsb psubsw psubusb psubusw psubw punpckhbw
    punpckhdq punpckhqdq punpckhwd punpcklbw punpckldq punpcklqdq punpcklwd pxor shufpd
    sqrtpd sqrtsd subpd subsd ucomisd unpckhpd unpcklpd xorpd
    """.split()
)

#: SSE3..SSE4.2 names: their VEX forms (``v`` + name) are AVX, and capstone leaves some of
#: those ungrouped too.
_SSE_LATER_NAMES = frozenset(
    """
    addsubpd addsubps haddpd haddps hsubpd hsubps lddqu movddup movshdup movsldup pabsb pabsd
    pabsw palignr phaddd phaddsw phaddw phsubd phsubsw phsubw pmaddubsw pmulhrsw pshufb psignb
    psignd psignw blendpd blendps blendvpd blendvps dppd dpps extractps insertps movntdqa
    mpsadbw packusdw pblendvb pblendw pcmpeqq pextrb pextrd pextrq phminposuw pinsrb pinsrd
    pinsrq pmaxsb pmaxsd pmaxud pmaxuw pminsb pminsd pminud pminuw pmovsxbd pmovsxbq pmovsxbw
    pmovsxdq pmovsxwd pmovsxwq pmovzxbd pmovzxbq pmovzxbw pmovzxdq pmovzxwd pmovzxwq pmuldq
    pmulld ptest roundpd roundps roundsd roundss pcmpestri pcmpestrm pcmpistri pcmpistrm
    pcmpgtq
    """.split()
)

_FMA3 = re.compile(r"^vf(n?m(add|sub)|maddsub|msubadd)(132|213|231)")
_FMA4 = re.compile(r"^vf(n?m(add|sub)|maddsub|msubadd)[ps][sd]$")
_VNNI = re.compile(r"^vpdp(busd|busds|wssd|wssds)$")
_KREG_OP = re.compile(r"^k[a-z]+([bwdq])$")

_GROUP_NAMES: dict[int, str] | None = None


def group_names() -> dict[int, str]:
    """Capstone's x86 instruction group ids -> names (``X86_GRP_AVX2`` -> ``"AVX2"``)."""
    global _GROUP_NAMES
    if _GROUP_NAMES is None:
        from capstone import x86_const

        _GROUP_NAMES = {
            getattr(x86_const, n): n[len("X86_GRP_"):]
            for n in dir(x86_const)
            if n.startswith("X86_GRP_")
        }
    return _GROUP_NAMES


def encoding(insn) -> str:
    """"legacy", "vex", "evex" or "xop", from the first opcode byte capstone reports."""
    first = insn.opcode[0] if insn.opcode else 0
    if first in (0xC4, 0xC5):
        return "vex"
    if first == 0x62:  # BOUND does not exist in 64-bit mode: 0x62 is always EVEX there
        return "evex"
    if first == 0x8F and "XOP" in {group_names().get(g) for g in insn.groups}:
        return "xop"
    return "legacy"


def _registers(insn) -> set[str]:
    from capstone import x86_const

    regs = set()
    for op in insn.operands:
        if op.type == x86_const.X86_OP_REG:
            regs.add(insn.reg_name(op.reg))
        elif op.type == x86_const.X86_OP_MEM:
            for r in (op.mem.base, op.mem.index):
                if r:
                    regs.add(insn.reg_name(r))
    return regs


#: required_features by instruction bytes. What an instruction needs is a function of its
#: encoding alone (64-bit mode), and a candidate's object repeats most of gcc's instructions,
#: which every check against the same baseline decodes again: asking capstone's detail for
#: each was a third of the object checks' time.
_FEATURES_BY_BYTES: dict[bytes, frozenset[str]] = {}
_FEATURES_MEMO_SIZE = 1 << 16


def required_features(insn) -> frozenset[str]:
    """The features a decoded capstone instruction (``detail`` on) needs to run as intended.

    Empty for baseline x86-64 integer/x87 instructions; ``"unknown:<name>"`` for an extension
    this module cannot classify (refused unless the target is the host itself).
    """
    key = bytes(insn.bytes)
    found = _FEATURES_BY_BYTES.get(key)
    if found is None:
        found = frozenset(_required_features(insn))
        if len(_FEATURES_BY_BYTES) >= _FEATURES_MEMO_SIZE:
            _FEATURES_BY_BYTES.clear()
        _FEATURES_BY_BYTES[key] = found
    return found


def _required_features(insn) -> set[str]:
    name = insn.insn_name() or insn.mnemonic.split()[-1]
    groups = {group_names().get(g, "") for g in insn.groups}
    enc = encoding(insn)
    regs = _registers(insn)
    feats: set[str] = set()
    for g in groups:
        f = _GROUP_FEATURES.get(g)
        if f:
            feats.add(f)
    feats |= _NAME_FEATURES.get(name, set())

    if enc == "evex":
        feats.add("avx512f")
        feats.discard("avx")  # capstone tags some EVEX forms AVX/AVX2: the EVEX form needs 512F
        feats.discard("avx2")
        for pattern, feat in _EVEX_SUBSETS:
            if pattern.match(name):
                feats.add(feat)
        if _FMA3.match(name):
            feats.discard("fma")
        if not any(r.startswith("zmm") for r in regs) and (
            any(r.startswith(("xmm", "ymm")) for r in regs) and not name.endswith(("ss", "sd", "sh"))
        ):
            feats.add("avx512vl")  # 128/256-bit EVEX forms are AVX512VL
    elif enc == "vex":
        if _FMA3.match(name):
            feats.add("fma")
        elif _FMA4.match(name):
            feats.add("fma4")
        elif _VNNI.match(name):
            feats.add("avxvnni")
        elif name.startswith("gf2p8"):
            feats |= {"gfni", "avx"}
        elif name.startswith("vaes") and any(r.startswith("ymm") for r in regs):
            feats.add("vaes")
        elif name == "vpclmulqdq" and any(r.startswith("ymm") for r in regs):
            feats.add("vpclmulqdq")
        if name.startswith("k"):
            feats.add("avx512f")  # mask-register ops are VEX-encoded but AVX-512
        if any(r.startswith("ymm") for r in regs) and not feats & {"avx2", "fma", "fma4", "f16c", "avx512f"}:
            feats.add("avx")
        legacy_name = name[1:]
        if not feats and (legacy_name in _SSE_BASE_NAMES or legacy_name in _SSE_LATER_NAMES):
            # The VEX form of an SSE instruction capstone left ungrouped (vcvtsi2sd, vsqrtsd):
            # AVX, or AVX2 for integer operations on ymm registers.
            wide_int = legacy_name.startswith("p") and any(r.startswith("ymm") for r in regs)
            feats.add("avx2" if wide_int else "avx")
        if not feats:
            feats.add(f"unknown:{name}")  # a VEX instruction capstone and we cannot place
    elif enc == "xop":
        feats.add("xop")
    else:
        if name in ("gf2p8affineqb", "gf2p8affineinvqb", "gf2p8mulb"):
            feats.add("gfni")

    # Registers settle what groups may miss: any zmm/k register or xmm16-31 is AVX-512.
    for r in regs:
        if r.startswith("zmm") or re.fullmatch(r"k[0-7]", r):
            feats.add("avx512f")
        elif r.startswith(("xmm", "ymm")) and int(re.sub(r"\D", "", r) or 0) >= 16:
            feats |= {"avx512f", "avx512vl"}
        elif r.startswith("ymm") and not feats & {"avx", "avx2", "avx512f", "fma", "f16c"}:
            feats.add("avx")
    m = _KREG_OP.match(name)
    if m and enc == "vex" and name not in ("kmovw",):
        # Mask ops on byte masks are AVX512DQ, on dword/qword masks AVX512BW.
        width = m.group(1)
        if width == "b" or name in ("kaddw", "ktestw"):
            feats.add("avx512dq")
        elif width in ("d", "q"):
            feats.add("avx512bw")

    if not feats and enc == "legacy" and name not in BASE_INSNS:
        if name in _SSE_BASE_NAMES:
            feats.add("sse2" if any(r.startswith("xmm") for r in regs) else "sse")
        elif name.startswith("f"):
            feats.add("x87")  # x87 forms capstone leaves ungrouped (fnstsw...)
    if not feats and name not in BASE_INSNS:
        feats.add(f"unknown:{name}")
    return feats
