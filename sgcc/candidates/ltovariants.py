"""LTO variants: an LTO partition's functions as gcc makes them from compiles under other flags.

A partition of an LTO link has no source of its own to compile again: its code is made by
the link (``lto1 -fltrans`` on each partition) from the objects' intermediate language, and
each function there keeps the optimisation flags its *compile* had. Flags given only at the
link change nothing (gcc 12: ``-O3`` or ``-funroll-loops`` added to the link leave the
partition's assembly byte-identical). So a variant of a partition is the build made again
with flags added to its LTO compiles, then linked: ``rebuild(flags, directory)``, the
caller's (project mode's is :func:`sgcc.project.partitions.rebuilder`), returns the assembly
of every partition that build's links made. This generator takes the variant partition that
defines most of the searched partition's functions and offers each function transplanted
into gcc's partition exactly as the variants generator does for a source (names, callers,
clobbers: :mod:`sgcc.candidates.transplant`). Trusted as the variants generator is: every
candidate is gcc's own code.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc import proc
from sgcc.candidates.transplant.generator import Variant, tag_for
from sgcc.candidates.transplant.side import Side
from sgcc.candidates.variants import VariantsGenerator

if TYPE_CHECKING:
    from sgcc.candidates import Context

#: ``rebuild(flags, directory) -> (the partitions' assembly texts, why the build failed or "")``.
Rebuild = Callable[[list[str], Path], tuple[list[str], str]]

#: Tried before the variants generator's list: a build at -O2 (Lua's) made at -O3.
FIRST: list[tuple[str, list[str]]] = [("O3", ["-O3"])]


def best_partition(texts: list[str], functions: set[str]) -> tuple[str | None, int]:
    """The text among ``texts`` that defines most of ``functions`` (a label alone on its
    line), and how many; (None, 0) when none defines any."""
    best, most = None, 0
    for text in texts:
        defined = sum(1 for f in functions if f"\n{f}:\n" in text)
        if defined > most:
            best, most = text, defined
    return best, most


class LtoVariantsGenerator(VariantsGenerator):
    """The variants generator for an LTO partition (see the module docstring)."""

    name = "variants"
    trusted = True  # gcc's own code

    def __init__(self, rebuild: Rebuild, sets: list[tuple[str, list[str]]] | None = None):
        super().__init__(sets)
        self.rebuild = rebuild

    def chosen(self, isa: str) -> list[tuple[str, list[str]]]:
        named = super().chosen(isa)
        return named if self.sets is not None else [s for s in FIRST if s not in named] + named

    def _prepare(self, context: Context) -> None:
        self._setup_base(context.program)
        functions = {u.name for u in context.program.asm.units}
        directory = Path(context.workdir) / "lto-variants"

        def build_one(v: Variant) -> Variant:
            where = directory / tag_for(v.name)
            where.mkdir(parents=True, exist_ok=True)
            texts, why = self.rebuild(list(v.flags), where)
            if not texts:
                v.error = f"the build with {' '.join(v.flags)} made no LTO partition: {why or 'no reason given'}"
                return v
            text, _defined = best_partition(texts, functions)
            if text is None:
                v.error = f"no partition of the build with {' '.join(v.flags)} defines a function of this one"
                return v
            asm = where / "partition.s"
            asm.write_text(text, encoding="utf-8", errors="surrogateescape")
            obj = asm.with_suffix(".o")
            r = proc.run([context.compiler, *context.program.asm_flags, "-c", "-x", "assembler", str(asm),
                          "-o", str(obj)], timeout=300)
            v.side = Side(text, obj=obj if r.ok else None)
            return v

        self.defer(context, [Variant(n, list(f)) for n, f in self.chosen(context.isa)], build_one)
