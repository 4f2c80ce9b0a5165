"""The one atomic writer, the one bounded reader and the one lock of sgcc.

Kept import-light (``os`` and ``stat`` only at module level): the drop-in compile path uses
the writer and reader, and ``filelock`` is imported only when a lock is taken.
"""

from __future__ import annotations

import os
import stat

from sgcc.errors import SgccError


def atomic_write(path: str | os.PathLike, data: bytes | str, *, mode: int = 0o644, fsync: bool = False) -> None:
    """Write ``data`` to ``path`` through a uniquely named temporary file and a rename, so a
    reader sees the old file or the new one, never half of one, and two writers never share
    a temporary name. ``str`` is written as UTF-8 with surrogate escapes (assembly text that
    is not valid UTF-8 round-trips). Creates the parent directory. Raises ``OSError``.

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
            fd = os.open(tmp, flags, mode)
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
        os.chmod(tmp, mode)  # the umask applied to os.open; the caller's mode is what counts
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


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


_locks: dict[str, object] = {}


def file_lock(path: str | os.PathLike):
    """The process-wide ``filelock.FileLock`` on ``path`` (its parent directory created).

    One object per path: a ``FileLock`` is re-entrant per thread, whereas two objects on one
    file in one thread would deadlock each other. ``with file_lock(p):`` waits as long as
    needed; ``file_lock(p).acquire(timeout=t)`` raises ``filelock.Timeout`` after ``t`` s.
    filelock's Unix locks are ``flock`` locks, so they exclude other processes too.
    """
    import filelock

    key = os.path.abspath(os.fspath(path))
    lock = _locks.get(key)
    if lock is None:
        os.makedirs(os.path.dirname(key), exist_ok=True)
        # setdefault is atomic: two threads racing here end up sharing one object.
        lock = _locks.setdefault(key, filelock.FileLock(key))
    return lock
