"""The one vocabulary of the pipeline's stages.

A candidate moves through these stages in order and stops at the first one it fails; the
report, the bench, the LLM's refinement feedback and ``explain`` all speak of it in these
words. ``Stage`` is a ``str`` enum, so a stage compares equal to its plain name and JSON
reports stay plain strings.
"""

from __future__ import annotations

import enum


class Stage(enum.StrEnum):
    """Where a candidate is, or where it stopped."""

    PENDING = "pending"  # not looked at yet
    SKIPPED = "skipped"  # never built: identical to gcc's unit, a repeat, or the budget ran out
    SCREEN = "screen"  # refused before any assembler ran: no assembly in the answer, the text screen, no such function
    ASSEMBLE = "assemble"  # the assembler refused it
    CHECK = "check"  # the checks of the assembled object refused it (symbols, sections, ISA, clobbered registers)
    CONTROL = "control"  # the control-flow proof refused it (sgcc.verify.static.controlflow)
    LINK = "link"  # the program did not link
    TEST = "test"  # a test failed in the isolated runner
    TIME = "time"  # correct, but not proven faster
    PROVE = "prove"  # faster on the tests, but the proof of its functions refused it (sgcc.engine.funcproof)
    ACCEPTED = "accepted"  # correct and proven faster


#: The stages in pipeline order.
ORDER: tuple[Stage, ...] = tuple(Stage)

#: Built candidates that got past assembling and linking (the papers' "compile pass").
COMPILED = frozenset({Stage.TEST, Stage.TIME, Stage.PROVE, Stage.ACCEPTED})

#: Refused by sgcc's own checks before linking (the text screen, the object checks, the
#: control-flow proof), which the papers' pipeline does not have.
REFUSED_BEFORE_LINK = frozenset({Stage.SCREEN, Stage.CHECK, Stage.CONTROL})

#: Candidates that passed every test (the papers' "test pass").
PASSED = frozenset({Stage.TIME, Stage.ACCEPTED})
