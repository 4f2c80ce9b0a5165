"""The verdict cache's storage: one lookup, :meth:`Store.get`, over the local directory and
the remote layer behind it (ccache's ``get(key)`` over layered storage); the index of winners
kept true, the memoized substitutions, eviction.

**Values.** One :class:`~sgcc.cache.entry.Entry` per translation unit in one context (its key:
:mod:`sgcc.cache.keys`); what an entry holds, how it is signed and checked is
:mod:`sgcc.cache.entry`'s. Keying on the whole file rather than one function is deliberate: an
edit anywhere in a file invalidates its cached winners. A winner was proven correct next to
the other functions of its file as gcc compiled them; reusing it next to different ones would
need luck.

**Files.** ``ROOT/entries/<context id>/<key>.json``, written by the one atomic writer
(:func:`sgcc.fsutil.atomic_write`: a temporary file and ``rename``) under an exclusive lock
of ``ROOT/locks/<key[:2]>.lock`` (:class:`sgcc.fsutil.FileLock`, an ``flock``). A corrupt or
truncated entry is a miss, counted, and removed so the next search repairs it. Size is
bounded: after a store, entries beyond ``cache_size`` are evicted least recently used first
(a hit refreshes an entry's modification time). Statistics: :mod:`sgcc.cache.stats`.

**The index of winners.** ``ROOT/entries/<context id>/win/<key>`` is an empty file that exists
whenever the entry ``<key>`` has winners to substitute. It is created *before* an entry with
winners is renamed into place and removed only *after* the entry lost them (or is deleted),
all under the entry's lock, so at every moment: an entry with winners has its mark. A compile
therefore asks "can this cache hold a winner for me?" with one directory listing
(:func:`sgcc.cache.lookup.winners`, with the remote's index joined) before running anything,
without importing this module: no mark in its context means no entry a full lookup could find
has anything to substitute, and gcc runs the command as it is. A stale mark (a crash between
the two steps, an entry removed by hand) only costs that context the full lookup.

**Memoized hits.** ``ROOT/entries/<context id>/joined/<key>.s`` keeps the assembly the last hit
on ``<key>`` substituted (after gcc's first ``.file`` line), tagged with the checksum of the
entry version it came from (:meth:`Store.read_joined`, :meth:`Store.write_joined`; the compile's
use of it: :mod:`sgcc.cache.lookup`). Other files: ``ROOT/stats.d`` and ``ROOT/stats.json``
(:mod:`sgcc.cache.stats`), ``ROOT/as-commands`` (:mod:`sgcc.dropin.assemble`),
``ROOT/wrapper-state/`` (:mod:`sgcc.cache.generation`: the token every change of winners
replaces, which ccache and sccache hash in front of sgcc).

**Whose entry.** An entry is used only if a trusted key signed it (:mod:`sgcc.cache.trust`)
and it names the very key it is read under (:meth:`sgcc.cache.entry.Entry.decode`): a signed
entry of another unit or context moved under this key (in a shared directory, or served by a
remote) is refused and counted as ``untrusted``.

**Remote.** A :class:`Store` may have a remote layer behind it (:mod:`sgcc.cache.remote`),
handed to it by the caller (:mod:`sgcc.cache.compose`; this module reads no configuration):
a local miss asks it, a validated remote entry fills this directory as it came, and
:meth:`Store.update` stores there too unless it is read-only.

Kept lean: imported by the drop-in compile; the entry module (and json) only to read or
write an entry.
"""

from __future__ import annotations

import os

from sgcc.cache import keys, lookup
from sgcc.cache import stats as statsmod

TYPE_CHECKING = False  # typing's own import costs a compile ~2 ms; mypy knows this name
if TYPE_CHECKING:
    from collections.abc import Callable

    from sgcc.cache.entry import Entry
    from sgcc.cache.remote import Layer
    from sgcc.cache.trust import Keyring
    from sgcc.fsutil import FileLock

#: Largest entry (and memoized assembly) read on the compile path: a build never reads
#: without bound, whoever wrote the cache.
MAX_ENTRY_BYTES = 64 << 20
#: Default bound on the cache's size.
DEFAULT_MAX_BYTES = 256 << 20


def entry_dir(root: str, key: str) -> str:
    """The directory holding ``key``'s entry (one per context)."""
    return os.path.join(root, "entries", keys.key_context_id(key))


def default_root() -> str:
    """``$SGCC_CACHE_DIR``, else the platform's user cache directory for sgcc (:mod:`sgcc.dirs`)."""
    from sgcc import dirs

    return dirs.cache_root()


