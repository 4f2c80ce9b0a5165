"""Compiler-variant candidates: the program's functions as gcc compiles them under other flags.

``-O3`` is one point in gcc's space of choices. For each program the generator compiles the
translation unit again under a curated set of alternatives (loop unrolling, no
vectorization, ``-O2``, scheduling before register allocation, branches instead of
conditional moves, other code alignment, tuning for this CPU; with ``--isa native`` also
``-march=native`` and two relatives) and offers each function's unit from each variant
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

from sgcc.candidates.transplant.generator import TransplantGenerator, Variant, compile_all

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
#: Added under ``--isa native``: everything this CPU has.
NATIVE: list[tuple[str, list[str]]] = [
    ("native", ["-march=native"]),
    ("native-unroll", ["-march=native", "-funroll-loops"]),
    ("native-O2", ["-march=native", "-O2"]),
]

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
        sets = self.sets if self.sets is not None else (NATIVE + PORTABLE if isa == "native" else PORTABLE)
        return [(n, f) for n, f in sets if isa == "native" or not needs_native(f)]

    def prepare(self, context) -> None:
        try:
            self._prepare(context)
        except Exception as exc:  # noqa: BLE001 - offer nothing, say why; the run goes on
            self.base, self.variants = None, []
            self.notes.append(f"variants: {type(exc).__name__}: {exc}")

    def _prepare(self, context) -> None:
        self._setup_base(context.program)
        chosen = self.chosen(context.isa)
        if context.note:
            context.note(f"variants: compiling {len(chosen)} variants")
        variants = [Variant(n, list(f)) for n, f in chosen]
        self.variants = compile_all(context, variants, Path(context.workdir) / "variants")
        for v in self.variants:
            if v.error:
                self.notes.append(f"variant {v.name} ({' '.join(v.flags)}): {v.error}")


def from_config(cfg) -> VariantsGenerator:
    text = getattr(cfg, "variants", "") or ""
    return VariantsGenerator(parse_variants(text) if text.strip() else None)
