"""Candidate generators: where replacement function units come from.

Every generator is a :class:`Generator`: it has a ``name`` and proposes :class:`Candidate`
texts for a function unit; the engine (:mod:`sgcc.engine`) screens, builds, tests and times
every one of them the same way, whatever produced it. Generators are asked in rounds so that
iterative ones (a model refining its last attempt) see what happened to their earlier
candidates; a generator says it is done by proposing nothing.

The engine calls, in this order: :meth:`Generator.unmatched` (candidates for functions the
program lacks, refused up front), :meth:`Generator.prepare` once, :meth:`Generator.propose`
per unit and round (and :meth:`Generator.waiting` between rounds), :meth:`Generator.left_over`
and :attr:`Generator.incomplete` after the search, and
:meth:`Generator.close` when the run ends, successful or not. It calls nothing else;
callers report :attr:`Generator.error` after the run.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from sgcc.asm import WHOLE_UNIT as WHOLE_UNIT  # ``Candidate.function`` of a whole-unit candidate
from sgcc.stages import Stage

if TYPE_CHECKING:
    from sgcc.asm.units import AsmFile, Unit
    from sgcc.errors import SgccError
    from sgcc.verify.box.sandbox import Sandbox, TestCase
    from sgcc.verify.static.isa import Target


class ProgramView(Protocol):
    """What a generator reads of the program being optimized: the part of
    :class:`sgcc.engine.Program` below the engine (generators never import the engine).
    ``Program`` subclasses it, so mypy holds the two together."""

    source: Path
    source_text: str
    flags: list[str]
    asm: AsmFile
    asm_text: str
    obj: Path
    binary: Path
    target: Target
    asm_flags: list[str]
    weights: dict[str, float] | None
    #: A project's compile as the build ran it: its directory, the source as spelled there
    #: (variants compile the same way), and the whole project's profile of it (a .gcda).
    compile_cwd: Path | None
    source_arg: str | None
    profile: Path | None

    @property
    def link(self) -> object | None:
        """How a candidate becomes the program to test where the engine's own link would not
        do (a whole project: :class:`sgcc.engine.request.Linker`); None for one source."""
        ...

    @property
    def defined(self) -> frozenset[str]:
        """Names of the baseline's function units."""
        ...


class LeftOver(Protocol):
    """Work a generator named but never did (:meth:`Generator.left_over`): a variant never
    compiled."""

    @property
    def name(self) -> str: ...

    @property
    def flags(self) -> list[str]: ...

    @property
    def shown(self) -> list[str] | None:
        """The flags as reports show them (None: ``flags``)."""
        ...


class Outcome(Protocol):
    """What a generator reads of an earlier candidate's fate (:class:`sgcc.engine.CandidateResult`)."""

    stage: Stage
    reason: str
    detail: str
    speedup: float | None


@dataclass
class Candidate:
    """One proposed replacement for one function unit.

    ``skip`` set to a reason means "nothing to offer, and here is why" (a prompt that does
    not fit the model's context, a generator error): the engine records it in the report at
    stage ``skipped`` without building anything. ``meta`` holds small JSON-able facts the
    report keeps (tokens, tokens/s, seconds of generation, the flags of a variant...).
    ``invalid`` set to a reason means "this is not assembly at all" (a model's answer with no
    assembly in it, or prose around it): the engine refuses it at stage ``screen`` with that
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
    #: Set by the engine from its generator's :attr:`Generator.trusted` (gcc's own code);
    #: False for everything else (a model's answer, a file, a cache entry), whose units are
    #: also held to the information-flow rule (sgcc.verify.static.infoflow).
    trusted: bool = False


@dataclass
class Attempt:
    """One earlier candidate and what became of it (an entry of a generator's history)."""

    candidate: Candidate
    result: Outcome  # a sgcc.engine.CandidateResult


@dataclass
class Context:
    """What ``prepare`` hooks get: the baseline, the tests, and the engine's facilities.

    ``sandbox`` runs binaries safely (:class:`sgcc.verify.box.sandbox.Sandbox`), ``tests`` are the
    recorded :class:`sgcc.verify.box.sandbox.TestCase` list, ``workdir`` is a private directory for the
    generator, ``compiler`` the real gcc, ``note`` updates the progress display.
    """

    program: ProgramView
    sandbox: Sandbox
    tests: list[TestCase]
    workdir: Path
    compiler: str
    isa: str
    note: Callable[[str], None] | None = None
    jobs: int = 1


class Generator(abc.ABC):
    """The one interface of a candidate source; every generator subclasses it.

    A subclass sets ``name`` (the generator's name in reports and the cache) and implements
    :meth:`propose` (abstract: a class without it cannot be instantiated); the other methods
    have defaults that do nothing, which a subclass overrides when it has work to do there."""

    name: str = ""
    #: Whether its candidates are gcc's own code (compiler variants, profiles, alignment
    #: edits), which may run where isolation is incomplete. A model's answers and files from
    #: elsewhere are not (sgcc.verify.box.isolation_level.require_isolation).
    trusted: bool = False
    #: Chosen by ``auto`` rather than by name: an untrusted optional generator is left out
    #: (with a note) where the isolated runner is incomplete, instead of refusing the run.
    optional: bool = False
    #: Rounds this generator is asked for whatever ``--rounds`` says (a search that learns
    #: from the engine's verdicts); 0: ``--rounds`` decides. Each generator is asked for at
    #: most the larger of the two.
    rounds: int = 0
    #: Asked before the others in every round (project mode's pgo: the whole project's
    #: profile, the measured gain); the others keep their order.
    leads: bool = False

    def prepare(self, context: Context) -> None:  # noqa: B027 - an optional hook: nothing by default
        """Called once, after the baseline is built and the tests are recorded, before round
        0: for work shared by every unit, such as compiling the whole translation unit under
        other flags or a profiling build. ``context`` gives the baseline, the sandbox, the
        tests and a private directory."""

    @abc.abstractmethod
    def propose(self, program: ProgramView, unit: Unit, round_no: int, history: list[Attempt]) -> list[Candidate]:
        """Candidates for ``unit`` in round ``round_no`` given the outcomes of earlier ones.

        ``program`` is the :class:`sgcc.engine.Program` being optimized (source text, flags,
        baseline assembly, function weights); ``history`` holds this generator's earlier
        :class:`Attempt` s for the unit, oldest first. Return ``[]`` when there is nothing more
        to try. A candidate for the whole translation unit (``function=WHOLE_UNIT``, the full
        assembly text) may be returned from any call; the engine budgets it as the hottest unit.
        """

    def waiting(self) -> bool:
        """Whether later rounds have work this generator has not offered yet (variants it
        compiles as the search asks): the engine then goes on to the next round even when
        this one offered nothing new."""
        return False

    def left_over(self) -> Sequence[LeftOver]:
        """Work named but never done when the search ended (variants never compiled: the
        budget ended first); the engine reports each as cut by the budget."""
        return []

    def unmatched(self, names: set[str]) -> list[Candidate]:
        """Candidates this generator has for functions the program does not define (``names``
        are the ones it does); the engine refuses them at ``screen`` without building. By
        default none: only generators that read candidates from elsewhere have such."""
        return []

    @property
    def incomplete(self) -> bool:
        """True when the generator could not do its part (a model that did not load, failed
        requests): the engine then caches no "nothing faster" verdict for this search."""
        return False

    #: What kept the generator from running at all, for the caller to report after the run;
    #: ``None`` when it ran.
    error: SgccError | None = None

    def close(self) -> None:  # noqa: B027 - an optional hook: nothing by default
        """Called when the run ends, successful or not: release models, processes, files."""
