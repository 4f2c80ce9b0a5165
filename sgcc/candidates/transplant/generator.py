"""Compiling the program under other flags, and the generator base that offers the units of
those compilations (transplanted, or the whole translation unit) as candidates."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from sgcc import proc
from sgcc.candidates import WHOLE_UNIT, Candidate, Generator
from sgcc.candidates.transplant.asmtext import compiler_made, normalized, references
from sgcc.candidates.transplant.build import Transplant, transplant
from sgcc.candidates.transplant.side import Side

if TYPE_CHECKING:
    from sgcc.asm.units import Unit
    from sgcc.candidates import Attempt, Context, ProgramView

T = TypeVar("T")


@dataclass
class Variant:
    """One compilation of the program's source under other flags."""

    name: str  # short, for origins and fresh names ("unroll", "pgo")
    flags: list[str]  # flags added to the baseline's
    side: Side | None = None
    error: str = ""
    shown: list[str] | None = None  # the flags as reports show them (without temporary paths)
    #: function -> transplant, filled lazily
    transplants: dict[str, Transplant] = field(default_factory=dict)


def tag_for(name: str) -> str:
    """A short name-safe tag for a variant, unique by its name (fresh names, file stems)."""
    return re.sub(r"[^\w]", "_", name)[:24] + hashlib.sha1(name.encode()).hexdigest()[:4]


def compile_variant(context: Context, variant: Variant, directory: Path, *, stem: str | None = None,
                    timeout: float = 300) -> Variant:
    """``gcc <baseline flags> <variant flags> -S`` of the program, then its object (for the
    clobber analysis). Sets ``variant.side`` or ``variant.error``. ``stem`` names the output
    (``-fprofile-use`` finds the profile by it)."""
    program = context.program
    directory.mkdir(parents=True, exist_ok=True)
    asm = directory / f"{stem or tag_for(variant.name)}.s"
    obj = asm.with_suffix(".o")
    source = program.source_arg or str(program.source)
    r = proc.run([context.compiler, *program.flags, *variant.flags, "-S", "-o", str(asm.resolve()), source],
                 timeout=timeout, cwd=program.compile_cwd)
    if not r.ok:
        lines = [ln for ln in r.stderr.decode(errors="replace").splitlines() if "error" in ln.lower()]
        variant.error = "gcc failed: " + ("; ".join(lines[:2])[:300] or f"exit {r.returncode}")
        return variant
    text = asm.read_text(encoding="utf-8", errors="surrogateescape")
    r = proc.run([context.compiler, *program.asm_flags, "-c", "-x", "assembler", str(asm), "-o", str(obj)],
                 timeout=timeout)
    variant.side = Side(text, obj=obj if r.ok else None)
    return variant


def parallel(context: Context) -> int:
    """How many compilations a generator runs at once: the engine's ``-j``."""
    return max(1, context.jobs or 1)


def compile_each(context: Context, variants: list[T], compile_one: Callable[[T], Variant]) -> list[Variant]:
    """``compile_one(v)`` for each of ``variants`` (variants, or what names one: a flag
    search's genomes), ``context.jobs`` at a time."""
    if len(variants) <= 1:
        return [compile_one(v) for v in variants]
    with ThreadPoolExecutor(max_workers=parallel(context)) as pool:
        return list(pool.map(compile_one, variants))


