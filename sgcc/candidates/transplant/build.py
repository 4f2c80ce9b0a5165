"""The transplant itself: the variant's unit for a baseline function, with private copies of
what it relies on and the callers that must come along (see :mod:`sgcc.candidates.transplant`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from sgcc.asm import lex
from sgcc.candidates.transplant import debuginfo
from sgcc.candidates.transplant.asmtext import (
    COLD_RE,
    COMPILER_DATA_RE,
    NUMBERED_RE,
    compiler_made,
    defined_labels,
    make_local,
    references,
    rename,
    surely_aligns_calls,
)
from sgcc.candidates.transplant.side import Side


@dataclass
class Transplant:
    """A unit of the variant made fit for the baseline, or why it cannot be."""

    function: str
    text: str | None = None
    reason: str = ""
    also: dict[str, str] = field(default_factory=dict)  # callers that must come along (name -> text)
    #: of :attr:`also`, the callers that are gcc's own, compiled under ``-fno-ipa-ra``
    abi_callers: list[str] = field(default_factory=list)
    copied: list[str] = field(default_factory=list)  # private copies (variant names)
    kept: list[str] = field(default_factory=list)  # the baseline's functions it calls


class _Refuse(Exception):
    pass


class _NeedCallers(Exception):
    """The variant's unit is only right next to the variant's versions of these callers."""

    def __init__(self, callers: list[str], why: str, registers: bool = False):
        super().__init__(why)
        self.callers = callers
        self.registers = registers  # only for the registers they keep live across the call (-fipa-ra)


#: Most units one candidate may replace (the function and callers that must come along).
MAX_GROUP = 4


def _fresh(name: str, suffix: str) -> str:
    cold = COLD_RE.search(name)  # anchored at the end: the suffix stays last
    if cold:
        return name[:cold.start()] + f".{suffix}" + cold.group(0)
    return f"{name}.{suffix}"


def transplant(base: Side, var: Side, function: str, tag: str, *, ipa_ra: bool = True,
               max_group: int = MAX_GROUP, abi: Callable[[], Side | None] | None = None) -> Transplant:
    """The variant's unit for the baseline's ``function``, with private copies of whatever
    it relies on that the baseline does not provide with the same meaning (see the module
    docstring). When gcc's callers of ``function`` rely on something the variant's version
    breaks (registers kept live across the call, the stack alignment at the call), the
    variant's versions of those callers come along (:attr:`Transplant.also`), up to
    ``max_group`` units in all. ``tag`` makes the copies' names unique to this candidate.

    ``abi``, when given, returns gcc's compilation of the same file under ``-fno-ipa-ra`` (or
    None): callers that need to come along only for the registers they keep live across the
    call (``-fipa-ra``) come from there instead, gcc's own code assuming nothing of its callees
    beyond the ABI (:attr:`Transplant.abi_callers`). The variant's callers are another
    compiler's whole function where gcc's caller is the one the program's tests and proof know
    (clang's crc32 ``main`` read a stale stack slot after a failed scanf, and was refused)."""
    result = Transplant(function)
    members = [function]
    plain: list[str] = []  # callers taken from gcc's -fno-ipa-ra compilation
    while True:
        try:
            texts, copied, kept = _build(base, var, members, tag, ipa_ra, frozenset(plain))
        except _NeedCallers as exc:
            new = [c for c in exc.callers if c not in members and c not in plain]
            if exc.registers and abi is not None and new and len(members) + len(plain) + len(new) <= max_group:
                plain += new
                continue
            # Needed for another reason (how the variant's function is called): the variant's.
            new = [c for c in exc.callers if c not in members]
            plain = [c for c in plain if c not in new]
            if not new or len(members) + len(plain) + len(new) > max_group:
                result.reason = f"{exc} and too many of them would have to come along" if new else str(exc)
                return result
            members += new
            continue
        except _Refuse as exc:
            result.reason = str(exc)
            return result
        also = {m: texts[m] for m in members[1:]}
        if plain:
            # Whether the variant's code in the candidate needs an aligned stack on entry.
            aligned = any(var.needs_aligned_stack(n) for n in [*members, *copied] if n in var.units)
            fitted = _abi_callers(base, abi() if abi is not None else None, function, plain, tag, ipa_ra,
                                  max_group - len(members), set(members), aligned)
            if isinstance(fitted, str):
                # gcc's own callers cannot come: the variant's, as without ``abi``.
                fallback = transplant(base, var, function, tag, ipa_ra=ipa_ra, max_group=max_group)
                if fallback.text is None:
                    fallback.reason += f" (gcc's callers under -fno-ipa-ra: {fitted})"
                return fallback
            also.update(fitted)
            result.abi_callers = sorted(plain)
        result.text = texts[function]
        result.also = also
        result.copied, result.kept = copied, kept
        return result


def _abi_callers(base: Side, abi: Side | None, function: str, callers: list[str], tag: str, ipa_ra: bool,
                 room: int, taken: set[str], aligned: bool) -> dict[str, str] | str:
    """gcc's ``callers`` of ``function`` from its ``-fno-ipa-ra`` compilation ``abi``, fitted
    into the baseline (with what must come along with them): name -> text, or why not.
    ``aligned``: the candidate's code needs an aligned stack on entry."""
    if abi is None:
        return "that compilation failed"
    out: dict[str, str] = {}
    for i, c in enumerate(callers):
        # Room for this caller's group, one unit kept for each caller still to come.
        share = room - (len(callers) - 1 - i)
        if share < 1:
            return "too many units would have to come along"
        t = transplant(base, abi, c, f"{tag}_abi", ipa_ra=ipa_ra, max_group=share)
        if t.text is None:
            return f"{c}: {t.reason}"
        if function not in t.kept or function in t.copied:
            return f"{c} would call a copy of its own of {function}, not the candidate's"
        if aligned and not surely_aligns_calls(abi.units[c].text, abi.functions):
            # -fipa-stack-alignment holds under -fno-ipa-ra too.
            return f"{c} may call {function} with a misaligned stack (-fipa-stack-alignment)"
        group = {c: t.text, **t.also}
        if taken & set(group) or set(out) & set(group):
            return f"{c} would come along twice"
        out.update(group)
        room -= len(group)
    # The shipped callers call the candidate's function, not gcc's: what they change is not
    # what their -fno-ipa-ra compilation says. Their own callers in the baseline must keep
    # nothing live across them beyond the ABI.
    relied = _kept_live_across(base, sorted(set(out) - taken), taken | set(out))
    if relied:
        return f"gcc's callers of {', '.join(sorted(set(out) - taken))} keep {relied} live across the call (-fipa-ra)"
    return out


def _kept_live_across(base: Side, names: list[str], replaced: set[str]) -> str:
    """The caller-saved registers some caller of ``names`` in the baseline (other than
    ``replaced``) may keep live across its call, beyond the ABI: "" when none, else which
    (or that it cannot be told)."""
    from sgcc.verify.static import clobbers

    live: set[str] = set()
    for g in names:
        direct, tail = base.callers(g)
        if not [c for c in direct + tail if c not in replaced]:
            continue
        assumed = base.clobbers(g, assumed=True)
        analysis = base.clobber_analysis
        if assumed is None or analysis is None:
            return "registers the analysis cannot tell"
        try:
            live |= clobbers.live_after_calls(analysis, g, set(clobbers.ALL_CALLER_SAVED - assumed),
                                              frozenset(replaced))
        except Exception:  # noqa: BLE001 - unsure means refuse
            return "registers the analysis cannot tell"
    return ", ".join(sorted(live))


def _build(base: Side, var: Side, members: list[str], tag: str, ipa_ra: bool, plain: frozenset = frozenset()):
    function = members[0]
    for m in members:
        if m not in base.units:
            raise _Refuse(f"the baseline has no unit {m}")
        if compiler_made(m):
            raise _Refuse(f"{m} is a compiler-made clone" + (": offered through its callers" if m == function else ""))
        if m not in var.units:
            raise _Refuse(f"{m} is not a function of its own in this variant (inlined or removed)")
        if base.escaping_labels(m):
            raise _Refuse(f"labels of gcc's {m} are referenced from outside it "
                          f"({', '.join(sorted(base.escaping_labels(m))[:3])}: a label table that is writable, "
                          "used elsewhere or named by debug information, or an alias)")
    suffix = "sg_" + re.sub(r"[^\w]", "_", function) + "_" + tag
    include = list(members)  # variant units in the candidate
    copies: dict[str, str] = {}  # variant symbol -> fresh name (functions and named data)
    data_blocks: dict[str, str] = {}  # variant data symbol -> block text
    kept: set[str] = set()
    todo = list(members)
    seen_units: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen_units:
            continue
        seen_units.add(name)
        text = var.units[name].text if name in var.units else data_blocks[name]
        if "#APP" in text:
            raise _Refuse(f"{name} contains inline asm, which the screen refuses")
        refs, calls, tails = references(text)
        own = defined_labels(text)
        if name in var.units:
            # A label table that travels with its function (sgcc.asm.splitter) is named like
            # a static (``disptab.3``): the numbering is this compilation's, so it gets a fresh
            # name, as a private copy does, and never clashes with the baseline's statics.
            for sym in sorted(_object_labels(var.units[name])):
                if sym not in var.functions and not COLD_RE.search(sym):
                    copies.setdefault(sym, _fresh(sym, suffix))
        for sym in sorted(refs - own):
            parent = COLD_RE.sub("", sym)
            if sym.startswith(".L") and sym in var.alias_lines:
                # gcc merges constants: ".set .LC1,.LC0" names part of another one.
                if sym not in data_blocks:
                    data_blocks[sym] = var.alias_lines[sym]
                    todo.append(sym)
                continue
            if sym.startswith(".L"):
                block = var.data_block(sym)
                if block is None:
                    raise _Refuse(f"{name} refers to {sym}, which is not a read-only constant of the variant")
                if sym not in data_blocks:
                    data_blocks[sym] = block
                    todo.append(sym)
                continue
            if parent in members or sym in seen_units or sym in copies:
                continue  # the variant's own versions, consistent with each other
            if parent in var.units or sym in var.functions:
                unit_name = parent if parent in var.units else sym
                if unit_name in var.units and _same_in_base(base, var, unit_name):
                    kept.add(unit_name)  # byte for byte the same code, calling the same code
                    continue
                keep = (not var.own_convention(unit_name) and unit_name in base.units
                        and sym not in tails)
                if keep and sym in calls:
                    keep = _compatible_callee(base, var, unit_name, ipa_ra)
                if keep and var.local_abi and name in base.units and sym in calls | tails \
                        and unit_name not in base.reaches(name):
                    # An untrusted unit (clang's) may call only what gcc's same function
                    # reaches (the information-flow rule's `call`): where gcc inlined the
                    # callee, clang's own copy comes along instead.
                    keep = False
                if keep:
                    kept.add(unit_name)
                    continue
                if unit_name not in var.units:
                    raise _Refuse(f"{name} refers to {sym}, which is not a unit of the variant")
                if sym not in calls and sym not in tails and not compiler_made(unit_name):
                    raise _Refuse(f"{name} takes the address of {sym}, which the baseline lacks")
                copies[unit_name] = _fresh(unit_name, suffix)
                include.append(unit_name)
                todo.append(unit_name)
                continue
            if sym in var.aliases:
                if not base.defines(sym):
                    raise _Refuse(f"{name} refers to {sym}, an alias the baseline lacks")
                continue
            if sym in var.data or sym in var.commons:
                # Compiler-made constants, and (clang) a static the compilation found never
                # written and made read-only: a private copy is exact.
                private = COMPILER_DATA_RE.match(sym) or (var.local_abi and sym not in var.globals)
                if private and not var.writable(sym):
                    block = var.data_block(sym)
                    if block is None:
                        raise _Refuse(f"cannot cut {sym} out of the variant")
                    copies[sym] = _fresh(sym, suffix)
                    data_blocks[sym] = block
                    todo.append(sym)
                    continue
                if not base.defines(sym):
                    raise _Refuse(f"{name} uses {sym}, which the baseline does not define")
                block = var.object_block(sym) if sym in var.data else ""
                if block is None or any(r.startswith(".L") and r not in var.data and r not in var.alias_lines
                                        for r in references(block)[0]):
                    # A table of label addresses (computed goto) belongs to one compilation.
                    raise _Refuse(f"{name} uses {sym}, whose contents refer to code of this compilation")
                if base.writable(sym) != var.writable(sym) or (sym in base.globals) != (sym in var.globals):
                    raise _Refuse(f"{sym} is a different kind of object in the baseline")
                numbered = NUMBERED_RE.match(sym)
                if numbered and (base.numbered_siblings(numbered.group(1)) != 1
                                 or var.numbered_siblings(numbered.group(1)) != 1):
                    raise _Refuse(f"{name} uses {sym}; static locals named {numbered.group(1)}.N are ambiguous "
                                  "between the two compilations")
                continue
            # Not defined in the variant: the C library or another file.
            if sym not in base.tokens:
                from sgcc.verify.static.names import DEFAULT_ALLOWED_EXTERNALS

                if sym not in DEFAULT_ALLOWED_EXTERNALS:
                    raise _Refuse(f"{name} refers to {sym}, which the baseline does not use")
    # What gcc's remaining callers of each member assumed about it must still hold.
    needs = any(var.needs_aligned_stack(n) for n in include if n in var.units)
    for m in members:
        direct, tail = base.callers(m)
        outside = [c for c in direct + tail if c not in members]
        if var.own_convention(m):
            # clang's static m may take other arguments or return nothing under its source
            # name: only clang's own callers know how to call it.
            if m in base.address_taken():
                raise _Refuse(f"gcc's code takes the address of {m}, and the variant's {m} may be called "
                              "otherwise than a pointer call does (its address is not taken there)")
            if outside:
                raise _NeedCallers(outside, f"the variant's {m} has internal linkage and may be called "
                                            "otherwise than gcc's (arguments dropped or promoted)")
        # -fipa-stack-alignment: a caller may call a function that needs no aligned stack
        # with a misaligned one.
        if needs and not surely_aligns_calls(base.units[m].text, base.functions):
            if [c for c in tail if c not in members] or \
                    not all(surely_aligns_calls(base.units[c].text, base.functions) for c in outside):
                raise _NeedCallers(outside, f"the variant's {m} may need an aligned stack, and gcc's callers "
                                            "may call it with a misaligned one (-fipa-stack-alignment)")
        # -fipa-ra: callers keep values in registers gcc's version leaves alone.
        if ipa_ra:
            # ``plain``: gcc's callers compiled under -fno-ipa-ra, which keep nothing live across it.
            extra = _extra_clobbers(base, var, m, frozenset(members) | plain)
            if extra:
                raise _NeedCallers([c for c in outside if c not in plain],
                                   f"the variant's {m} changes {', '.join(extra)}, which gcc's callers "
                                   "keep live across the call (-fipa-ra)", registers=True)
    texts = {}
    for m in members:
        text = rename(var.units[m].text, copies)
        if m == function:
            parts = [text] + [rename(make_local(var.units[n].text, n), copies) for n in include if n not in members]
            parts += [rename(block, copies) for _sym, block in sorted(data_blocks.items())]
            text = "".join(p if p.endswith("\n") else p + "\n" for p in parts)
        if base.has_debug or var.has_debug:
            # -g: the variant's line table in gcc's file numbering, gcc's debug labels defined.
            try:
                text = debuginfo.stitch(text, m, base.debug_labels(m), base.units[m].text,
                                        var.file_table, base.file_table)
            except ValueError as exc:
                raise _Refuse(f"debug information: {exc}") from exc
        texts[m] = text
    clash = set(copies.values()) & (base.tokens | set(base.units))
    if clash:
        raise _Refuse(f"fresh names clash with the baseline's: {', '.join(sorted(clash))}")
    return texts, sorted(copies), sorted(kept)


def _object_labels(unit) -> set[str]:
    """Named (not ``.L``) labels a unit defines: its function's names and the label tables
    that travel with it."""
    out: set[str] = set()
    for line in lex.split_lines(unit.text):
        out.update(lab for lab in lex.analyze(line)[0] if not lab.startswith(".L"))
    return out


def _same_in_base(base: Side, var: Side, name: str) -> bool:
    """Whether the baseline's unit ``name`` is the variant's, text for text, and so is
    everything it reaches (functions, constants): then calling the baseline's is calling
    the variant's, whatever the name means (clones included)."""
    if name not in var.same_as_base:
        var.same_as_base[name] = _closure_identical(base, var, name)
    return var.same_as_base[name]


def _closure_identical(base: Side, var: Side, name: str) -> bool:
    todo, seen = [name], set()
    while todo:
        unit = todo.pop()
        if unit in seen:
            continue
        seen.add(unit)
        if unit not in base.units or unit not in var.units or base.units[unit].text != var.units[unit].text:
            return False
        text = var.units[unit].text
        for ref in sorted(references(text)[0] - defined_labels(text)):
            parent = COLD_RE.sub("", ref)
            if ref.startswith(".L") and ref in var.alias_lines:
                if var.alias_lines[ref] != base.alias_lines.get(ref):
                    return False
                targets = [r for r in references(var.alias_lines[ref])[0] if r.startswith(".L")]
                if any(var.data_block(r) is None or var.data_block(r) != base.data_block(r) for r in targets):
                    return False
            elif ref.startswith(".L") or (ref in var.data and COMPILER_DATA_RE.match(ref)):
                block = var.data_block(ref)
                if block is None or block != base.data_block(ref):
                    return False
            elif parent in var.units:
                todo.append(parent)
    return True


def _compatible_callee(base: Side, var: Side, callee: str, ipa_ra: bool) -> bool:
    """Whether the variant's callers may call the baseline's ``callee`` in its place."""
    if var.callers_assume_abi:
        return True  # no interprocedural assumption beyond the ABI, which gcc's callee keeps
    if base.needs_aligned_stack(callee) and not surely_aligns_calls(var.units[callee].text, var.functions):
        return False
    if ipa_ra and not var.no_ipa_ra:
        # What the baseline's callee may write must be within what the variant's callers
        # assumed their callee writes.
        b, v = base.clobbers(callee), var.clobbers(callee, assumed=True)
        if b is None or v is None or not b <= v:
            return False
    return True


def _extra_clobbers(base: Side, var: Side, function: str, replaced=frozenset()) -> list[str]:
    """Registers the variant's ``function`` may change that gcc's does not and that a
    caller in the baseline (other than ``replaced``) may need after the call: the engine's
    own check, done early."""
    from sgcc.verify.static import clobbers

    b, v = base.clobbers(function, assumed=True), var.clobbers(function)
    if b is None:
        return []  # the engine decides
    if v is None:
        v = clobbers.ALL_CALLER_SAVED
    extra = set(v - b)
    analysis = base.clobber_analysis  # made by base.clobbers() above, which answered
    if extra and analysis is not None:
        try:
            extra = clobbers.live_after_calls(analysis, function, extra, replaced)
        except Exception:  # noqa: BLE001 - unsure: leave it to the engine
            return []
    return sorted(extra)
