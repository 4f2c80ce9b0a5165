"""Who may put code into a build: cache entries carry an HMAC by a trusted key.

A cache entry is code. Anyone who can write to the cache directory (a shared cache, a
project's checked-in ``cache_dir``, a remote store) could otherwise edit an entry, recompute
its checksum and have every later ``sgcc -O3`` build assemble their text. So an entry is used
by a plain build only when it carries a valid HMAC-SHA256 by a key the user trusts:

* **the user's own key**, 32 random bytes created on first use next to the user's
  configuration file (``signing.key``, mode 0600). sgcc signs with it only what it has
  validated itself (text screen, object checks, control-flow proof, tests and timing);
* **team keys** named in the configuration (``signing_key`` to sign with a shared key,
  ``trusted_keys`` for more keys to accept), for caches a team shares.

Entries signed by no trusted key, and entries of the old checksum-only format, are ignored
(counted as ``untrusted`` in ``sgcc stats``). A key file must not be writable by others.

Kept lean: the drop-in compile imports this module on a cache hit only.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's own import costs a compile ~2 ms; mypy knows this name
if TYPE_CHECKING:
    from collections.abc import Sequence

#: Bytes of a key sgcc creates.
KEY_BYTES = 32
#: Largest key file read (a key is a secret, not a document).
MAX_KEY_FILE = 4096


class KeyFileError(Exception):
    """A key file that cannot be used (missing, unreadable, writable by others, empty)."""


def user_key_path() -> str:
    """The user's own signing key: ``signing.key`` beside the user configuration file."""
    from sgcc import dirs

    return dirs.signing_key_file()


def _read_key(path: str) -> bytes:
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise KeyFileError(f"cannot open key file {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise KeyFileError(f"key file {path} is not a regular file")
        if st.st_mode & 0o022:
            raise KeyFileError(f"key file {path} is writable by others (chmod go-w)")
        data = os.read(fd, MAX_KEY_FILE + 1)
    finally:
        os.close(fd)
    key = data.strip()
    if not key or len(data) > MAX_KEY_FILE:
        raise KeyFileError(f"key file {path} is empty or too large")
    return key


def load_key(path: str, *, create: bool = False) -> bytes:
    """The key in ``path``; with ``create``, a new random key is made there first if none
    exists (mode 0600; a concurrent creator's key wins and is read back). The new key appears
    whole or not at all: ``make -j`` on a fresh machine has several compiles creating it at once."""
    if create and not os.path.exists(path):
        from sgcc.fsutil import atomic_write

        os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
        try:
            atomic_write(path, os.urandom(KEY_BYTES).hex().encode() + b"\n", mode=0o600, fsync=True,
                         exclusive=True)
        except FileExistsError:
            pass  # another compile made it first: its key is the user's key
    return _read_key(path)


def _sha256(*parts: bytes) -> bytes:
    from sgcc.cache.keys import sha256  # the built-in module: hashlib costs every hit ~4 ms

    h = sha256()
    for part in parts:  # no concatenated copy of a message of a few hundred kilobytes
        h.update(part)
    return h.digest()


def hmac_sha256(key: bytes, message: bytes) -> str:
    """HMAC-SHA256 (RFC 2104) of ``message`` under ``key``, in hex; the same value as
    ``hmac.new(key, message, "sha256")``, written out so a cache hit imports neither hmac
    nor hashlib."""
    if len(key) > 64:
        key = _sha256(key)
    key = key.ljust(64, b"\0")
    inner = _sha256(bytes(b ^ 0x36 for b in key), message)
    return _sha256(bytes(b ^ 0x5C for b in key), inner).hex()


def key_id(key: bytes) -> str:
    """A short public name of a key (its hash), written next to a signature."""
    return _sha256(b"sgcc-key-id\0" + key).hex()[:16]


class Keyring:
    """The key that signs new entries and every key whose signatures are accepted."""

    def __init__(self, signing: bytes, trusted: Sequence[bytes] = ()):
        self.signing = signing
        self.keys = {key_id(k): k for k in [signing, *trusted]}
        self.signing_id = key_id(signing)

    @classmethod
    def load(cls, signing_key: str | None = None, trusted_keys: list[str] | tuple = (),
             *, create: bool = True) -> Keyring:
        """The keyring of these settings: ``signing_key`` (a path; default the user's own key,
        created on first use) and ``trusted_keys`` (paths). Raises :class:`KeyFileError`."""
        signing = load_key(signing_key or user_key_path(), create=create and not signing_key)
        return cls(signing, [load_key(p) for p in trusted_keys])

    def sign(self, body: bytes) -> str:
        """``KEYID:HMAC`` of ``body`` under the signing key."""
        return f"{self.signing_id}:{hmac_sha256(self.signing, body)}"

    def verify(self, signature: str, body: bytes) -> bool:
        """Whether ``signature`` is a valid HMAC of ``body`` by a trusted key."""
        from _operator import _compare_digest  # constant time, as hmac.compare_digest

        kid, _, mac = signature.partition(":")
        key = self.keys.get(kid)
        if key is None or not mac:
            return False
        return _compare_digest(hmac_sha256(key, body).encode(), mac.encode("ascii", "replace"))
