"""A progress display on stderr for long runs (tests and timing can take minutes).

On a terminal it keeps one status line updated in place with the elapsed time; elsewhere
(a log, CI) it prints each new status once, so logs stay readable. ``--quiet`` silences it.
"""

from __future__ import annotations

import sys
import threading
import time


class Progress:
    """Status lines on ``stream`` (stderr by default); does nothing when not ``enabled``.

    Thread-safe: parallel builds and tests report through one object.
    """

    def __init__(self, stream=None, *, enabled: bool = True):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._last = ""

    def status(self, message: str) -> None:
        """Show what sgcc is doing now."""
        if not self.enabled:
            return
        with self._lock:
            elapsed = time.monotonic() - self.started
            line = f"sgcc: [{elapsed:6.1f}s] {message}"
            if self.tty:
                self.stream.write("\r\x1b[K" + line[:200])
            elif message != self._last:
                self.stream.write(line + "\n")
            self._last = message
            self.stream.flush()

    def done(self) -> None:
        """End the status line so what follows starts on a fresh line."""
        if self.enabled and self.tty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
