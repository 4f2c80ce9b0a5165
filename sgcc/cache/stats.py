"""The cache's statistics: counters every compile adds to, without a lock on the hot path.

Each process that counts something writes one small file, ``ROOT/stats.d/<pid>-<random>.n``
(by the one atomic writer, :func:`sgcc.fsutil.atomic_write`: a reader sees it whole or not at all), with
one ``c NAME N`` line per counter and one ``p REASON N`` line per pass-through reason. No
compile waits for another: ``make -j`` runs them side by side.

Readers (:func:`read`, behind ``sgcc stats``) merge those files into ``ROOT/stats.json``
under ``ROOT/locks/stats.lock`` (:class:`sgcc.fsutil.FileLock`), then delete them. The merge is exact even when it is
interrupted: ``stats.json`` names the files it has already added (``merged``); they are
deleted before the next merge and never counted twice. A compile also merges now and then
(one in 512, only if the lock is free), so the directory stays small between reads.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's own import costs a compile ~2 ms; mypy knows this name
if TYPE_CHECKING:
    from sgcc.fsutil import FileLock

PENDING = "stats.d"
_MERGE_ONE_IN = 512


def record(root: str, counts: dict[str, int], reasons: dict[str, int] | None = None) -> None:
    """Add ``counts`` (and pass-through ``reasons``) to the statistics of ``root``; never raises."""
    lines = [f"c {k} {int(v)}\n" for k, v in counts.items() if v]
    lines += [f"p {k} {int(v)}\n" for k, v in (reasons or {}).items() if v]
    if not lines:
        return
    from sgcc.fsutil import atomic_write

    rand = os.urandom(6)
    try:
        atomic_write(os.path.join(root, PENDING, f"{os.getpid()}-{rand.hex()}.n"), "".join(lines), mode=None)
    except OSError:
        return
    if int.from_bytes(rand[:2], "little") % _MERGE_ONE_IN == 0:
        try:
            _merge(root, wait=False)
        except Exception:  # noqa: BLE001 - counting must never fail a compile
            pass


def read(root: str) -> dict:
    """``{"counters", "passthrough", "since"}``: everything counted so far (merges first)."""
    try:
        stats = _merge(root, wait=True)
    except OSError:  # a cache directory this user cannot write: what is there, unmerged
        stats = {"counters": {}, "passthrough": {}}
        for name in _pending(root):
            try:
                with open(os.path.join(root, PENDING, name), encoding="utf-8", errors="surrogateescape") as fh:
                    _parse(fh.read(), stats["counters"], stats["passthrough"])
            except OSError:
                pass
    return {"counters": dict(stats["counters"]), "passthrough": dict(stats["passthrough"]),
            "since": stats.get("since", "-")}


def zero(root: str) -> None:
    """Forget every count (entries are kept); counting starts again now."""
    import json

    from sgcc.fsutil import atomic_write

    lock = _lock(root, wait=True)
    assert lock is not None  # waiting, it is taken or raises
    try:
        for name in _pending(root):
            _unlink(os.path.join(root, PENDING, name))
        path = os.path.join(root, "stats.json")
        try:
            atomic_write(path, json.dumps(_empty(None), sort_keys=True), mode=None)
        except OSError:
            _unlink(path)  # the next merge starts counting from the oldest count after this
    finally:
        lock.release()


def _empty(since: float | None) -> dict:
    """No counts yet, counting since ``since`` (seconds since the epoch; None: now)."""
    import time

    return {"counters": {}, "passthrough": {}, "since": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since))}


def _oldest(directory: str, names: list[str]) -> float | None:
    """When the oldest of the pending count files ``names`` was written (None: none can be read)."""
    times = []
    for name in names:
        try:
            times.append(os.stat(os.path.join(directory, name)).st_mtime)
        except OSError:
            pass
    return min(times, default=None)


def _pending(root: str) -> list[str]:
    try:
        return [n for n in os.listdir(os.path.join(root, PENDING)) if n.endswith(".n")]
    except OSError:
        return []


def _parse(text: str, counters: dict, passthrough: dict) -> None:
    for line in text.splitlines():
        parts = line.split(" ")
        if len(parts) != 3 or parts[0] not in ("c", "p"):
            continue
        try:
            n = int(parts[2])
        except ValueError:
            continue
        table = counters if parts[0] == "c" else passthrough
        table[parts[1]] = table.get(parts[1], 0) + n


def _merge(root: str, *, wait: bool) -> dict:
    import json

    path = os.path.join(root, "stats.json")
    lock = _lock(root, wait=wait)
    if lock is None:
        return {}
    try:
        try:
            with open(path, encoding="utf-8") as fh:
                stats = json.load(fh)
            if not (isinstance(stats, dict) and isinstance(stats.get("counters"), dict)
                    and isinstance(stats.get("passthrough"), dict)):
                raise ValueError("malformed")
        except (OSError, ValueError):
            stats = None
        pending_dir = os.path.join(root, PENDING)
        done = set((stats or {}).get("merged") or [])
        for name in done:  # counted by the last merge, which stopped before deleting them
            _unlink(os.path.join(pending_dir, name))
        names = [n for n in _pending(root) if n not in done]
        if stats is None:
            # Counting began with the oldest count waiting to be merged (an `sgcc optimize`
            # that stored verdicts an hour before the first `sgcc stats`), not with this merge.
            stats = _empty(_oldest(pending_dir, names))
        if not names:
            return stats
        for name in names:
            try:
                with open(os.path.join(pending_dir, name), encoding="utf-8", errors="surrogateescape") as fh:
                    _parse(fh.read(), stats["counters"], stats["passthrough"])
            except OSError:
                pass
        stats["merged"] = sorted(names)
        from sgcc.fsutil import atomic_write

        try:
            atomic_write(path, json.dumps(stats, sort_keys=True), mode=None)
        except OSError:
            return stats  # nothing deleted: the files are counted next time
        for name in names:
            _unlink(os.path.join(pending_dir, name))
        return stats
    finally:
        lock.release()


def _lock(root: str, *, wait: bool) -> FileLock | None:
    """The statistics lock, taken; None when ``wait`` is false and another process holds it
    (or, then, when it cannot be opened)."""
    from sgcc.fsutil import FileLock

    lock = FileLock(os.path.join(root, "locks", "stats.lock"))
    try:
        return lock if lock.acquire(None if wait else 0) else None
    except OSError:
        if wait:
            raise
        return None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
