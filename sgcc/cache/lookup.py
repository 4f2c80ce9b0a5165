"""What one compile asks the cache: from gcc's assembly to the assembly to assemble, in one call.

The drop-in (:mod:`sgcc.dropin.driver`) holds the settings and gcc; this module holds the
lookup policy, so the walk of a compile goes driver → here → driver once per step:

1. :meth:`Lookup.plan`, before gcc runs: the compile's context (:func:`sgcc.cache.keys.context`)
   and the keys with winners in it: the local index of winners (:func:`winners`, one
   directory listing; the store keeps it exact, see :mod:`sgcc.cache.store`) and the remote's.
   No key there, no overlay, no recording: the driver hands the command to gcc in one exec,
   having imported only this module and :mod:`sgcc.cache.keys` of the cache.
2. :meth:`Lookup.get`, per source, on gcc's assembly: its key, then the layers in order:

   * the *overlay* (``SGCC_OVERLAY``, set by ``sgcc optimize --project`` while it builds a
     candidate): a whole unit's text by compile key, written by this very sgcc run, used
     without a signature, each use noted in ``SGCC_OVERLAY_USED``;
   * a key not in the index has nothing to substitute (counted as a miss, or as a hit on
     gcc's code when an entry without winners is there);
   * the memo of the last hit on this entry version (:meth:`Store.read_joined`): the joined
     assembly without decoding the entry or splitting gcc's assembly;
   * :meth:`Store.get`, the one lookup over local and remote storage (signed, made for this
     key), then :meth:`sgcc.cache.entry.Applied.join`, then the memo written for next time.

The counters (``tu_lookups``, ``tu_hits``, ``tu_misses``, ``tu_hits_no_winner``,
``tu_hits_unusable``, ``units_substituted``, ``overlay``) are :attr:`Lookup.counts`, which the
driver records with the compile's own.

Kept lean: on the compile path of every eligible compile (the store is imported only when a
key of the index matches; the unit parser, json and the entry module only on a hit or an
overlay).
"""

from __future__ import annotations

import os

from sgcc.cache import keys
from sgcc.errors import log

TYPE_CHECKING = False  # typing's own import costs a compile ~2 ms; mypy knows this name
if TYPE_CHECKING:
    from sgcc.cache.remote import Layer
    from sgcc.cache.store import Store

#: Largest ``SGCC_OVERLAY`` file read (the assembly of the units a project build replaces).
MAX_OVERLAY = 256 << 20


class Found:
    """The answer for one unit: its cache ``key``; ``text``, the assembly to assemble instead
    of gcc's (None: gcc's as it is); ``how`` it was found (``overlay``, ``memo``, ``entry``, or
    ``""``); the ``functions`` substituted."""

    __slots__ = ("key", "text", "how", "functions")

    def __init__(self, key: str, text: str | None = None, how: str = "", functions: list[str] | None = None):
        self.key, self.text, self.how = key, text, how
        self.functions: list[str] = functions or []


def index_dir(root: str, context_id: str) -> str:
    """The directory of a context's index of winners: one empty file per key with winners."""
    return os.path.join(root, "entries", context_id, "win")


def mark_path(root: str, key: str) -> str:
    """``key``'s mark in the index (the store creates and removes it under the entry's lock)."""
    return os.path.join(index_dir(root, keys.key_context_id(key)), key)


def winners(root: str, context_id: str) -> frozenset[str]:
    """The keys in this context whose entries have winners to substitute (one listing)."""
    try:
        return frozenset(os.listdir(index_dir(root, context_id)))
    except OSError:
        return frozenset()


