"""Cache-entry signatures (sgcc.cache.trust): only a trusted key's HMAC makes an entry usable."""

from __future__ import annotations

import os
import stat

import pytest

from sgcc.cache import trust


def test_the_user_key_is_created_once_private(tmp_path, monkeypatch):
    monkeypatch.setenv("SGCC_CONFIG", str(tmp_path / "cfg" / "config.toml"))
    path = trust.user_key_path()
    assert path == str(tmp_path / "cfg" / "signing.key")
    ring = trust.Keyring.load()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert trust.Keyring.load().signing == ring.signing  # the same key the second time
    assert len(ring.signing) == 2 * trust.KEY_BYTES


def test_signatures_verify_only_for_the_same_body_and_a_trusted_key(tmp_path):
    mine = trust.Keyring(b"k" * 32)
    sig = mine.sign(b"body")
    assert mine.verify(sig, b"body")
    assert not mine.verify(sig, b"body!")
    assert not trust.Keyring(b"other").verify(sig, b"body")
    assert not mine.verify("", b"body") and not mine.verify("nokey:abc", b"body")
    # A checksum is no signature: the old header's sha256 does not pass.
    import hashlib

    assert not mine.verify(hashlib.sha256(b"body").hexdigest(), b"body")


def test_team_keys_are_accepted_when_trusted(tmp_path):
    team = tmp_path / "team.key"
    team.write_text("team-secret\n")
    team.chmod(0o600)
    signed_by_team = trust.Keyring(b"team-secret").sign(b"entry")
    alone = trust.Keyring(b"mine")
    assert not alone.verify(signed_by_team, b"entry")
    ring = trust.Keyring(b"mine", [trust.load_key(str(team))])
    assert ring.verify(signed_by_team, b"entry")
    signing_with_team = trust.Keyring.load(signing_key=str(team))
    assert signing_with_team.sign(b"entry") == signed_by_team


def test_unusable_key_files_are_refused(tmp_path):
    loose = tmp_path / "loose.key"
    loose.write_text("secret\n")
    loose.chmod(0o666)
    with pytest.raises(trust.KeyFileError, match="writable by others"):
        trust.load_key(str(loose))
    empty = tmp_path / "empty.key"
    empty.write_text("")
    empty.chmod(0o600)
    with pytest.raises(trust.KeyFileError, match="empty"):
        trust.load_key(str(empty))
    with pytest.raises(trust.KeyFileError, match="cannot open"):
        trust.load_key(str(tmp_path / "missing.key"))
    os.mkfifo(tmp_path / "fifo.key", 0o600)
    with pytest.raises(trust.KeyFileError, match="not a regular file"):
        trust.load_key(str(tmp_path / "fifo.key"))


def test_the_hmac_is_the_standard_one():
    import hashlib
    import hmac

    for key in (b"k", b"x" * 64, b"y" * 65, b"k" * 200):
        for msg in (b"", b"entry body", bytes(range(256)) * 9):
            assert trust.hmac_sha256(key, msg) == hmac.new(key, msg, hashlib.sha256).hexdigest()


def test_a_concurrent_compile_never_reads_a_half_created_key(tmp_path, monkeypatch):
    """`make -j` on a fresh machine: several compiles create the user's key at once. One that
    looks while another is still creating it must see no key or the whole key, never an empty
    file (CI once saw "key file ... is empty" and that compile fell back to plain gcc)."""
    path = str(tmp_path / "cfg" / "signing.key")
    real_urandom = os.urandom
    seen = []

    def urandom_with_a_neighbour(n):
        # The creator is between "decide to create" and "key in place": a neighbour compile runs now.
        if not seen:
            seen.append(None)
            seen[0] = trust.load_key(path, create=True)
        return real_urandom(n)

    monkeypatch.setattr(os, "urandom", urandom_with_a_neighbour)
    mine = trust.load_key(path, create=True)
    monkeypatch.setattr(os, "urandom", real_urandom)
    assert seen and seen[0] == mine, "the neighbour's key and mine differ: one compile signs with a lost key"
    assert len(mine) == 2 * trust.KEY_BYTES
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert os.listdir(os.path.dirname(path)) == ["signing.key"]  # no temporary file left behind


def test_many_processes_creating_the_key_at_once_all_get_the_same_key(tmp_path):
    """The same with real processes started together, several rounds on fresh paths."""
    import subprocess
    import sys

    code = ("import sys, time; from sgcc.cache import trust\n"
            "t = float(sys.argv[2])\n"
            "while time.time() < t: pass\n"
            "print(trust.load_key(sys.argv[1], create=True).decode())\n")
    for round_ in range(4):
        path = str(tmp_path / f"r{round_}" / "signing.key")
        import time

        start = time.time() + 1.0
        procs = [subprocess.Popen([sys.executable, "-c", code, path, repr(start)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(8)]
        outs = [p.communicate(timeout=60) for p in procs]
        assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
        assert len({out for out, _ in outs}) == 1