class TransplantGenerator(Generator):
    """Shared behaviour of generators that offer units of other compilations.

    Subclasses fill :attr:`variants` in ``prepare``, or (:meth:`defer`) name the variants
    there and let them compile as the search asks: ``step`` of them per round, most promising
    first, so the first candidates are built and timed before the later variants are even
    compiled (compiling them all up front outlasted a project source's share of the budget),
    and the budget, which the engine checks before each ``propose``, decides how many get
    compiled at all. Those never compiled are :meth:`left_over` (reported as cut).

    For a baseline unit the generator offers, from each variant, the transplanted unit when its
    code differs from gcc's; for a clone of the baseline (offered through its callers) the
    transplanted callers. When a searched unit cannot be transplanted, the whole variant
    translation unit is offered once (if it would pass the engine's text screen).
    """

    name = "variants"
    trusted = True  # gcc's own code
    #: callers that must come along only for -fipa-ra come from gcc under -fno-ipa-ra (see
    #: :func:`~sgcc.candidates.transplant.build.transplant`), not from the variant
    abi_callers = False
    #: offer every variant as a whole translation unit too (not only as a fallback)
    whole_always = False
    #: offer the whole file before the per-function units (a profile's whole-file layout is
    #: where the measured gain is)
    whole_first = False

    def __init__(self):
        self.variants: list[Variant] = []
        self.pending: list[Variant] = []  # named, not compiled yet (see defer)
        self.step = 1
        self._compile_one: Callable[[Variant], Variant] | None = None
        self._compiled_rounds = 0
        self.base: Side | None = None
        self.notes: list[str] = []
        self._whole_offered: set[str] = set()
        self._ipa_ra = True
        self._context: Context | None = None  # the run's, kept by defer for the later rounds
        self._abi: list[Side | None] = []  # gcc's compilation under -fno-ipa-ra, once asked for

    def prepare(self, context: Context) -> None:
        """:meth:`_prepare`, which subclasses implement; when it fails the generator offers
        nothing and says why (once, as a skipped candidate), and the run goes on."""
        try:
            self._prepare(context)
        except Exception as exc:  # noqa: BLE001 - offer nothing, say why; the run goes on
            self.base, self.variants = None, []
            self.notes.append(f"{self.name}: {type(exc).__name__}: {exc}")

    def _prepare(self, context: Context) -> None:
        """Set the baseline (:meth:`_setup_base`) and the variants (or :meth:`defer` them)."""
        raise NotImplementedError

    def defer(self, context: Context, variants: list[Variant], compile_one: Callable[[Variant], Variant]) -> None:
        """Compile ``variants`` lazily: ``context.jobs`` of them (``step``) when round k is
        first asked for, in the given order, with ``compile_one(variant) -> variant``."""
        self.pending = list(variants)
        self._compile_one = compile_one
        self._context = context
        self.step = parallel(context)
        self.rounds = max(1, -(-len(self.pending) // self.step))

    def waiting(self) -> bool:
        return bool(self.pending) and self.base is not None

    def left_over(self) -> list[Variant]:
        """The variants never compiled (the search ended before it asked for them)."""
        return list(self.pending) if self.base is not None else []

    def _advance(self, round_no: int) -> None:
        """Compile the variants of rounds up to ``round_no`` not compiled yet."""
        compile_one, context = self._compile_one, self._context
        while compile_one is not None and context is not None and self._compiled_rounds <= round_no and self.pending:
            chunk, self.pending = self.pending[:self.step], self.pending[self.step:]
            if context.note:
                context.note(f"{self.name}: compiling {', '.join(v.name for v in chunk)}")
            done = compile_each(context, chunk, compile_one)
            self.variants.extend(done)
            self._compiled_rounds += 1
        self._compiled_rounds = max(self._compiled_rounds, round_no + 1)

    def _setup_base(self, program: ProgramView) -> None:
        # One generator serves every source of a project in turn: nothing of the last
        # program's compilations may be offered for this one.
        self.variants, self.pending, self._compile_one, self._compiled_rounds = [], [], None, 0
        self._whole_offered = set()
        self.base = Side(program.asm_text, obj=Path(program.obj), asm=program.asm)
        self._ipa_ra = "-fno-ipa-ra" not in program.flags
        self._abi = []

    def _abi_side(self) -> Side | None:
        """gcc's compilation of the program under ``-fno-ipa-ra`` (its callers assume the ABI
        of every callee), compiled the first time a transplant asks; None when it fails."""
        if not self._abi:
            side = None
            if self._context is not None:
                v = compile_variant(self._context, Variant("no-ipa-ra", ["-fno-ipa-ra"]),
                                    Path(self._context.workdir) / "no-ipa-ra")
                side = v.side
                if side is not None:
                    side.no_ipa_ra = True
            self._abi = [side]
        return self._abi[0]

    @staticmethod
    def _roots(base: Side, unit_name: str) -> list[str]:
        """Non-clone units of the baseline ``base`` whose code reaches clone ``unit_name``."""
        if not compiler_made(unit_name):
            return [unit_name]
        found: list[str] = []
        todo, seen = [unit_name], set()
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            for u in base.asm.units:
                if u.name != n and n in references(u.text)[0]:
                    (todo if compiler_made(u.name) else found).append(u.name)
        return sorted(set(found))

    def propose(self, program: ProgramView, unit: Unit, round_no: int, history: list[Attempt]) -> list[Candidate]:
        if self.base is None:  # preparation failed: say why, once
            if round_no > 0:
                return []
            notes, self.notes = self.notes, []
            return [Candidate(unit.name, self.name, "", origin=self.name, skip=n) for n in notes]
        if round_no >= max(1, self.rounds):
            return []
        try:
            if self._compile_one is not None:
                self._advance(round_no)
            return self._propose(program, unit)
        except Exception as exc:  # noqa: BLE001 - a generator's bug must not end the run
            return [Candidate(unit.name, self.name, "", origin=self.name,
                              skip=f"{self.name} failed on {unit.name}: {type(exc).__name__}: {exc}")]

    def _prepared(self) -> Side:
        """The baseline, which :meth:`prepare` set (callers check :attr:`base` first)."""
        if self.base is None:
            raise RuntimeError(f"{self.name}: asked for candidates without a prepared baseline")
        return self.base

    def _propose(self, program: ProgramView, unit: Unit) -> list[Candidate]:
        base = self._prepared()
        out: list[Candidate] = []
        base_norm = {}
        for root in self._roots(base, unit.name):
            if root not in base.units:
                continue
            base_norm[root] = normalized(base.units[root].text)
        offered: set[str] = set()
        for variant in self.variants:
            shown = variant.shown if variant.shown is not None else variant.flags
            if self.whole_first and variant.side is not None:
                whole = self._whole(program, variant, {"flags": list(shown), "variant": variant.name},
                                    f"{self.name} {variant.name}: {' '.join(shown)} (whole file)")
                if whole is not None:
                    out.append(whole)
            if variant.side is None:
                if variant.error and variant.name not in self._whole_offered:
                    self._whole_offered.add(variant.name)  # say it once
                    out.append(Candidate(unit.name, self.name, "", origin=f"{self.name} {variant.name}: "
                                         f"{' '.join(shown)}", meta={"flags": list(shown)}, skip=variant.error))
                continue
            for root in base_norm:
                if root in variant.transplants:
                    continue  # offered (or explained) already, for this unit or another clone of it
                abi = self._abi_side if self.abi_callers and self._ipa_ra else None
                t = variant.transplants[root] = transplant(base, variant.side, root, tag_for(variant.name),
                                                           ipa_ra=self._ipa_ra, abi=abi)
                meta = {"flags": list(shown), "variant": variant.name}
                origin = f"{self.name} {variant.name}: {' '.join(shown)}"
                if t.text is None:
                    if root in variant.side.units and normalized(variant.side.units[root].text) == base_norm[root]:
                        continue
                    out.append(Candidate(root, self.name, "", origin=origin, meta=meta, skip=t.reason))
                    whole = self._whole(program, variant, meta, origin)
                    if whole is not None:
                        out.append(whole)
                    continue
                norm = normalized(t.text) + "".join(f"\0{k}\0{normalized(v)}" for k, v in sorted(t.also.items()))
                if (not t.also and norm == base_norm[root]) or norm in offered:
                    continue
                offered.add(norm)
                if t.copied:
                    meta["copied"] = t.copied
                if t.also:
                    meta["with"] = sorted(t.also)
                if t.abi_callers:
                    # gcc's own callers, compiled so that they keep nothing live across the call.
                    meta["with_gcc_no_ipa_ra"] = t.abi_callers
                    origin += f" with gcc's {', '.join(t.abi_callers)} (-fno-ipa-ra)"
                out.append(Candidate(root, self.name, t.text, origin=origin, meta=meta, also=dict(t.also)))
            if self.whole_always and not self.whole_first:
                whole = self._whole(program, variant, {"flags": list(shown), "variant": variant.name},
                                    f"{self.name} {variant.name}: {' '.join(shown)} (whole file)")
                if whole is not None:
                    out.append(whole)
        return out

    def _whole(self, program: ProgramView, variant: Variant, meta: dict, origin: str) -> Candidate | None:
        """The variant as a whole translation unit, once per variant; None when already
        offered or the engine's screen would refuse it anyway."""
        if variant.name in self._whole_offered:
            return None
        self._whole_offered.add(variant.name)
        from sgcc.candidates.transplant.wholefile import whole_file_text
        from sgcc.verify.static import textscreen

        meta = dict(meta, whole=True)
        origin = origin if origin.endswith("(whole file)") else origin + " (whole file)"
        # The file's variables stay gcc's: the variant's code with gcc's writable data.
        assert variant.side is not None  # callers offer only compiled variants as whole files
        text, why = whole_file_text(self._prepared(), variant.side)
        if text is None:
            return Candidate(WHOLE_UNIT, self.name, "", origin=origin, meta=meta,
                             skip=f"whole file not offered: {why}")
        if text == program.asm_text:
            return None
        verdict = textscreen.screen_text(text, may_define=program.defined, writable_data=True)
        if not verdict.ok:
            return Candidate(WHOLE_UNIT, self.name, "", origin=origin, meta=meta,
                             skip=f"whole file not offered: the screen refuses it ({verdict.reason})")
        return Candidate(WHOLE_UNIT, self.name, text, origin=origin, meta=meta)
