"""``sgcc cache verify``: re-prove what every cache entry would make a build assemble.

Nothing is taken on the entry's own word. For an entry with winners, the recorded baseline
must be gcc's assembly for this very entry (its digest and the recorded context give the
entry's key), the substitution is built exactly as a compile builds it, and the result goes
through the checks ``sgcc optimize`` runs on a candidate: the text screen of every unit
(names the program may define come from gcc's assembly, not from the entry), assembly with
limits, the object checks and the control-flow proof against gcc's own object, with every
substituted unit held to the information-flow rule of untrusted candidates
(:mod:`sgcc.verify.static.infoflow`): an entry cannot say who wrote it. Entries that
no trusted key signed are reported (builds ignore them); entries that fail are removed.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sgcc.cache.store import Store

#: A section of LTO's intermediate language, as gcc's assembly under ``-flto`` names it.
_LTO_SECTION = re.compile(r"^\s*\.section\s+\.gnu\.lto_", re.M)


def audit(store: Store, key: str, *, compiler: str = "gcc") -> tuple[str, str]:
    """``(status, detail)`` for one entry: ``ok``, ``untrusted``, ``corrupt`` or ``refused``."""
    from sgcc.asm import WHOLE_UNIT
    from sgcc.cache import keys

    entry = store.get(key)
    if entry is None:
        return ("untrusted", store.untrusted) if store.untrusted else ("corrupt", "unreadable or corrupt")
    applied = entry.applied
    if applied is None or not applied.units:
        return "ok", "no winners"
    units = applied.units
    base_asm, ctx, flags = applied.baseline, applied.context, applied.asm_flags
    if base_asm is None or ctx is None or flags is None:
        return "refused", "no recorded baseline: what it substitutes cannot be re-proved"
    if keys.entry_key(ctx, keys.tu_digest(base_asm)) != key:
        return "refused", "its baseline is not the assembly this entry is keyed on"
    if WHOLE_UNIT in units and _LTO_SECTION.search(units[WHOLE_UNIT]):
        # A project's LTO build (sgcc.project.whole.LTO): the code it ships is made at link
        # time, in the link's partitions, where no proof of one object reaches; the project's
        # tests were its proof. Not re-provable here, so not kept on the entry's word.
        return "refused", ("a compile of an LTO build (its code is made at link time, which no per-object proof "
                           "reaches): it cannot be re-proved here; sgcc optimize --project makes it again")
    from sgcc.asm.units import AsmFile
    from sgcc.verify.static import assembler, controlflow, isa, objcheck, textscreen

    try:
        base = AsmFile.parse(base_asm)
        text = applied.join(base_asm)  # exactly as a build substitutes it
    except (KeyError, ValueError) as exc:
        return "refused", f"its units do not fit gcc's assembly ({exc})"
    defined = frozenset(u.name for u in base.units)
    # Common symbols (.comm) are writable storage the screen refuses in a candidate; gcc's
    # own, line for line as in the baseline, are what the program already has.
    own_common = {ln for ln in base_asm.splitlines() if ln.lstrip().startswith((".comm", ".lcomm"))}
    for name, unit in units.items():
        screened = "\n".join(ln for ln in unit.splitlines() if ln not in own_common)
        verdict = textscreen.screen_text(screened, may_define=defined)
        if not verdict.ok:
            return "refused", f"{name}: {verdict.reason}"
    with tempfile.TemporaryDirectory(prefix="sgcc-audit-") as tmp:
        work = Path(tmp)
        (work / "base.s").write_text(base_asm, encoding="utf-8", errors="surrogateescape")
        (work / "cand.s").write_text(text, encoding="utf-8", errors="surrogateescape")
        for name in ("base", "cand"):
            verdict = assembler.assemble(work / f"{name}.s", work / f"{name}.o", gcc=compiler, flags=flags)
            if not verdict.ok:
                what = "gcc's assembly" if name == "base" else "the substitution"
                return "refused", f"{what} does not assemble: {verdict.reason}"
        native = ctx.get("isa") == "native"
        target = isa.native_target(compiler) if native else isa.target_from_flags(compiler, flags)
        for check in (lambda: objcheck.check_object(work / "cand.o", work / "base.o", isa=target),
                      # Every unit is held to the information-flow rule: nothing in the entry
                      # can vouch that gcc wrote it (who wrote the entry, which generator), and
                      # one written by another user or a model is an untrusted candidate.
                      lambda: controlflow.verdict(work / "cand.o", work / "base.o",
                                                  True if WHOLE_UNIT in units else frozenset(units))):
            verdict = check()
            if not verdict.ok:
                return "refused", f"{verdict.stage}: {verdict.reason}"
    return "ok", f"{len(units)} unit(s) re-proved"
