"""Candidate generators: where replacement function units come from.

A generator proposes :class:`Candidate` texts for a function unit; the engine
(:mod:`sgcc.optimize`) screens, builds, tests and times every one of them the same way,
whatever produced it. Generators are asked in rounds so that iterative ones (a model
refining its last attempt) see what happened to their earlier candidates; a generator says
it is done by proposing nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass
class Candidate:
    """One proposed replacement for one function unit."""

    function: str
    generator: str
    text: str
    origin: str = ""  # where it came from: a file, "sample 2, round 1", a flag set...
    id: str = ""  # short identifier assigned by the engine (c001, c002...)
    meta: dict = field(default_factory=dict)


class Generator(Protocol):
    """What the engine needs from a candidate source."""

    name: str

    def propose(self, program: "object", unit: "object", round_no: int, history: list) -> list[Candidate]:
        """Candidates for ``unit`` in round ``round_no`` given the outcomes of earlier ones.

        ``program`` is the :class:`sgcc.optimize.Program` being optimized (source text, flags,
        baseline assembly); ``history`` holds this generator's earlier outcomes for the unit.
        Return ``[]`` when there is nothing more to try.
        """
        ...
