"""Remote storage for the verdict cache, layered behind the local directory as ccache does it.

**Setting.** ``remote_storage = "redis://[[user]:password@]host[:port][/db][|read-only]"``
(:func:`parse`; the one scheme so far is ``redis``). Lookups go local first; only a local miss
asks the remote. A remote entry is used only if it is intact, carries the signature of a key
this user trusts (:mod:`sgcc.cache.trust`: the user's own or a team key) and names the very
key it was asked for; then it fills the local cache, and the build reads it from there.
Stores go to the local cache and then to the remote, unless the remote is ``read-only``.
A compromised server can withhold winners but cannot get code into a build.

**Layout on the server** (:data:`NAMESPACE` ``sgcc:2``, 2 = the entry schema):
``sgcc:2:<context id>:<key>`` holds the entry's bytes exactly as the local file holds them,
and the set ``sgcc:2:<context id>:win`` names the keys with winners: the remote twin of the
local index (:mod:`sgcc.cache.store`). ``sgcc:2:generation`` is a random token every store
replaces in the same transaction: ``sgcc cache state`` folds it into what ccache and sccache
hash in front of sgcc, so a winner stored remotely reaches the next wrapped build
(:mod:`sgcc.dropin.wrapper`). A compile asks it for its context before running gcc,
so a compile with no winner anywhere still goes straight to gcc in one exec.

**Failure.** Every conversation with the server has one deadline, ``remote_timeout``
milliseconds. A server that is unreachable, slow, or answers something that is not Redis
costs that at most, is counted (``remote_errors`` / ``remote_timeouts``), and is then
marked down in ``ROOT/remote-down`` for :data:`DOWN_SECONDS`: the compiles of the rest of
the build skip it (``remote_skipped``) and run as plain local compiles. So a dead server
costs a build one timeout (per minute of build), not one per compile; under ``make -jN``
the first N compiles may each pay it, at the same time. A value that is garbage, oversized
or untrusted is refused (``remote_refused``) without marking the server down.

**Composition.** Nothing here reads configuration: whoever holds the settings (the drop-in
driver, the engine) builds the layer with :func:`sgcc.cache.compose.remote_layer` and hands it
to :class:`sgcc.cache.store.Store`, as ccache's storage layer is handed its local and remote
storage. **Another backend** (HTTP, S3, ...) implements :class:`Storage` (``get``, ``put``,
``winners``) and gets a branch in :func:`sgcc.cache.compose.open_storage`; the layering, validation,
down marker and statistics here stay as they are.

Kept lean: imported by a compile only when ``remote_storage`` is set.
"""

from __future__ import annotations

import os

from sgcc.errors import log

TYPE_CHECKING = False  # typing's own import costs a compile ~2 ms; mypy knows this name
if TYPE_CHECKING:
    from collections.abc import Callable

    from sgcc.cache.entry import Entry

NAMESPACE = "sgcc:2"
#: How long a failed server is left alone (seconds): about one build.
DOWN_SECONDS = 60
DOWN_FILE = "remote-down"
DEFAULT_PORT = 6379
SCHEMES = ("redis",)


class RemoteError(Exception):
    """The remote could not be used for this request (unreachable, misbehaving)."""


class RemoteTimeout(RemoteError):
    """The remote did not answer within ``remote_timeout``."""


class RemoteRefused(Exception):
    """A value the remote returned cannot be used (too large, not an entry, untrusted)."""


class Spec:
    """A parsed ``remote_storage`` value."""

    __slots__ = ("scheme", "host", "port", "db", "username", "password", "read_only", "url")

    def __init__(self, scheme: str, host: str, port: int, db: int, username: str, password: str,
                 read_only: bool):
        self.scheme, self.host, self.port, self.db = scheme, host, port, db
        self.username, self.password, self.read_only = username, password, read_only
        auth = "***@" if password else ""
        self.url = f"{scheme}://{auth}{host}:{port}/{db}" + ("|read-only" if read_only else "")

    def __repr__(self) -> str:
        return f"Spec({self.url})"  # never the password


