"""The one lock and the one atomic writer (sgcc.fsutil), and the one yes/no reading (sgcc.config)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from sgcc import config, fsutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_lock_excludes_other_threads_and_processes_and_reenters_in_its_own(tmp_path):
    path = tmp_path / "locks" / "x.lock"  # the directory is made on first use
    lock = fsutil.file_lock(path)
    assert fsutil.file_lock(path) is lock  # one object per path
    other = []
    with lock:
        assert lock.acquire(timeout=0)  # re-entrant in this thread
        lock.release()
        t = threading.Thread(target=lambda: other.append(lock.acquire(timeout=0.2)))
        t.start()
        t.join()
        probe = (f"import sys; from sgcc.fsutil import FileLock\n"
                 f"sys.exit(0 if FileLock({str(path)!r}).acquire(timeout=0) else 3)")
        r = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "PYTHONPATH": ROOT}, timeout=60)
        assert r.returncode == 3
    assert other == [False]
    t = threading.Thread(target=lambda: other.append(lock.acquire(timeout=0) and lock.release() is None))
    t.start()
    t.join()
    assert other == [False, True]


def test_the_atomic_writer_keeps_the_umask_when_asked_and_the_exact_mode_otherwise(tmp_path):
    old = os.umask(0o027)
    try:
        fsutil.atomic_write(tmp_path / "a" / "shared", b"x", mode=None)
        fsutil.atomic_write(tmp_path / "a" / "exact", "y", mode=0o600)
    finally:
        os.umask(old)
    assert (tmp_path / "a" / "shared").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "a" / "exact").stat().st_mode & 0o777 == 0o600
    assert sorted(os.listdir(tmp_path / "a")) == ["exact", "shared"]  # no temporary file left


def test_one_reading_of_yes_and_no(monkeypatch):
    for word in ("1", "yes", "TRUE", " on "):
        assert config.parse_bool(word) is True
    for word in ("0", "no", "False", "off", ""):
        assert config.parse_bool(word) is False
    with pytest.raises(ValueError, match="expected a boolean"):
        config.parse_bool("please")
    monkeypatch.setenv("SGCC_DISABLE", "please")
    assert config.env_flag("SGCC_DISABLE", unknown=True) is True
    assert config.env_flag("SGCC_DISABLE", unknown=False) is False
    monkeypatch.setenv("SGCC_DISABLE", "0")
    assert config.env_flag("SGCC_DISABLE", unknown=True) is False


def test_the_exclusive_writer_never_replaces_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "k"
    fsutil.atomic_write(target, b"first", mode=0o600, exclusive=True)
    with pytest.raises(FileExistsError):
        fsutil.atomic_write(target, b"second", mode=0o600, exclusive=True)
    assert target.read_bytes() == b"first"
    assert os.stat(target).st_mode & 0o777 == 0o600
    assert sorted(os.listdir(tmp_path)) == ["k"]


def test_the_exclusive_writer_works_where_hard_links_do_not(tmp_path, monkeypatch):
    import errno

    def no_links(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    target = tmp_path / "k"
    fsutil.atomic_write(target, b"first", mode=0o600, exclusive=True)
    with pytest.raises(FileExistsError):
        fsutil.atomic_write(target, b"second", mode=0o600, exclusive=True)
    assert target.read_bytes() == b"first" and os.stat(target).st_mode & 0o777 == 0o600
    assert sorted(os.listdir(tmp_path)) == ["k"]
