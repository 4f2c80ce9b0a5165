"""What project mode stores in the cache besides the engine's verdicts, and what it withdraws.

The engine stores each searched compile's verdicts and winners (:mod:`sgcc.engine.verdicts`).
Project mode adds, as typed entries (:mod:`sgcc.cache.entry`):

* :func:`store_siblings`: a winner found on one compile of a source applies to its other
  modes too (static and PIC: its candidate builds substituted it there, and the test command
  ran them), stored under every mode's key with that mode's own baseline and context;
* :func:`store_whole`: each compile's text of the adopted whole-project candidate
  (:mod:`sgcc.project.adopt`), the winners proven against it joined in, as a whole unit under
  the compile's key, naming the variant's flags and its profile's digest: a plain
  ``make CC=sgcc`` then rebuilds the tree that was tested and timed;
* :func:`withdraw`: when the rebuilt tree fails its tests, every winner this run stored.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sgcc.cache.entry import Applied, Entry
    from sgcc.project.plan import Target
    from sgcc.project.state import ProjectRun


def _applying(source: str | None, applied: Applied | None, old: Entry | None) -> Entry:
    """``old`` (or a new entry) with ``applied`` as what builds substitute (None: nothing),
    and ``source`` as its source when given: an update of a project compile's entry, dated
    now (``sgcc cache list`` shows when each entry last changed)."""
    import time

    from sgcc.cache.entry import Entry

    entry = old or Entry()
    if source is not None:
        entry.source = source
    entry.applied = applied
    entry.updated = time.strftime("%Y-%m-%dT%H:%M:%S")
    return entry


def store_siblings(run: ProjectRun, targets: list[Target]) -> None:
    """Each searched compile's winners stored under its source's other modes too."""
    from sgcc.gcc import args as gccargs

    if not run.tmpl.cache_dir:
        return
    store = run.tmpl.cache_store()
    groups = {t.searched.key: t.group for t in targets}
    for unit in run.report.units:
        if not unit["honest"].get("functions"):
            continue
        entry = store.get(unit["key"])
        applied = entry.applied if entry is not None else None
        if applied is None or applied.whole:
            continue
        for c in groups.get(unit["key"], []):
            if c.key == unit["key"]:
                continue
            text = run.text(c)
            try:
                applied.join(text)
            except KeyError:
                continue
            sibling = applied.but(baseline=text, context=c.context, mode_of=unit["key"],
                                  asm_flags=gccargs.parse(c.args).flags_without_inputs(drop_dependency_flags=True))
            store.update(c.key, functools.partial(_applying, str(c.source), sibling))


def store_whole(run: ProjectRun) -> None:
    """The adopted whole-project candidate's texts, as whole units under each compile's key."""
    from sgcc.asm import WHOLE_UNIT
    from sgcc.cache.entry import Applied
    from sgcc.gcc import args as gccargs

    adopted = run.adopted
    if adopted is None or not adopted.texts or not run.tmpl.cache_dir:
        return
    store = run.tmpl.cache_store()
    compiles = {c.key: c for c in run.compiles}
    variant = adopted.variant
    timed = (run.report.whole_project or {}).get("timing", {})
    for key, text in adopted.texts.items():
        c = compiles[key]
        entry = store.get(key)
        found = entry.applied if entry is not None else None
        functions: list[str] = []
        if found is not None and found.baseline == text:
            # Winners found against the variant's text (this run's search): joined into it, or
            # replacing it when the winner is the whole unit (pgowin: a whole-unit winner
            # reported shipped at 1.083x over PGO everywhere was left out, and the tree built
            # was PGO everywhere's code byte for byte).
            text = found.join(text)
            functions = sorted(found.units)
        applied = Applied({WHOLE_UNIT: text}, generator=variant.generator, flags=list(variant.flags),
                          profile_sha256=adopted.digests.get(key, "") if variant.profile else None,
                          functions=functions,
                          baseline=c.asm_path.read_text(encoding="utf-8", errors="surrogateescape"),
                          context=c.context,
                          asm_flags=gccargs.parse(c.args).flags_without_inputs(drop_dependency_flags=True),
                          speedup=timed.get("speedup"), low=timed.get("low"), high=timed.get("high"))
        store.update(key, functools.partial(_applying, str(c.source), applied))


def withdraw(run: ProjectRun) -> None:
    """Every winner this run stored, withdrawn (the entries keep their verdicts)."""
    if not run.tmpl.cache_dir:
        return
    report = run.report
    store = run.tmpl.cache_store()
    keys = [k for u in report.units for k in u.get("keys", [u["key"]])] + list(run.adopted.texts if run.adopted else {})
    if report.whole_project and report.whole_project.get("adopted"):
        report.whole_project["withdrawn"] = True
    for key in keys:
        store.update(key, functools.partial(_applying, None, None))
