"""The box's C helper (``boxhelper.c``): built once by the host's gcc, then started per run.

Forking the Python process twice per run (P, then init) costs milliseconds per fork on small
machines; ``subprocess`` starts this helper with ``vfork`` and it forks a tiny process
instead. It does exactly what the Python child functions of :mod:`sgcc.verify.box.isolate` do,
and those remain the fallback where the helper cannot be built (no gcc, no writable place).

The binary is cached under ``$XDG_CACHE_HOME/sgcc/box/`` (or a private temporary directory
when that is not writable) by the hash of its source, so one build serves every later run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
from pathlib import Path

SOURCE = Path(__file__).with_name("boxhelper.c")

_lock = threading.Lock()
_path: str | None = None
_tried = False


def helper_path() -> str | None:
    """The built helper's path, or None if it cannot be built here (then Python does its work)."""
    global _path, _tried
    with _lock:
        if not _tried:
            _tried = True
            try:
                _path = _build()
            except (OSError, ValueError):
                _path = None
        return _path


def _places() -> list[Path]:
    from sgcc import dirs

    return [Path(dirs.user_cache_dir()) / "box"]


def _build() -> str | None:
    from sgcc import proc

    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:16]
    for place in _places():
        candidate = place / f"boxhelper-{digest}"
        try:
            st = candidate.stat()
        except OSError:
            continue
        # Only a helper this user built and nobody else can have changed since.
        if st.st_uid == os.getuid() and not st.st_mode & 0o022 and os.access(candidate, os.X_OK):
            return str(candidate)
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        return None
    for where in [*_places(), None]:
        try:
            if where is None:
                place = Path(tempfile.mkdtemp(prefix="sgcc-box-"))
                import atexit

                atexit.register(shutil.rmtree, str(place), True)
            else:
                place = where
            place.mkdir(parents=True, exist_ok=True)
            out = place / f"boxhelper-{digest}"
            tmp = place / f".boxhelper-{digest}.{os.getpid()}"
            # No -O flag: a compile sgcc itself would intercept (CC=sgcc) passes straight to gcc.
            r = proc.run([compiler, "-o", str(tmp), "-x", "c", "-"], stdin=source, timeout=120)
            if not r.ok:
                return None
            os.chmod(tmp, 0o755)
            os.replace(tmp, out)
            # The helper runs first as the invoking user and (as root) then as nobody: the
            # directories on its way must let it be executed; the cache dir usually does.
            return str(out)
        except OSError:
            continue
    return None
