"""The cache's statistics: counters every compile adds to, without a lock on the hot path.

Each process that counts something writes one small file, ``ROOT/stats.d/<pid>-<random>.n``
(written under a temporary name and renamed, so a reader sees it whole or not at all), with
one ``c NAME N`` line per counter and one ``p REASON N`` line per pass-through reason. No
compile waits for another: ``make -j`` runs them side by side.

Readers (:func:`read`, behind ``sgcc stats``) merge those files into ``ROOT/stats.json``
under ``ROOT/locks/stats.lock``, then delete them. The merge is exact even when it is
interrupted: ``stats.json`` names the files it has already added (``merged``); they are
deleted before the next merge and never counted twice. A compile also merges now and then
(one in 512, only if the lock is free), so the directory stays small between reads.
"""

from __future__ import annotations

import os

PENDING = "stats.d"
_MERGE_ONE_IN = 512


def record(root: str, counts: dict[str, int], reasons: dict[str, int] | None = None) -> None:
    """Add ``counts`` (and pass-through ``reasons``) to the statistics of ``root``; never raises."""
    lines = [f"c {k} {int(v)}\n" for k, v in counts.items() if v]
    lines += [f"p {k} {int(v)}\n" for k, v in (reasons or {}).items() if v]
    if not lines:
        return
    rand = os.urandom(6)
    directory = os.path.join(root, PENDING)
    name = f"{os.getpid()}-{rand.hex()}"
    tmp = os.path.join(directory, name + ".tmp")
    data = "".join(lines).encode("utf-8", "surrogateescape")
    try:
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileNotFoundError:
            os.makedirs(directory, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, os.path.join(directory, name + ".n"))
    except OSError:
        return
    if int.from_bytes(rand[:2], "little") % _MERGE_ONE_IN == 0:
        try:
            _merge(root, wait=False)
        except Exception:  # counting must never fail a compile
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

    fd = _lock(root, wait=True)
    try:
        for name in _pending(root):
            _unlink(os.path.join(root, PENDING, name))
        path = os.path.join(root, "stats.json")
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(_empty(None), fh, sort_keys=True)
            os.replace(tmp, path)
        except OSError:
            _unlink(tmp)
            _unlink(path)  # the next merge starts counting from the oldest count after this
    finally:
        _unlock(fd)


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
    fd = _lock(root, wait=wait)
    if fd is None:
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
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(stats, fh, sort_keys=True)
            os.replace(tmp, path)
        except OSError:
            return stats  # nothing deleted: the files are counted next time
        for name in names:
            _unlink(os.path.join(pending_dir, name))
        return stats
    finally:
        _unlock(fd)


def _lock(root: str, *, wait: bool) -> int | None:
    import fcntl

    path = os.path.join(root, "locks", "stats.lock")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        if wait:
            raise
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        if wait:
            raise
        return None
    return fd


def _unlock(fd: int) -> None:
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