def parse(text: str) -> Spec:
    """``scheme://[[user]:password@]host[:port][/db]`` followed by ``|read-only`` attributes.
    Raises ValueError saying what is wrong."""
    url, *attrs = [p.strip() for p in str(text).strip().split("|")]
    read_only = False
    for attr in attrs:
        if attr == "read-only":
            read_only = True
        else:
            raise ValueError(f"unknown remote storage attribute {attr!r} (known: read-only)")
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"expected a URL like redis://host:6379/0, got {text!r}")
    if scheme not in SCHEMES:
        raise ValueError(f"unsupported remote storage {scheme!r} (supported: {', '.join(SCHEMES)})")
    netloc, _, path = rest.partition("/")
    userinfo, at, hostport = netloc.rpartition("@")
    username = password = ""
    if at:
        user, colon, pw = userinfo.partition(":")
        username, password = unquote(user), unquote(pw) if colon else ""
        if not colon:  # redis://secret@host: the one field is the password, as redis-cli reads it
            username, password = "", unquote(user)
    if hostport.startswith("["):  # [::1]:6379
        host, _, port_text = hostport[1:].partition("]")
        port_text = port_text.removeprefix(":")
    else:
        host, _, port_text = hostport.partition(":")
    if not host:
        raise ValueError(f"no host in {url!r}")
    try:
        port = int(port_text) if port_text else DEFAULT_PORT
        db = int(path) if path else 0
    except ValueError:
        raise ValueError(f"bad port or database number in {url!r}") from None
    if not 0 < port < 65536 or db < 0:
        raise ValueError(f"port or database out of range in {url!r}")
    return Spec(scheme, host, port, db, username, password, read_only)


class Storage:
    """What a cache backend stores: entries' signed bytes by key, and per context the keys
    whose entries have winners. Implementations raise :class:`RemoteError` (or
    :class:`RemoteTimeout`) when the backend cannot answer, :class:`RemoteRefused` for a value
    they will not return; they never decide what is trusted (the layer does)."""

    def get(self, key: str, limit: int) -> bytes | None:
        """The bytes stored under ``key`` (at most ``limit``), or None."""
        raise NotImplementedError

    def winners(self, context_id: str) -> frozenset[str]:
        """The keys in this context whose entries have winners."""
        raise NotImplementedError

    def put(self, key: str, data: bytes, has_winners: bool) -> None:
        """Store ``data`` under ``key``, keep the winners index true, and replace the
        generation (:meth:`generation`) in the same transaction."""
        raise NotImplementedError

    def generation(self) -> str:
        """A token every :meth:`put` replaces ("" before the first): what a compiler cache in
        front of sgcc folds into its keys, once per build (:mod:`sgcc.dropin.wrapper`)."""
        raise NotImplementedError


def unquote(text: str) -> str:
    """``%XX`` escapes decoded (a password may need them); urllib.parse would import ``re``."""
    if "%" not in text:
        return text
    out, i, raw = bytearray(), 0, text.encode()
    while i < len(raw):
        pair = raw[i + 1:i + 3]
        if raw[i] == 0x25 and len(pair) == 2 and all(c in b"0123456789abcdefABCDEF" for c in pair):
            out.append(int(pair, 16))
            i += 3
            continue
        out.append(raw[i])
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _key_ok(key: str) -> bool:
    return len(key) == 64 and all(c in "0123456789abcdef" for c in key)


