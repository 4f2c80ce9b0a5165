"""The answer of one static verification stage."""

from __future__ import annotations

from dataclasses import dataclass

from sgcc.stages import Stage


@dataclass
class Verdict:
    """The outcome of one screening step.

    ``stage`` is where the candidate stops when ``ok`` is false (:attr:`Stage.SCREEN` for the
    text screen, :attr:`Stage.ASSEMBLE` for the assembler, :attr:`Stage.CHECK` for the checks of
    the assembled object). ``reason``
    is one human-readable line; ``detail`` carries more (e.g. the assembler's sanitized error
    lines) for feedback to a model. Neither ever contains the content of a file the candidate
    tried to read.
    """

    ok: bool
    stage: Stage
    reason: str = ""
    detail: str = ""

    def __bool__(self) -> bool:
        return self.ok