class Store:
    """One cache directory, and the remote layer behind it when there is one."""

    def __init__(self, root: str | os.PathLike | None = None, max_bytes: int = DEFAULT_MAX_BYTES, *,
                 signing_key: str = "", trusted_keys: str = "", remote: Layer | None = None,
                 record_remote: bool = True):
        """``remote``: the remote layer behind this directory (:func:`sgcc.cache.compose.remote_layer`),
        or None for none. ``record_remote``: whether this store adds the layer's counters to its
        statistics as it uses it (the drop-in records them itself, with the compile's own)."""
        self.root = os.fspath(root) if root is not None else default_root()
        self.max_bytes = max_bytes
        self._key_settings = (signing_key, trusted_keys)
        self._keyring: Keyring | None = None
        self.untrusted = ""  # why the last entry read was ignored, if it was
        self.remote = remote
        self._record_counts = record_remote

    @property
    def keyring(self) -> Keyring:
        """The keys that sign what sgcc stores here and vouch for what it reads (loaded, and the
        user's own key made, on first use). Raises :class:`sgcc.cache.trust.KeyFileError`."""
        if self._keyring is None:
            from sgcc.cache import trust

            signing, trusted = self._key_settings
            self._keyring = trust.Keyring.load(signing or None, [p for p in trusted.split(",") if p])
        return self._keyring

    # -- paths ----------------------------------------------------------------------------

    def path(self, key: str) -> str:
        """Where ``key``'s entry lives."""
        return os.path.join(entry_dir(self.root, key), key + ".json")

    def _mark_path(self, key: str) -> str:
        return lookup.mark_path(self.root, key)

    def _lock_path(self, key: str) -> str:
        return os.path.join(self.root, "locks", key[:2] + ".lock")

    def _locked(self, key: str) -> FileLock:
        """``key``'s entry lock, taken (the caller releases it in a ``finally``)."""
        from sgcc.fsutil import FileLock

        lock = FileLock(self._lock_path(key))
        lock.acquire()
        return lock

    # -- reading: the one lookup --------------------------------------------------------------

    def get(self, key: str, *, touch: bool = False) -> Entry | None:
        """The entry for ``key``: the local one, else the remote's (validated, then kept
        here), or None. Only an intact entry a trusted key signed for this very key is
        returned: a corrupt local one is removed and counted, an untrusted one ignored and
        counted (:attr:`untrusted` says why). The entry's ``version`` names what was read."""
        from sgcc.cache.entry import CacheError, Entry, UntrustedEntry

        self.untrusted = ""
        path = self.path(key)
        raw = _read_capped(path)
        if raw is None:
            return self._from_remote(key)
        try:
            entry = Entry.decode(raw, self.keyring, key=key)
        except UntrustedEntry as exc:
            self.untrusted = f"{exc}"
            self.bump({"untrusted": 1})
            return None
        except CacheError:
            self._discard_corrupt(key, path, raw)
            return None
        if touch:
            self.touch(key)
        return entry

    # -- the remote layer (sgcc.cache.remote) -------------------------------------------------

    def _record_remote(self, layer: Layer) -> None:
        if self._record_counts and layer.counts:
            self.bump(layer.counts)
            layer.counts = {}

    def _from_remote(self, key: str) -> Entry | None:
        """A local miss: the remote's entry, validated (:meth:`sgcc.cache.remote.Layer.fetch`),
        fills the local cache and is returned as a local read returns it."""
        from sgcc.cache.entry import Entry

        layer = self.remote
        if layer is None:
            return None
        try:
            keyring = self.keyring
            got = layer.fetch(key, lambda raw: Entry.decode(raw, keyring, key=key), MAX_ENTRY_BYTES)
        finally:
            self._record_remote(layer)
        if got is None:
            if layer.refused:
                self.untrusted = f"remote entry refused: {layer.refused}"
            return None
        raw, entry = got
        self._fill(key, raw, entry.has_winners)
        return entry

    def _fill(self, key: str, raw: bytes, has_winners: bool) -> None:
        """Keep a validated remote entry locally, as it came (unless one appeared meanwhile)."""
        path = self.path(key)
        mark = self._mark_path(key)
        lock = self._locked(key)
        try:
            if os.path.exists(path):
                return
            os.makedirs(os.path.dirname(mark), exist_ok=True)
            if has_winners:  # the mark first, as update() does
                os.close(os.open(mark, os.O_WRONLY | os.O_CREAT, 0o666))
            from sgcc.fsutil import atomic_write

            atomic_write(path, raw, mode=None)
        except OSError:
            return
        finally:
            lock.release()
        self.trim()

    def touch(self, key: str) -> None:
        """Mark ``key``'s entry as just used (least recently used = oldest mtime)."""
        try:
            os.utime(self.path(key))
        except OSError:
            pass

    # -- the substituted assembly, memoized ------------------------------------------------

    def _joined_path(self, key: str) -> str:
        return os.path.join(entry_dir(self.root, key), "joined", key + ".s")

    def read_joined(self, key: str) -> tuple[str, list[str]] | None:
        """The assembly a hit on ``key`` substitutes (after its first line) and the functions
        substituted, as :meth:`write_joined` kept it for the entry's current version; else None.

        Lets a repeated hit skip decoding the entry and splitting the assembly into units
        (json, re and the unit parser: tens of milliseconds on a large file)."""
        from sgcc.cache import entry as entrymod

        entry = _read_capped(self.path(key))
        raw = _read_capped(self._joined_path(key))
        if entry is None or raw is None:
            return None
        # The entry is checked as a full read checks it (not decoded): a corrupt or untrusted
        # entry is a miss, found by the full read that follows, memo or not.
        enl = entry.find(b"\n")
        head = entrymod.header(entry)
        if len(head) != 4 or head[1] != str(entrymod.SCHEMA) or keys.sha256(entry[enl + 1:]).hexdigest() != head[2]:
            return None
        # Made for this key (the top-level "key" line json.dumps(indent=1) writes; quotes inside
        # strings are escaped, so no value can fake it): else the full read refuses it.
        if b'\n "key": "' + key.encode("ascii", "replace") + b'"' not in entry[enl + 1:]:
            return None
        nl = raw.find(b"\n")
        header = raw[:nl].decode("ascii", "replace").split(" ") if nl > 0 else []
        if len(header) != 6 or header[0] != "sgcc-joined" or header[1] != head[2]:
            return None  # another version of the entry (or none): the memo is stale
        body = raw[nl + 1:]
        # Both files are code a build will assemble: each must carry a trusted signature. The
        # memo's covers its line and its body, so its body's own checksum (header[2]) needs no
        # second pass over the assembly here (one SHA-256 pass less on every repeated hit).
        signed_line = raw[:nl].rpartition(b" ")[0]
        if not self.keyring.verify(head[3], entry[enl + 1:]) or not self.keyring.verify(header[5], signed_line + body):
            return None
        return body.decode("utf-8", "surrogateescape"), header[4].split(",")

    def write_joined(self, key: str, entry_sum: str, text: str, functions: list[str]) -> None:
        """Keep ``text`` as what a hit on the version ``entry_sum`` of ``key`` substitutes.
        Written only if that version is still the entry's (checked under its lock, which every
        update of the entry holds while it removes the memo), so a memo is never stale."""
        body = text.encode("utf-8", "surrogateescape")
        names = ",".join(functions)
        if not functions or any(not f or set(f) & set(" ,\n") for f in functions):
            return
        line = f"sgcc-joined {entry_sum} {keys.sha256(body).hexdigest()} {len(functions)} {names}"
        data = f"{line} {self.keyring.sign(line.encode() + body)}\n".encode() + body
        path = self._joined_path(key)
        lock = self._locked(key)
        try:
            try:
                with open(self.path(key), "rb") as fh:
                    head = fh.readline(200).split()
            except OSError:
                return
            if len(head) != 4 or head[2].decode("ascii", "replace") != entry_sum:
                return
            from sgcc.fsutil import atomic_write

            atomic_write(path, data, mode=None)
        except OSError:
            pass
        finally:
            lock.release()

    def exists(self, key: str) -> bool:
        """Whether an entry file for ``key`` is there (not read, not checked)."""
        return os.path.exists(self.path(key))

    def _discard_corrupt(self, key: str, path: str, raw: bytes) -> None:
        lock = self._locked(key)
        try:
            # Re-check under the lock: a writer may have replaced it meanwhile.
            try:
                with open(path, "rb") as fh:
                    now = fh.read()
            except OSError:
                return
            if now == raw:
                _unlink(path)
                _unlink(self._mark_path(key))
                _unlink(self._joined_path(key))
                _bump_generation(self.root)  # whatever it held, it is gone now
        finally:
            lock.release()
        self.bump({"corrupt": 1})

    # -- writing --------------------------------------------------------------------------

    def update(self, key: str, change: Callable[[Entry | None], Entry]) -> Entry:
        """Read-modify-write the entry for ``key`` under its lock: ``change(entry_or_None)``
        returns the new entry (the old one changed, or a new one). Written atomically, keyed
        ``key``; returns what was written. Keeps the index of winners true (see the module
        docstring). Only the local entry is read: a remote one is not built on."""
        from sgcc.cache.entry import CacheError, Entry

        path = self.path(key)
        mark = self._mark_path(key)
        lock = self._locked(key)
        try:
            old: Entry | None
            try:
                with open(path, "rb") as fh:
                    old = Entry.decode(fh.read(), self.keyring, key=key)
            except (OSError, CacheError):  # an untrusted old entry is replaced, never built on
                old = None
            new = change(old)
            new.key = key
            data = new.encode(self.keyring)
            has_winners = new.has_winners
            had_winners = os.path.exists(mark)
            os.makedirs(os.path.dirname(mark), exist_ok=True)
            if has_winners:  # the mark first: a compile must never see winners without it
                os.close(os.open(mark, os.O_WRONLY | os.O_CREAT, 0o666))
            from sgcc.fsutil import atomic_write

            atomic_write(path, data, mode=None, fsync=True)
            _unlink(self._joined_path(key))  # derived from the old version
            if not has_winners:
                _unlink(mark)
            if has_winners or had_winners:  # after the change, never before it (sgcc.cache.generation)
                _bump_generation(self.root)
        finally:
            lock.release()
        self.bump({"stores": 1})
        layer = self.remote
        if layer is not None:  # after the local store, outside its lock: a slow server holds no one up
            layer.push(key, data, has_winners)
            self._record_remote(layer)
        self.trim()
        return new

    def delete(self, key: str) -> bool:
        """Remove ``key``'s entry (and its mark); whether there was one."""
        lock = self._locked(key)
        mark = self._mark_path(key)
        had_winners = os.path.exists(mark)
        try:
            os.unlink(self.path(key))
            return True
        except OSError:
            return False
        finally:
            _unlink(mark)
            _unlink(self._joined_path(key))
            if had_winners:  # after the change (sgcc.cache.generation)
                _bump_generation(self.root)
            lock.release()

    # -- listing, size, eviction ----------------------------------------------------------

    def keys(self) -> list[str]:
        """Every entry's key, sorted."""
        out: list[str] = []
        base = os.path.join(self.root, "entries")
        try:
            subdirs = os.listdir(base)
        except OSError:
            return []
        for sub in subdirs:
            try:
                names = os.listdir(os.path.join(base, sub))
            except OSError:
                continue
            out.extend(n[:-5] for n in names if n.endswith(".json"))
        return sorted(out)

    def _files(self) -> list[tuple[float, int, str, str]]:
        """(mtime, size, key, path) of every entry."""
        files = []
        for key in self.keys():
            path = self.path(key)
            try:
                st = os.stat(path)
            except OSError:
                continue
            files.append((st.st_mtime, st.st_size, key, path))
        return files

    def size(self) -> int:
        """Bytes the entries take."""
        return sum(f[1] for f in self._files())

    def trim(self, max_bytes: int | None = None) -> int:
        """Evict least recently used entries until the cache holds at most ``max_bytes``
        (90% of it, to not evict on every store); returns how many were evicted."""
        limit = self.max_bytes if max_bytes is None else max_bytes
        files = self._files()
        total = sum(f[1] for f in files)
        if total <= limit:
            return 0
        target = limit * 0.9 if max_bytes is None else limit
        evicted = 0
        for _mtime, size, key, _path in sorted(files):
            if total <= target:
                break
            if self.delete(key):
                total -= size
                evicted += 1
        if evicted:
            self.bump({"evictions": evicted})
        return evicted

    def clear(self) -> int:
        """Remove every entry; how many there were."""
        n = 0
        for key in self.keys():
            n += self.delete(key)
        return n

    # -- statistics -----------------------------------------------------------------------

    def bump(self, counts: dict, reasons: dict | None = None) -> None:
        """Add ``counts`` (and pass-through ``reasons``) to the statistics; never raises."""
        statsmod.record(self.root, counts, reasons)

    def stats(self) -> dict:
        """Counters, pass-through reasons, and the cache's current size and entry count."""
        data = statsmod.read(self.root)
        files = self._files()
        data["entries"] = len(files)
        data["bytes"] = sum(f[1] for f in files)
        data["max_bytes"] = self.max_bytes
        data["root"] = self.root
        return data

    def zero_stats(self) -> None:
        """Reset the counters (entries are kept)."""
        statsmod.zero(self.root)


def _bump_generation(root: str) -> None:
    """A new winners' generation (:mod:`sgcc.cache.generation`), imported only by writes."""
    from sgcc.cache import generation

    generation.bump(root)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _read_capped(path: str) -> bytes | None:
    """The bytes of a regular file of at most :data:`MAX_ENTRY_BYTES`, else None."""
    from sgcc.errors import SgccError
    from sgcc.fsutil import read_bounded

    try:
        return read_bounded(path, MAX_ENTRY_BYTES, what="cache entry")
    except SgccError:
        return None
