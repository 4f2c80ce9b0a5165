"""The verdict cache as the search uses it: what an earlier search of the same program
already settled, and what this one found.

A cache entry is keyed by the program (its translation unit's assembly and how it is
compiled); inside it, each function keeps one verdict per *search* (the tests, the
generators' configuration and the minimum gain). Cached winners are never trusted: they
are offered to the search again and re-validated like any candidate.
"""

from __future__ import annotations

import shutil
import time
from typing import TYPE_CHECKING

from sgcc.candidates import Candidate
from sgcc.engine.report import Report
from sgcc.engine.request import Program, Request

if TYPE_CHECKING:
    from sgcc.verify.box.sandbox import TestCase


class Verdicts:
    """The cache's verdicts for one run: ``search_key`` identifies this search; ``settled``
    are the functions this very search already proved a winner for (only that winner is
    re-validated, nothing else is searched); ``entry_key`` is the program's cache entry
    (``None`` without a cache)."""

    def __init__(self, request: Request, program: Program, tests: list[TestCase]):
        from sgcc.cache import keys

        self.req = request
        self.program = program
        self.search_key = keys.search_key(keys.tests_digest(tests), request.generator_config, request.min_gain)
        self.settled: set[str] = set()
        self.entry_key: str | None = None
        self.context: dict | None = None
        if request.cache_dir:
            self.entry_key = self._entry_key()

    def _entry_key(self) -> str:
        from sgcc.cache import keys

        if self.program.cache_key:
            self.context = self.program.cache_context
            return self.program.cache_key
        compiler = shutil.which(self.req.compiler) or self.req.compiler
        self.context = keys.context(compiler, self.program.asm_flags, self.req.isa)
        return keys.entry_key(self.context, keys.tu_digest(self.program.asm_text))

    def lookup(self, report: Report) -> list[Candidate]:
        """Seed the search from the cache: functions this very search already settled are not
        searched again (``settled``, or a "no candidate proven faster" note in the report);
        cached winners are returned to be offered again (re-validated, never trusted)."""
        if not self.req.cache_dir or self.entry_key is None:
            return []
        store = self.req.cache_store()
        report.cache = {"key": self.entry_key, "search": self.search_key, "dir": store.root}
        entry = store.get(self.entry_key, touch=True)
        if entry is None:
            report.cache["found"] = False
            return []
        report.cache["found"] = True
        seeded: list[Candidate] = []
        texts: set[tuple[str, str]] = set()
        for fn, verdicts in entry.functions.items():
            for skey, verdict in verdicts.items():
                winner = verdict.winner
                if skey == self.search_key and not self.req.refresh and verdict.complete:
                    if winner:
                        self.settled.add(fn)  # its cached winner is re-validated, nothing else searched
                    else:
                        report.skipped_functions.setdefault(
                            fn, f"cached verdict from {verdict.date or '?'}: no candidate proven faster "
                                "(--refresh searches again)")
                if winner is not None and (fn, winner) not in texts:
                    texts.add((fn, winner))
                    seeded.append(Candidate(fn, "cache", winner, also=dict(verdict.also),
                                            origin=f"cache {self.entry_key[:12]} ({verdict.generator or '?'})",
                                            meta={"cached_speedup": verdict.speedup,
                                                  "cached_from": verdict.generator or "?"}))
        return seeded

    def store(self, report: Report, shipped: list, confirmed: dict[str, Candidate],
              searched: dict[str, bool]) -> None:
        """Record this search's verdicts and what to substitute (the validated combination).
        ``searched`` says per function whether its search was complete (a function cut short
        by the budget or a failing generator gets no "nothing faster" verdict)."""
        from sgcc.cache.entry import Applied, Entry, Verdict

        if not self.req.cache_dir or self.entry_key is None:
            return
        store = self.req.cache_store()
        now = time.strftime("%Y-%m-%dT%H:%M:%S")
        shipped_fns = {r.function for r in shipped}
        by_fn = {r.function: r for r in shipped}

        def change(old: Entry | None) -> Entry:
            entry = old or Entry()
            entry.source = str(self.req.source)
            entry.updated = now
            for fn in sorted(set(searched) | shipped_fns):
                complete = searched.get(fn, True)
                if fn in shipped_fns:
                    res = by_fn[fn]
                    cached = res.generator == "cache"
                    generator = res.meta.get("cached_from", res.generator) if cached else res.generator
                    verdict = Verdict(confirmed[fn].text, also=dict(confirmed[fn].also or {}), generator=generator,
                                      speedup=res.speedup, low=res.ci_low, high=res.ci_high)
                else:
                    verdict = Verdict(None)
                verdict.complete, verdict.date = complete, now
                verdict.min_gain, verdict.generators = self.req.min_gain, self.req.generator_config
                entry.record(fn, self.search_key, verdict)
            if shipped:
                # A winner may replace its callers too (Candidate.also): apply all of it.
                units = {k: v for fn in shipped_fns for k, v in confirmed[fn].replacements().items()}
                final = report.final or {}
                # What `sgcc cache verify` needs to re-prove exactly what builds substitute:
                # gcc's assembly (its digest is in the key) and the context the key was made in.
                entry.applied = Applied(units, search=self.search_key, date=now, speedup=final.get("speedup"),
                                        low=final.get("low"), high=final.get("high"),
                                        baseline=self.program.asm_text, context=self.context,
                                        asm_flags=list(self.program.asm_flags))
            else:
                entry.applied = None  # the latest search decides: nothing proven, nothing applied
            return entry

        store.update(self.entry_key, change)
        report.cache["stored"] = True
