"""Wall-clock deadlines for the emulator's timed slices, kept by one thread per process.

Unicorn's own ``emu_start(..., timeout=...)`` starts a thread for each start and joins it at
the end (a turn of the scheduler on a busy machine), and its timer stops the engine once: a
full run of the suite sat 18 minutes inside one timed slice that never stopped. Read from
Unicorn 2.1's source (not reproduced): a stop made before the engine clears its CPU's exit
request on the way in (``resume_all_vcpus``) is lost, and a timer that fires once on a loaded
machine can make it then. Here one daemon thread keeps every armed deadline; past one, it
stops the engine, and again every REPEAT seconds until the slice is disarmed, so a stop that
was lost is followed by one that is not. The stop is made under the same lock as
:func:`disarm`, so a slice that has ended is never stopped: a stop cannot reach the next one.
"""
from __future__ import annotations

import itertools
import os
import threading
import time
from typing import Any

#: How often a slice past its deadline is asked to stop again (a stop made before the engine
#: ran is lost).
REPEAT = 0.01

_lock = threading.Condition()
_armed: dict[int, tuple[float, Any]] = {}  # token -> (deadline on perf_counter, Unicorn engine)
_tokens = itertools.count(1)
_thread: threading.Thread | None = None


def arm(uc: Any, deadline: float) -> int:
    """Stop ``uc`` once ``time.perf_counter()`` passes ``deadline`` (and again until
    :func:`disarm`); return the token to disarm with."""
    global _thread
    with _lock:
        token = next(_tokens)
        _armed[token] = (deadline, uc)
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_keep, name="sgcc-slice-deadline", daemon=True)
            _thread.start()
        _lock.notify()
        return token


def disarm(token: int) -> None:
    """The slice has ended: no stop for it from now on."""
    with _lock:
        _armed.pop(token, None)


def _keep() -> None:
    with _lock:
        while True:
            if not _armed:
                _lock.wait()
            elif _stop_due():
                _lock.wait(REPEAT)
            else:
                _lock.wait(min(d for d, _ in _armed.values()) - time.perf_counter())


def _stop_due() -> bool:
    """Stop every engine past its deadline (under the lock); whether there was one. The
    engines are this function's locals only: the keeper waits holding none (a Machine no
    longer used must be freed, with its memory)."""
    now = time.perf_counter()
    due = [uc for deadline, uc in _armed.values() if deadline <= now]
    for uc in due:
        try:
            uc.emu_stop()
        except Exception:  # noqa: BLE001 - asked again in REPEAT; the keeper must live on
            pass
    return bool(due)


def _after_fork() -> None:
    # A child of fork has the module's state but not its thread (nor, perhaps, a free lock).
    global _lock, _thread
    _lock = threading.Condition()
    _armed.clear()
    _thread = None


os.register_at_fork(after_in_child=_after_fork)