class Lookup:
    """The cache as one compile sees it (see the module docstring): the cache directory
    ``root`` (None when the cache is off: an overlay or a recording may still need the keys),
    the keys that sign and are trusted, and the ``remote`` layer behind it, all handed in by
    the driver (nothing here reads configuration)."""

    def __init__(self, ctx: dict, marks: frozenset[str], *, root: str | None = None, signing_key: str = "",
                 trusted_keys: str = "", remote: Layer | None = None, overlay: str = "", overlay_used: str = ""):
        self.ctx = ctx
        self.marks = marks
        self.root = root
        self._keys = (signing_key, trusted_keys)
        self.remote = remote
        self.overlay = overlay
        self.overlay_used = overlay_used
        self.counts: dict[str, int] = {}
        self._store: Store | None = None

    @classmethod
    def plan(cls, compiler: str, flags: list[str], isa: str, *, root: str | None = None, signing_key: str = "",
             trusted_keys: str = "", remote: Layer | None = None, overlay: str = "",
             overlay_used: str = "") -> Lookup:
        """The lookup of a compile by ``compiler`` with ``flags`` (inputs and dependency flags
        removed) under the ``isa`` policy: its context and the keys with winners in it, listed
        now in the local index and, with a ``remote`` layer, the server's (one round trip,
        skipped while the server is marked down)."""
        ctx = keys.context(compiler, flags, isa)
        context_id = keys.context_id(ctx)
        marks = winners(root, context_id) if root else frozenset()
        if remote is not None:
            marks |= remote.winners(context_id)
        return cls(ctx, marks, root=root, signing_key=signing_key, trusted_keys=trusted_keys, remote=remote,
                   overlay=overlay, overlay_used=overlay_used)

    @property
    def store(self) -> Store | None:
        """The cache (local, and the remote behind it), opened on first use; None when off."""
        if self._store is None and self.root:
            from sgcc.cache.store import Store

            signing_key, trusted_keys = self._keys
            # The driver records the remote's counters with the compile's: the store does not.
            self._store = Store(self.root, signing_key=signing_key, trusted_keys=trusted_keys, remote=self.remote,
                                record_remote=False)
        return self._store

    @property
    def context_id(self) -> str:
        """The id of this compile's context (what its keys end with; sgcc's log names it)."""
        return keys.context_id(self.ctx)

    def key(self, asm: str) -> str:
        """The cache key of the unit whose gcc assembly is ``asm``, in this compile's context."""
        return keys.entry_key(self.ctx, keys.tu_digest(asm))

    def get(self, asm: str, name: str = "") -> Found:
        """What to assemble for the unit gcc compiled to ``asm`` (``name``: the source, for the
        log), through the layers in the module docstring."""
        key = self.key(asm)
        if self.overlay:
            text = _overlay_for(self.overlay, key)
            if text is not None:
                self._count("overlay")
                _note_used(self.overlay_used, key)
                return Found(key, text, "overlay")
        store = self.store
        if store is None:
            return Found(key)
        self._count("tu_lookups")
        if key not in self.marks:  # no winner (the index is exact for entries with winners)
            self._count("tu_hits_no_winner" if store.exists(key) else "tu_misses")
            return Found(key)
        # The memo holds what follows gcc's first line, `.file "name"`: the key does not
        # cover it (the same unit compiled from another path), so it is gcc's, put back here.
        first = asm.partition("\n")[0] if asm.startswith('\t.file\t"') else ""
        memo = store.read_joined(key)
        if memo is not None:  # a repeated hit: what the last one substituted, for this version
            joined, functions = memo
            store.touch(key)
            self._hit(functions)
            log(f"cache hit {key[:16]} (memoized): substituted {', '.join(sorted(functions))} in {name}")
            return Found(key, f"{first}\n{joined}" if first else joined, "memo", functions)
        entry = store.get(key, touch=True)
        if entry is None:
            if store.untrusted:  # counted by the store; said once here
                log(f"cache entry {key[:16]} ignored: {store.untrusted}")
            else:
                self._count("tu_misses")
            return Found(key)
        applied = entry.applied
        if applied is None or not applied.units:
            self._count("tu_hits_no_winner")  # a search found nothing faster: gcc's code it is
            return Found(key)
        try:
            new = applied.join(asm)
        except KeyError:
            self._count("tu_hits_unusable")
            return Found(key)
        functions = sorted(applied.units)
        if not applied.whole:
            if first and new.startswith(first + "\n"):
                store.write_joined(key, entry.version, new[len(first) + 1:], functions)
            elif not first:
                store.write_joined(key, entry.version, new, functions)
        self._hit(functions)
        log(f"cache hit {key[:16]}: substituted {', '.join(functions)} in {name}")
        return Found(key, new, "entry", functions)

    def _hit(self, functions: list[str]) -> None:
        self._count("tu_hits")
        self._count("units_substituted", len(functions))

    def _count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n


def _overlay_for(path: str, key: str) -> str | None:
    """The overlay's assembly for the compile with cache key ``key``, if it names it."""
    import json

    from sgcc.errors import SgccError
    from sgcc.fsutil import read_bounded

    try:
        # Bounded and regular only: an overlay naming /dev/zero or a FIFO is ignored, not read.
        overlay = json.loads(read_bounded(path, MAX_OVERLAY, what="overlay").decode("utf-8", "surrogateescape"))
    except (SgccError, ValueError):
        return None
    text = overlay.get(key) if isinstance(overlay, dict) else None
    return text if isinstance(text, str) else None


def _note_used(path: str, key: str) -> None:
    """Append ``key`` to ``SGCC_OVERLAY_USED``: the project search checks that the build used
    every compile of its overlay (a candidate it did not use would be timed as gcc's build)."""
    if not path:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (key + "\n").encode())  # one short write with O_APPEND: whole lines under make -j
        finally:
            os.close(fd)
    except OSError:
        pass  # the search then finds the key missing and refuses the candidate: safe
