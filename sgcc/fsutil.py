"""The one atomic writer, the one bounded reader and the one lock of sgcc.

Kept import-light (``os`` and ``stat`` only at module level; ``fcntl`` when a lock is taken):
the drop-in compile path uses the writer, the reader and the lock.
"""

from __future__ import annotations

import os
import stat

from sgcc.errors import SgccError


def atomic_write(path: str | os.PathLike, data: bytes | str, *, mode: int | None = 0o644,
                 fsync: bool = False, exclusive: bool = False) -> None:
    """Write ``data`` to ``path`` through a uniquely named temporary file and a rename, so a
    reader sees the old file or the new one, never half of one, and two writers never share
    a temporary name. ``str`` is written as UTF-8 with surrogate escapes (assembly text that
    is not valid UTF-8 round-trips). Creates the parent directory. Raises ``OSError``.
    ``mode``: the file's mode exactly; None: ``0o666`` less the umask, as ``open`` makes files
    (the cache's files, which a group may share). The temporary name starts with ``.`` and
    ends in ``.tmp``, so listings by suffix never see it.

    ``exclusive``: create ``path`` only if nothing has that name, else raise
    ``FileExistsError`` and leave the existing file alone. The finished temporary file is
    hard-linked into place (``link`` fails on an existing name), so a concurrent reader never
    sees the file before its content, as it would between ``O_EXCL`` and the write.

    The temporary name comes from ``os.urandom`` rather than :mod:`tempfile`, whose import
    costs every compile a few milliseconds.
    """
    path = os.fspath(path)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666 if mode is None else mode)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 100 collisions of 32 random bits
        raise FileExistsError(f"no free temporary name next to {path}")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)  # the umask applied to os.open; the caller's mode is what counts
        if exclusive:
            _link_exclusive(tmp, path)
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _link_exclusive(tmp: str, path: str) -> None:
    """Put the finished ``tmp`` at ``path`` unless ``path`` exists (``FileExistsError``)."""
    import errno

    try:
        os.link(tmp, path)
    except OSError as exc:  # FileExistsError (EEXIST) is re-raised below
        # A file system without hard links (some FUSE and FAT mounts): O_EXCL and a copy is
        # still exclusive, only no longer invisible while it is written.
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS):
            raise
        with open(tmp, "rb") as src:
            data = src.read()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                     stat.S_IMODE(os.stat(tmp).st_mode))
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)


class ReadError(SgccError):
    """A user-named file cannot be read as asked: missing, not a regular file, too large."""


def read_bounded(path: str | os.PathLike, limit: int, *, what: str = "file", follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Refuses (with :class:`ReadError`) anything that is not a regular file (a FIFO, a device,
    a directory, ``/dev/zero`` behind a link) and anything larger than ``limit``, checked on
    the open descriptor so a file swapped in between is caught too. Opening never blocks: a
    FIFO is opened non-blocking and then refused. ``what`` names the file in messages
    ("test file", "candidate").
    """
    path = os.fspath(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        import errno

        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise ReadError(f"{what} {path} is a symbolic link, not a regular file (links are not followed)") from None
        raise ReadError(f"cannot open {what} {path}", cause=exc) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ReadError(f"{what} {path} is not a regular file")
        if st.st_size > limit:
            raise ReadError(f"{what} {path} is too large ({st.st_size} bytes, limit {limit})")
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise ReadError(f"cannot read {what} {path}", cause=exc) from exc
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:  # it grew while being read
        raise ReadError(f"{what} {path} is too large (over {limit} bytes)")
    return data


class FileLock:
    """An exclusive lock on the file ``path``: ``fcntl.flock`` on a descriptor of its own.

    It excludes other processes and, while one thread holds it, the other threads of this
    process (each thread locks through its own descriptor, and flock locks of two descriptors
    conflict even in one process). Re-entrant within a thread: share one object per path
    (:func:`file_lock`) where a thread may take it again. The lock file is created (its
    directory too) with ``0o666`` less the umask, so a shared cache directory stays usable by
    its group. Standard library only, imported lazily: the compile path takes these locks.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        self._held: dict[int, list[int]] = {}  # thread id -> [descriptor, depth]

    def acquire(self, timeout: float | None = None) -> bool:
        """Take the lock; whether it was taken. ``timeout``: None waits as long as needed, 0
        tries once, a positive number of seconds polls until then. Raises ``OSError`` when the
        lock file cannot be opened."""
        import fcntl
        from _thread import get_ident

        held = self._held.get(get_ident())
        if held is not None:
            held[1] += 1
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileNotFoundError:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
        try:
            if timeout is None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            elif not _poll_flock(fd, timeout):
                os.close(fd)
                return False
        except BaseException:
            os.close(fd)
            raise
        self._held[get_ident()] = [fd, 1]
        return True

    def depth(self) -> int:
        """How many times the calling thread holds the lock (0: not at all)."""
        from _thread import get_ident

        held = self._held.get(get_ident())
        return held[1] if held is not None else 0

    def release(self) -> None:
        """Give the lock back (the last release of a re-entrant holder unlocks the file)."""
        import fcntl
        from _thread import get_ident

        held = self._held[get_ident()]
        held[1] -= 1
        if held[1]:
            return
        del self._held[get_ident()]
        try:
            fcntl.flock(held[0], fcntl.LOCK_UN)
        finally:
            os.close(held[0])

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _poll_flock(fd: int, timeout: float) -> bool:
    import fcntl
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))


_locks: dict[str, FileLock] = {}


def file_lock(path: str | os.PathLike) -> FileLock:
    """The process-wide :class:`FileLock` on ``path``: one object per path, so that a thread
    taking it again (through another caller) re-enters rather than deadlocks itself."""
    key = os.path.abspath(os.fspath(path))
    # setdefault is atomic: two threads racing here end up sharing one object.
    return _locks.get(key) or _locks.setdefault(key, FileLock(key))
