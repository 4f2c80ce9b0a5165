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
        self._ticking = 0
        self._ticker: threading.Thread | None = None

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

    def tick(self, on: bool) -> None:
        """While on (calls nest), a terminal's clock keeps ticking through a long step that
        says nothing itself (a project's build): the line is redrawn every second."""
        with self._lock:
            self._ticking = max(0, self._ticking + (1 if on else -1))
            if not (self.tty and self._ticking and self._ticker is None):
                return
            self._ticker = threading.Thread(target=self._tick_loop, name="sgcc-progress-clock", daemon=True)
            self._ticker.start()

    def _tick_loop(self) -> None:
        while True:
            time.sleep(1.0)
            with self._lock:
                if not self._ticking:
                    self._ticker = None
                    return
                elapsed = time.monotonic() - self.started
                self.stream.write("\r\x1b[K" + f"sgcc: [{elapsed:6.1f}s] {self._last}"[:200])
                self.stream.flush()

    def line(self, message: str) -> None:
        """A line that stays (a function's outcome), above the status line."""
        if not self.enabled:
            return
        with self._lock:
            elapsed = time.monotonic() - self.started
            prefix = "\r\x1b[K" if self.tty else ""
            self.stream.write(f"{prefix}sgcc: [{elapsed:6.1f}s] {message}\n")
            if self.tty and self._last:
                self.stream.write(f"sgcc: [{elapsed:6.1f}s] {self._last}"[:200])
            self.stream.flush()

    def done(self) -> None:
        """End the status line so what follows starts on a fresh line."""
        with self._lock:
            self._ticking = 0
        if self.enabled and self.tty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
