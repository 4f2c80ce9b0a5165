"""SIGTERM and SIGHUP end sgcc the way SIGINT does: by unwinding.

Every running test process and every temp directory is released by a ``with`` block, a
``finally`` or a finalizer, which Python only runs when the main thread unwinds. Python turns
SIGINT into :class:`KeyboardInterrupt`; by default SIGTERM and SIGHUP kill it outright, which
leaves boxes (until their parent-death signal) and temp directories behind. This module turns
them into :class:`Terminated`, a ``KeyboardInterrupt``, so that every existing handler of an
interrupt also handles them. Imports nothing but ``signal``: the drop-in path calls it too.
"""

from __future__ import annotations

import signal


class Terminated(KeyboardInterrupt):
    """sgcc received SIGTERM or SIGHUP; ``signum`` says which (exit status 128 + signum)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise(signum, _frame):
    # Once: a second signal during the clean-up must not interrupt the clean-up itself.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    raise Terminated(signum)


def install_signal_handlers() -> None:
    """Make SIGTERM and SIGHUP raise :class:`Terminated` in the main thread (call it there, early)."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, _raise)
