"""A progress display on stderr for long runs (tests and timing can take minutes).

On a terminal it keeps one status line updated in place with the elapsed time; elsewhere
(a log, CI, ``| tee``) it prints each new status once, so logs stay readable, and while a
step runs long (a race, a wait for the timing lock) it says so again every
:data:`HEARTBEAT` seconds, so a log never goes silent for minutes. ``--quiet`` silences it.
"""

from __future__ import annotations

import sys
import threading
import time

#: In a log, a status that lasts is repeated after this many seconds without a line.
HEARTBEAT = 15.0


class Progress:
    """Status lines on ``stream`` (stderr by default); does nothing when not ``enabled``.

    Thread-safe: parallel builds and tests report through one object.
    """

    def __init__(self, stream=None, *, enabled: bool = True, heartbeat: float = HEARTBEAT):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.heartbeat = heartbeat
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._last = ""
        self._last_since = self._written = self.started  # when the status began; the last line written
        self._ticking = 0
        self._ticker: threading.Thread | None = None

    def status(self, message: str) -> None:
        """Show what sgcc is doing now."""
        if not self.enabled:
            return
        with self._lock:
            elapsed = time.monotonic() - self.started
            line = f"sgcc: [{elapsed:6.1f}s] {message}"
            if message != self._last:
                self._last_since = time.monotonic()
            if self.tty:
                self.stream.write("\r\x1b[K" + line[:200])
            elif message != self._last:
                self.stream.write(line + "\n")
                self._written = time.monotonic()
            self._last = message
            self.stream.flush()

    def tick(self, on: bool) -> None:
        """While on (calls nest), a terminal's clock keeps ticking through a long step that
        says nothing itself (a project's build): the line is redrawn every second. In a log,
        the current status is written again after ``heartbeat`` seconds without a line."""
        with self._lock:
            self._ticking = max(0, self._ticking + (1 if on else -1))
            if not (self.enabled and self._ticking and self._ticker is None):
                return
            self._ticker = threading.Thread(target=self._tick_loop, name="sgcc-progress-clock", daemon=True)
            self._ticker.start()

    def _tick_loop(self) -> None:
        while True:
            time.sleep(1.0 if self.tty else min(1.0, self.heartbeat / 4))
            with self._lock:
                if not self._ticking:
                    self._ticker = None
                    return
                now = time.monotonic()
                elapsed = now - self.started
                if self.tty:
                    self.stream.write("\r\x1b[K" + f"sgcc: [{elapsed:6.1f}s] {self._last}"[:200])
                elif self._last and now - self._written >= self.heartbeat:
                    self.stream.write(f"sgcc: [{elapsed:6.1f}s] {self._last} "
                                      f"(still at it: {now - self._last_since:.0f} s)\n")
                    self._written = now
                else:
                    continue
                self.stream.flush()

    def line(self, message: str) -> None:
        """A line that stays (a function's outcome), above the status line."""
        if not self.enabled:
            return
        with self._lock:
            elapsed = time.monotonic() - self.started
            prefix = "\r\x1b[K" if self.tty else ""
            self.stream.write(f"{prefix}sgcc: [{elapsed:6.1f}s] {message}\n")
            self._written = time.monotonic()
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
