"""Which x86-64 instruction-set extensions a candidate may use, and which it does use.

A binary built by plain ``gcc -O3`` runs on any x86-64; a candidate that slips in ``popcnt``,
AVX or AVX-512 only runs on machines that have them, and would pass every test on the
development host while crashing (SIGILL) or, worse, computing something else on the user's
older machine. So sgcc holds candidates to what the compile flags *promise*
(:func:`target_from_flags`: gcc's own view of ``-march``/``-m`` flags), or, when the user opts
in with ``--isa native``, to what this host offers (:func:`native_target`).

What an instruction needs is decided from its encoding, not from the candidate's text, so an
instruction spelled as raw ``.byte`` is held to the same rule (:func:`unsupported`).
Capstone's instruction groups are the starting point, but they are incomplete (``popcnt``,
``lzcnt``, ``movbe``, ``rdrand``, the FMA3 forms, ``vpternlogd``... carry no group), so explicit
tables fill the gaps, and anything that is neither in the baseline x86-64 set nor classified
is reported as ``unknown:<name>`` -- allowed only for host targets, where the tests on this
machine are the judge.

Subtleties decided here:

* ``tzcnt`` (``f3 0f bc``) is also how gcc spells ``rep bsf`` at the baseline ISA: on CPUs
  without BMI1 it runs as ``bsf``, which agrees except for a zero input (``tzcnt`` gives the
  operand width and sets CF; ``bsf`` leaves the destination undefined). The bytes are
  identical, so they cannot be told apart in an object. We require ``bmi`` for it -- a
  candidate could rely on the zero case -- but :func:`unsupported` lets a function keep every
  feature its own baseline (gcc's output for the same function) already used, so gcc's
  ``rep bsf`` idiom stays acceptable in the functions where gcc put it.
* ``lzcnt`` (``f3 0f bd``) runs as ``bsr`` on older CPUs and gives a *different* answer
  (31 - n): it needs ``lzcnt`` (``-mlzcnt``, ``-mabm``, most ``-march`` from Haswell/Barcelona on).
* ``popcnt`` decodes as an invalid opcode without POPCNT: it needs ``popcnt``.
* gcc's per-function ``target("...")``/``target_clones`` attributes put wider instructions in
  some functions of a baseline object; :func:`unsupported` allows, per function symbol, what the
  baseline's function of the same name already uses.

Module import stays cheap: capstone and pyelftools are imported inside the functions.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from sgcc.asm.obj import ObjectFile, read_object
from sgcc.errors import SgccError


@dataclass(frozen=True)
class Target:
    """An instruction-set promise: a name for messages and the set of lowercase feature names.

    ``host`` is true when the features were read off this machine (``-march=native`` or
    ``--isa native``): then instructions sgcc cannot classify are left to the tests that run
    here, instead of being refused.
    """

    name: str
    features: frozenset[str]
    host: bool = False

    def has(self, feature: str) -> bool:
        """Whether the target promises ``feature``."""
        return feature in self.features


#: Features every x86-64 has (AMD64 made them architectural). The SSE/SSE2/MMX/FXSR part is
#: dropped again when the flags switch it off (``-mno-sse2``, ``-mgeneral-regs-only``).
_ARCH_BASE = frozenset({"x86-64", "x87", "cmov", "cx8", "tsc", "fxsr", "mmx", "sse", "sse2"})

#: gcc's predefined macro (without the surrounding underscores) -> feature name, where the
#: generic rule (lowercase it) does not give the name this module uses.
_MACRO_SPECIAL = {
    "SSE4_1": "sse4.1",
    "SSE4_2": "sse4.2",
    "LAHF_SAHF": "sahf",
    "3dNOW": "3dnow",
    "3dNOW_A": "3dnowa",
}

#: Every feature name a gcc ISA macro can map to (after the generic lowercase rule). Macros
#: outside this set (``__code_model_small__``, ``__znver3__``...) are not features.
KNOWN_FEATURES = frozenset(
    """
    mmx sse sse2 sse3 ssse3 sse4.1 sse4.2 sse4a fxsr popcnt lzcnt abm bmi bmi2 tbm
    avx avx2 fma fma4 xop f16c lwp avx512f avx512bw avx512dq avx512cd avx512vl avx512er
    avx512pf avx512vnni avx512vbmi avx512vbmi2 avx512bitalg avx512vpopcntdq avx512ifma
    avx512bf16 avx512fp16 avx512vp2intersect avx5124fmaps avx5124vnniw avxvnni avxifma
    avxvnniint8 avxneconvert movbe adx aes pclmul sha rdrnd rdseed cx16 sahf crc32 xsave
    xsaveopt xsavec xsaves clflushopt clwb clzero prfchw prefetchwt1 rdpid gfni vaes
    vpclmulqdq fsgsbase shstk rtm hle mwaitx wbnoinvd pku movdiri movdir64b waitpkg serialize
    ptwrite cldemote enqcmd tsxldtrk uintr hreset kl widekl amx-tile amx-int8 amx-bf16 sgx
    pconfig rdpru 3dnow 3dnowa
    """.split()
)


def _macro_feature(macro: str) -> str | None:
    inner = macro[2:-2]
    name = _MACRO_SPECIAL.get(inner, inner.lower().replace("_", "-"))
    return name if name in KNOWN_FEATURES else None


_TARGET_CACHE: dict[tuple[str, tuple[str, ...]], Target] = {}

#: -m options that take a value and do not change the instruction set: passing them to the
#: macro probe is harmless but they must not be mistaken for ISA switches in the name.
_ISA_FLAG = re.compile(r"^-m(?:arch|tune|cpu)=|^-m(?:no-)?[a-z0-9.\-]+$")


def _relevant_flags(flags) -> list[str]:
    """The flags that can change the instruction set: ``-march=``, ``-mtune=``, ``-m*``, ``-mno-*``.

    Everything else (``-o``, ``-D``, ``-include``, ``@file``...) is dropped: the probe must
    compile an empty file and nothing else.
    """
    return [f for f in flags if isinstance(f, str) and f.startswith("-m") and _ISA_FLAG.match(f)]


def _target_name(relevant: list[str]) -> str:
    march = "x86-64"
    rest = []
    for f in relevant:
        if f.startswith("-march="):
            march = f.split("=", 1)[1]
        elif not f.startswith(("-mtune=", "-mcpu=")):
            rest.append(f)
    return " ".join([march, *rest])


def target_from_flags(gcc: str, flags) -> Target:
    """What the compile flags promise: gcc's predefined ISA macros for those flags.

    Runs ``gcc <-march/-m flags> -dM -E -x c /dev/null`` and maps ``__SSE4_2__``,
    ``__POPCNT__``, ``__AVX2__``... to feature names. Only ``-march=``/``-mtune=``/``-m*``/``-mno-*``
    flags are passed through; the result is cached per (gcc, flags) in this process.
    Raises :class:`SgccError` if gcc rejects the flags or the flags do not target x86-64.
    """
    relevant = _relevant_flags(flags)
    key = (gcc, tuple(relevant))
    cached = _TARGET_CACHE.get(key)
    if cached is not None:
        return cached
    from sgcc import proc

    argv = [gcc, *relevant, "-dM", "-E", "-x", "c", os.devnull]
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "TMPDIR", "HOME")}
    env["LC_ALL"] = "C"
    result = proc.run(
        argv,
        env=env,
        timeout=60,
        limits=proc.Limits(cpu=30, address_space=2 << 30, file_size=16 << 20),
    )
    if not result.ok:
        msg = result.stderr.decode(errors="replace").strip().splitlines()
        raise SgccError(
            f"cannot tell which instruction set {' '.join(relevant) or 'the default flags'} "
            f"selects: {gcc} failed ({result.describe()})" + (f": {msg[-1]}" if msg else ""),
        )
    macros = set()
    for line in result.stdout.decode(errors="replace").splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "#define" and parts[2] == "1":
            macros.add(parts[1])
    if "__x86_64__" not in macros or "__ILP32__" in macros:
        raise SgccError(
            "sgcc screens x86-64 (LP64) code only",
            hint="flags such as -m32 or -mx32 are compiled by gcc without sgcc's optimizer",
        )
    features = set(_ARCH_BASE)
    # -mno-sse2 and friends really do take baseline features away: honour the macros for those.
    for base in ("sse", "sse2", "mmx", "fxsr"):
        if f"__{base.upper()}__" not in macros:
            features.discard(base)
    if "__GCC_HAVE_SYNC_COMPARE_AND_SWAP_16" in macros:
        features.add("cx16")
    for m in macros:
        if m.startswith("__") and m.endswith("__"):
            feat = _macro_feature(m)
            if feat:
                features.add(feat)
    host = any(f == "-march=native" for f in relevant)
    target = Target(name=_target_name(relevant), features=frozenset(features), host=host)
    _TARGET_CACHE[key] = target
    return target


def native_target(gcc: str = "gcc") -> Target:
    """Everything this host offers, as gcc's ``-march=native`` sees it (``--isa native``)."""
    t = target_from_flags(gcc, ["-march=native"])
    return Target(name="native", features=t.features, host=True)


