"""The one exception type sgcc raises for conditions a user can act on, and the one
writer of ``$SGCC_LOGFILE`` lines.

Errors wrap their cause and carry a hint; they surface once, at the CLI boundary
(:func:`sgcc.cli.main.run_command`), which prints ``sgcc: error: <message>`` and the hint.
"""

from __future__ import annotations

import os


def log(message: str) -> None:
    """Append one line to $SGCC_LOGFILE when it is set (like ccache's log file); a log that
    cannot be written is no reason to fail a compile."""
    path = os.environ.get("SGCC_LOGFILE")
    if path:
        try:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(f"[{os.getpid()}] {message}\n")
        except OSError:
            pass


class SgccError(Exception):
    """A failure with a message for the user and an optional hint on what to do."""

    def __init__(self, message: str, *, hint: str | None = None, cause: BaseException | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        if cause is not None:
            self.__cause__ = cause

    def render(self) -> str:
        """The lines the CLI prints: ``sgcc: error: MESSAGE (cause)`` and ``sgcc: hint: HINT``."""
        text = f"sgcc: error: {self.message}"
        if self.__cause__ is not None and str(self.__cause__) not in self.message:
            text += f" ({self.__cause__})"
        if self.hint:
            text += f"\nsgcc: hint: {self.hint}"
        return text


class RecursionDetected(SgccError):
    """The compiler sgcc was about to run is sgcc itself (directly or through a wrapper)."""
