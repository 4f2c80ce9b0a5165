"""Which x86-64 instruction-set extensions a candidate may use, and which it does use.

A binary built by plain ``gcc -O3`` runs on any x86-64; a candidate that slips in ``popcnt``,
AVX or AVX-512 only runs on machines that have them, and would pass every test on the
development host while crashing (SIGILL) or, worse, computing something else on the user's
older machine. So sgcc holds candidates to what the compile flags *promise*
(:func:`target_from_flags`: gcc's own view of ``-march``/``-m`` flags), or, when the user opts
in with ``--isa native``, to what this host offers (:func:`native_target`).

What an instruction needs is decided from its encoding, not from the candidate's text, so an
instruction spelled as raw ``.byte`` is held to the same rule (:func:`unsupported`;
the classification itself is :func:`sgcc.verify.static.insnfeatures.required_features`). What
cannot be classified is ``unknown:<name>`` -- allowed only for host targets, where the tests
on this machine are the judge.

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
from sgcc.verify.static.insnfeatures import required_features


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
