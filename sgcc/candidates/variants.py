"""Compiler-variant candidates: the program's functions as gcc compiles them under other flags.

``-O3`` is one point in gcc's space of choices. For each program the generator compiles the
translation unit again under a curated set of alternatives (loop unrolling, no
vectorization, ``-O2``, scheduling before register allocation, branches instead of
conditional moves, other code alignment, tuning for this CPU; with ``--isa native`` also
``-march=native`` and relatives, and the host's instruction-set extensions one at a time)
and offers each function's unit from each variant
as a candidate for gcc's ``-O3`` unit (see :mod:`sgcc.candidates.transplant` for how a unit
is made to fit the baseline, and when a variant is offered as a whole file instead).

The list can be replaced with the ``variants`` setting: flag sets separated by ``;``
(``SGCC_VARIANTS="-funroll-loops; -O2 -fno-tree-vectorize"``). Flag sets that need
instructions beyond the baseline's target (``-march=...``, ``-m<extension>``) are used
only under ``--isa native``.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from sgcc.candidates.transplant.generator import TransplantGenerator, Variant, compile_variant

#: Flag sets for the portable target (``--isa flags``): none changes the instruction set.
PORTABLE: list[tuple[str, list[str]]] = [
    ("unroll", ["-funroll-loops"]),
    ("O2", ["-O2"]),
    ("novect", ["-fno-tree-vectorize"]),
    ("tune-native", ["-mtune=native"]),
    ("sched", ["-fschedule-insns", "-fsched-pressure"]),
    ("branches", ["-fno-if-conversion", "-fno-if-conversion2"]),
    ("align32", ["-falign-functions=32", "-falign-loops=32"]),
]
#: Added under ``--isa native``: everything this CPU has. gcc contracts ``a*b+c`` into one
#: FMA instruction wherever FMA is available (``-ffp-contract=fast``, GNU C's default); that
#: changes floating-point results, so the tests refuse such a variant of a floating-point
#: program. ``-ffp-contract=off`` keeps every other native instruction without that change.
NATIVE: list[tuple[str, list[str]]] = [
    ("native", ["-march=native"]),
    ("native-unroll", ["-march=native", "-funroll-loops"]),
    ("native-nocontract", ["-march=native", "-ffp-contract=off"]),
    ("native-nocontract-unroll", ["-march=native", "-ffp-contract=off", "-funroll-loops"]),
    ("native-O2", ["-march=native", "-O2"]),
]

#: Instruction-set extensions offered one at a time under ``--isa native`` (where the host has
#: them): ``/proc/cpuinfo`` flag -> gcc options. One at a time so that a change only one of
#: them brings (FMA's floating-point contraction, which the tests refuse) does not hide
#: another's win (BMI2's shifts, AVX2's integer vectors). Each option also enables what it
#: implies (``-mavx2`` implies AVX and SSE4.2); the instruction-set check still verifies
#: every instruction against the host.
ISA_EXTENSIONS: list[tuple[str, list[str]]] = [
    ("avx2", ["-mavx2"]),
    ("bmi2", ["-mbmi2"]),
    ("fma", ["-mfma"]),
    ("avx512f", ["-mavx512f", "-mavx512vl", "-mavx512bw", "-mavx512dq"]),
    ("bmi1", ["-mbmi"]),
    ("popcnt", ["-mpopcnt"]),
    ("abm", ["-mlzcnt"]),
    ("sse4_2", ["-msse4.2"]),
    ("movbe", ["-mmovbe"]),
]
#: cpuinfo flags an extension's options need besides its own.
_ISA_NEEDS = {"avx512f": ("avx512vl", "avx512bw", "avx512dq")}

_ISA_FLAG = re.compile(r"^-(?:march=|m(?!tune=|arch=|no-)"
                       r"(?:avx|sse|fma|bmi|popcnt|lzcnt|f16c|movbe|adx|aes|pclmul|sha|vpclmulqdq|gfni))")


def parse_variants(text: str) -> list[tuple[str, list[str]]]:
    """``"-funroll-loops; -O2 -fno-tree-vectorize"`` -> [(name, flags), ...]."""
    out = []
    for part in text.split(";"):
        flags = shlex.split(part)
        if flags:
            name = "_".join(f.lstrip("-") for f in flags)[:40]
            out.append((name, flags))
    return out


def host_cpu_flags(path: str = "/proc/cpuinfo") -> frozenset[str]:
    """The instruction-set flags of this machine's first CPU (empty when unknown)."""
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


def isa_singles(cpu_flags: frozenset[str]) -> list[tuple[str, list[str]]]:
    """:data:`ISA_EXTENSIONS` the host has, each as a variant of its own (``isa-avx2``...)."""
    return [(f"isa-{flag}", list(opts)) for flag, opts in ISA_EXTENSIONS
            if flag in cpu_flags and all(n in cpu_flags for n in _ISA_NEEDS.get(flag, ()))]


def needs_native(flags: list[str]) -> bool:
    """Whether a flag set asks for instructions beyond gcc's default target."""
    return any(_ISA_FLAG.match(f) for f in flags)


class VariantsGenerator(TransplantGenerator):
    """Offers every function of every compiler variant (see the module docstring)."""

    name = "variants"
    trusted = True  # gcc's own code

    def __init__(self, sets: list[tuple[str, list[str]]] | None = None):
        super().__init__()
        self.sets = sets  # None: the built-in lists for the run's --isa

    def chosen(self, isa: str) -> list[tuple[str, list[str]]]:
        # Most promising first: the engine takes generators' candidates in turn, so under a
        # tight budget the first ones are the ones tried.
        if self.sets is not None:
            sets = self.sets
        elif isa == "native":
            # The extensions one at a time come last: -march=native with and without FMA
            # contraction covers most of what they offer together.
            sets = NATIVE + PORTABLE + isa_singles(host_cpu_flags())
        else:
            sets = PORTABLE
        return [(n, f) for n, f in sets if isa == "native" or not needs_native(f)]

    def _prepare(self, context) -> None:
        self._setup_base(context.program)
        chosen = self.chosen(context.isa)
        # Compiled as the search asks for them, most promising first (see TransplantGenerator):
        # a variant's failure is offered as a skipped candidate saying why.
        variants = [Variant(n, list(f)) for n, f in chosen]
        directory = Path(context.workdir) / "variants"
        self.defer(context, variants, lambda v: compile_variant(context, v, directory))


def from_config(cfg) -> VariantsGenerator:
    text = getattr(cfg, "variants", "") or ""
    return VariantsGenerator(parse_variants(text) if text.strip() else None)
