"""Candidate generators: where replacement function units come from.

A generator proposes :class:`Candidate` texts for a function unit; the engine
(:mod:`sgcc.engine.optimize`) screens, builds, tests and times every one of them the same way,
whatever produced it. Generators are asked in rounds so that iterative ones (a model
refining its last attempt) see what happened to their earlier candidates; a generator says
it is done by proposing nothing.

Optional hooks a generator may define (the engine calls them when present):

- ``prepare(context)`` once, after the baseline is built and the tests are recorded, before
  round 0 (``context`` is a :class:`Context`): for work shared by every unit, such as
  compiling the whole translation unit under other flags or a profiling build;
- ``unmatched(names)``: candidates for functions the program lacks (refused up front);
- ``close()`` when the run ends, successful or not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

#: ``Candidate.function`` for a candidate that replaces the whole translation unit's assembly
#: (offered when a variant's functions cannot be transplanted one by one).
WHOLE_UNIT = "<translation-unit>"


@dataclass
class Candidate:
    """One proposed replacement for one function unit.

    ``skip`` set to a reason means "nothing to offer, and here is why" (a prompt that does
    not fit the model's context, a generator error): the engine records it in the report at
    stage ``skipped`` without building anything. ``meta`` holds small JSON-able facts the
    report keeps (tokens, tokens/s, seconds of generation, the flags of a variant...).
    ``invalid`` set to a reason means "this is not assembly at all" (a model's answer with no
    assembly in it, or prose around it): the engine refuses it at stage ``check`` with that
    reason, without building; ``text`` is then the raw answer (so repeats are recognized).
    """

    function: str
    generator: str
    text: str
    origin: str = ""  # where it came from: a file, "sample 2, round 1", a flag set...
    id: str = ""  # short identifier assigned by the engine (c001, c002...)
    meta: dict = field(default_factory=dict)
    skip: str = ""
    #: Other units replaced together with ``function`` (name -> text): a variant's function
    #: may only be right next to its own callers (they keep values in registers it leaves
    #: alone, or align the stack for it). The engine builds, tests and times them as one.
    also: dict = field(default_factory=dict)

    def replacements(self) -> dict[str, str]:
        """Every unit this candidate replaces, ``function`` first."""
        return {self.function: self.text, **self.also}
    invalid: str = ""


@dataclass
class Attempt:
    """One earlier candidate and what became of it (an entry of a generator's history)."""

    candidate: Candidate
    result: object  # sgcc.engine.report.CandidateResult: stage, reason, detail, speedup...


@dataclass
class Context:
    """What ``prepare`` hooks get: the baseline, the tests, and the engine's facilities.

    ``sandbox`` runs binaries safely (:class:`sgcc.verify.sandbox.Sandbox`), ``tests`` are the
    recorded :class:`sgcc.verify.sandbox.TestCase` list, ``workdir`` is a private directory for the
    generator, ``compiler`` the real gcc, ``note`` updates the progress display.
    """

    program: object
    sandbox: object
    tests: list
    workdir: object
    compiler: str
    isa: str
    note: object = None
    jobs: int = 1


class Generator(Protocol):
    """What the engine needs from a candidate source."""

    name: str

    def propose(self, program: "object", unit: "object", round_no: int, history: list[Attempt]) -> list[Candidate]:
        """Candidates for ``unit`` in round ``round_no`` given the outcomes of earlier ones.

        ``program`` is the :class:`sgcc.engine.optimize.Program` being optimized (source text, flags,
        baseline assembly, function weights); ``history`` holds this generator's earlier
        :class:`Attempt` s for the unit, oldest first. Return ``[]`` when there is nothing more
        to try. A candidate for the whole translation unit (``function=WHOLE_UNIT``, the full
        assembly text) may be returned from any call; the engine budgets it as the hottest unit.
        """
        ...