# ---------------------------------------------------------------------------------------------
# Classification of decoded instructions.

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


def required_features(insn) -> set[str]:
    """The features a decoded capstone instruction (``detail`` on) needs to run as intended.

    Empty for baseline x86-64 integer/x87 instructions; ``"unknown:<name>"`` for an extension
    this module cannot classify (refused unless the target is the host itself).
    """
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


# ---------------------------------------------------------------------------------------------
# Objects (read and decoded once by sgcc.asm.obj).


def features_by_function(code: ObjectFile) -> dict[str, set[str]]:
    """For each function symbol, every feature its instructions need."""
    out: dict[str, set[str]] = {}
    for sec in code.code:
        for insn in sec.insns:
            fn = code.function_at(sec.index, insn.address)
            if fn is not None:
                out.setdefault(fn, set()).update(required_features(insn))
    return out


def _describe_missing(feature: str) -> str:
    if feature.startswith("unknown:"):
        return feature.split(":", 1)[1] + " (an extension sgcc cannot classify)"
    return feature


def unsupported_items(
    code: ObjectFile, target: Target, baseline: ObjectFile | None = None
) -> list[tuple[str, str, list[str]]]:
    """(instruction name, where, missing features) for every instruction the target lacks.

    ``where`` reads ``.text+0x12 in count``. With a decoded ``baseline``, an instruction inside
    function ``f`` may also use any feature gcc's ``f`` in the baseline uses.
    """
    allowed_by_fn = features_by_function(baseline) if baseline is not None else {}
    items = []
    for sec in code.code:
        for insn in sec.insns:
            need = required_features(insn)
            if not need:
                continue
            fn = code.function_at(sec.index, insn.address)
            extra = allowed_by_fn.get(fn, set()) if fn else set()
            missing = sorted(
                f for f in need
                if f not in target.features and f not in extra
                and not (target.host and f.startswith("unknown:"))
            )
            if missing:
                name = insn.insn_name() or insn.mnemonic
                where = f"{sec.name}+{insn.address:#x}" + (f" in {fn}" if fn else "")
                items.append((name, where, [_describe_missing(m) for m in missing]))
    return items


def unsupported_in(code: ObjectFile, target: Target, baseline: ObjectFile | None = None) -> list[str]:
    """Like :func:`unsupported`, on objects already read."""
    return [
        f"{name} at {where} needs {', '.join(missing)} (target {target.name} lacks it)"
        for name, where, missing in unsupported_items(code, target, baseline)
    ]


def unsupported(obj_path: Path, target: Target, *, baseline: Path | None = None) -> list[str]:
    """Instructions in ``obj_path`` the target does not promise, one message each.

    E.g. ``"popcnt at .text+0x12 in count needs popcnt (target x86-64 lacks it)"``. With
    ``baseline``, a function may also use whatever gcc's code for the same function symbol in
    that object uses (target attributes, gcc's own ``rep bsf``).
    """
    code = read_object(obj_path)
    base = read_object(baseline) if baseline is not None else None
    return unsupported_in(code, target, base)