class Layer:
    """The remote as one process uses it: the down marker, the counters, validation.

    Never raises: every failure is counted in :attr:`counts` (the caller records them with
    its own statistics) and answered as "nothing there"."""

    def __init__(self, root: str, spec: Spec, storage: Storage):
        """``root``: the local cache directory (its down marker lives there); ``spec``: the
        parsed setting; ``storage``: the backend that talks to the server."""
        self.root = root
        self.spec = spec
        self.counts: dict[str, int] = {}
        self._storage = storage
        self._down: bool | None = None
        self.refused = ""  # why the last fetched value was refused

    @property
    def read_only(self) -> bool:
        """Whether stores skip the remote (``|read-only``)."""
        return self.spec.read_only

    def _count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    # -- the down marker ----------------------------------------------------------------------

    def _down_path(self) -> str:
        return os.path.join(self.root, DOWN_FILE)

    def down(self) -> bool:
        """Whether a recent failure says to leave the server alone (read once per process)."""
        if self._down is None:
            self._down = False
            try:
                with open(self._down_path(), "rb") as fh:
                    until, _, url = fh.read(512).decode("utf-8", "replace").partition("\n")[0].partition(" ")
                import time

                self._down = url == self.spec.url and time.time() < float(until)
            except (OSError, ValueError):
                pass
        return self._down

    def _mark_down(self, exc: Exception) -> None:
        import time

        self._down = True
        self._count("remote_timeouts" if isinstance(exc, RemoteTimeout) else "remote_errors")
        from sgcc.fsutil import atomic_write  # only once a server failed

        try:
            atomic_write(self._down_path(), f"{time.time() + DOWN_SECONDS:.3f} {self.spec.url}\n{exc}\n",
                         mode=0o666)
        except OSError:
            pass
        log(f"remote storage {self.spec.url} unusable ({exc}); not asked again for {DOWN_SECONDS} s")

    def storage(self) -> Storage:
        """The backend."""
        return self._storage

    def _usable(self) -> bool:
        if self.down():
            self._count("remote_skipped")
            return False
        return True

    # -- what callers use -----------------------------------------------------------------

    def winners(self, context_id: str) -> frozenset[str]:
        """The keys the remote says have winners in this context (nothing when it is down)."""
        if not self._usable():
            return frozenset()
        try:
            found = self.storage().winners(context_id)
        except RemoteRefused as exc:  # an index with members that cannot be keys
            self._refuse(context_id, str(exc))
            return frozenset()
        except RemoteError as exc:
            self._mark_down(exc)
            return frozenset()
        return frozenset(k for k in found if _key_ok(k) and k.endswith(context_id))

    def fetch(self, key: str, decode: Callable[[bytes], Entry], limit: int) -> tuple[bytes, Entry] | None:
        """The remote entry for ``key`` and its decoded form, if the server has one that
        ``decode`` accepts (the store's reader, :meth:`sgcc.cache.entry.Entry.decode`: intact,
        signed by a trusted key, made for this very key; it raises ValueError otherwise); else
        None (counted: ``remote_misses``, ``remote_refused``, or an error)."""
        self.refused = ""
        if not self._usable():
            return None
        self._count("remote_lookups")
        try:
            raw = self.storage().get(key, limit)
        except RemoteRefused as exc:
            self._refuse(key, str(exc))
            return None
        except RemoteError as exc:
            self._mark_down(exc)
            return None
        if raw is None:
            self._count("remote_misses")
            return None
        try:
            entry = decode(raw)
        except ValueError as exc:  # sgcc.cache.entry.CacheError and UntrustedEntry are ValueErrors
            self._refuse(key, str(exc))
            return None
        self._count("remote_hits")
        return raw, entry

    def _refuse(self, key: str, why: str) -> None:
        self.refused = why
        self._count("remote_refused")
        log(f"remote value {key[:16]} refused: {why}")

    def generation(self) -> str:
        """The server's generation (:meth:`Storage.generation`), or ``"unreachable"`` when it
        is marked down or fails now (then marked down, as any failure)."""
        if not self._usable():
            return "unreachable"
        try:
            return self.storage().generation()
        except (RemoteError, RemoteRefused) as exc:
            if isinstance(exc, RemoteError):
                self._mark_down(exc)
            return "unreachable"

    def push(self, key: str, data: bytes, has_winners: bool) -> bool:
        """Store an entry's bytes remotely too (not when read-only or down); whether it was."""
        if self.read_only or not self._usable():
            return False
        try:
            self.storage().put(key, data, has_winners)
        except RemoteError as exc:
            self._mark_down(exc)
            return False
        self._count("remote_stores")
        return True
