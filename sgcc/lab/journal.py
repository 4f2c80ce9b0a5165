"""A run's record of finished problems, so that an interrupted run resumes (``--resume FILE``).

JSON lines: the first line names the run's settings; each further line is one finished
piece of work (``{"kind": "engine", "name": "crc32", "row": {...}}``), appended and synced
as soon as it finishes, on the machine that drives the run (with ``--cluster``, the driver).
A resumed run with the same file takes every recorded piece as it is and re-runs (and
re-times) nothing of it; a last line cut short by a crash is ignored. A file written with
other settings is refused: figures from two configurations must not be mixed in one report.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from sgcc.errors import SgccError

MAGIC = "sgcc-resume"
VERSION = 1
#: Largest resume file read back (a row is a few KB; 8,072 problems in three kinds fit easily).
MAX_BYTES = 1 << 30


class Journal:
    """The finished pieces of a run, read from ``path`` (if it exists) and appended to."""

    def __init__(self, path: Path, settings: dict):
        self.path = Path(path)
        self.settings = json.loads(json.dumps(settings, default=str))  # as it reads back
        self.done: dict[tuple[str, str], dict] = {}
        self._lock = threading.Lock()
        self._load()

    def _load(self) -> None:
        from sgcc.fsutil import read_bounded

        if not os.path.lexists(self.path):
            self._append({"format": MAGIC, "version": VERSION, "settings": self.settings})
            return
        try:
            text = read_bounded(self.path, MAX_BYTES, what="resume file").decode("utf-8", "replace")
        except (OSError, SgccError) as exc:
            raise SgccError(f"cannot read the resume file {self.path}", cause=exc) from exc
        lines = text.splitlines()
        try:
            head = json.loads(lines[0]) if lines else None
        except ValueError:
            head = None
        if not isinstance(head, dict) or head.get("format") != MAGIC:
            raise SgccError(f"{self.path} is not an sgcc resume file", hint="name a new file, or one an earlier "
                                                                            "run of the same command wrote")
        if head.get("settings") != self.settings:
            theirs = head.get("settings") or {}
            diff = [f"{k}: {theirs.get(k)!r} there, {v!r} now" for k, v in sorted(self.settings.items())
                    if theirs.get(k) != v]
            diff += [f"{k}: {theirs[k]!r} there, not set now" for k in sorted(theirs) if k not in self.settings]
            raise SgccError(f"the resume file {self.path} was written by a run with other settings ("
                            + "; ".join(diff[:4]) + ")", hint="rerun with the same settings, or name a new file")
        for line in lines[1:]:
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a line cut short when the run was killed: that piece runs again
            if isinstance(entry, dict) and isinstance(entry.get("row"), dict):
                self.done[(str(entry.get("kind")), str(entry.get("name")))] = entry["row"]
        if text and not text.endswith("\n"):
            self._append_raw("\n")  # end the torn line, so the next entry starts on its own

    def get(self, kind: str, name: str) -> dict | None:
        """The recorded result of ``kind`` work on problem ``name``, or None."""
        return self.done.get((kind, name))

    def add(self, kind: str, name: str, row: dict) -> None:
        """Record a finished piece (synced to disk before this returns)."""
        with self._lock:
            self._append({"kind": kind, "name": name, "row": row})
            self.done[(kind, name)] = row

    def _append(self, entry: dict) -> None:
        from sgcc.engine import finite_json

        self._append_raw(json.dumps(finite_json(entry), separators=(",", ":")) + "\n")

    def _append_raw(self, text: str) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, text.encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise SgccError(f"cannot write the resume file {self.path}", cause=exc) from exc
