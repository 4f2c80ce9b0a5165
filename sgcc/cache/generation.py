"""The winners' generation: a token the store replaces after every change of what a compile
could substitute, so that a compiler cache in front of sgcc (ccache, sccache) never serves an
object made from an older state of this cache.

``ROOT/wrapper-state/generation`` holds one line of 32 random hex digits. A compiler cache
hashes the file into every key (``CCACHE_EXTRAFILES``/``SCCACHE_EXTRAFILES``, named by
``sgcc cache state``: :mod:`sgcc.dropin.wrapper`), so a new token is a new key for every
compile, and an object the wrapper stored under an old token is never looked up again.

Why that is exact: :meth:`sgcc.cache.store.Store.update` and :meth:`~sgcc.cache.store.Store.delete`
call :func:`bump` *after* the entry (and its mark in the index of winners) changed, under the
entry's lock. An object the wrapper keyed with token T was made by an sgcc that read the
cache either before the change (T's state) or after it (then stored under T, which is dead
once the bump lands, microseconds later). A bump before the change would be wrong: a compile
could key with the new token and still read the old entry. The token is random rather than a
counter: a cache directory removed and made again would count from the start, and a counter
could meet an old key again.

What does not bump: a remote entry filled into this directory (the compile's answer is the
same before and after: the remote served it), the memoized substitutions (derived from the
entry), statistics. Winners that appear only remotely reach a wrapped build through
``sgcc cache state`` (the remote's own generation, read once per build).

Lean: standard library only; imported by the store when it writes, never on a lookup.
"""

from __future__ import annotations

import os

#: The directory, under the cache root, of what wrappers hash (this token, ``*.state`` files).
DIRNAME = "wrapper-state"
FILENAME = "generation"


def directory(root: str) -> str:
    """``ROOT/wrapper-state``."""
    return os.path.join(root, DIRNAME)


def path(root: str) -> str:
    """The token's file."""
    return os.path.join(root, DIRNAME, FILENAME)


def bump(root: str) -> str:
    """Replace the token with a new random one (atomically); returns it. Never raises: a
    cache that cannot keep its token (read-only, full) leaves the old one, which a wrapper
    then keeps hashing; ``sgcc cache state`` also folds the index of winners itself into
    the state, so the next build sees the change (see :mod:`sgcc.dropin.wrapper`)."""
    token = os.urandom(16).hex()
    try:
        from sgcc.fsutil import atomic_write

        os.makedirs(directory(root), exist_ok=True)
        atomic_write(path(root), token + "\n", mode=None)
    except OSError:
        return ""
    return token


def read(root: str, *, create: bool = False) -> str:
    """The current token ("" when there is none); with ``create``, a first one is made."""
    try:
        with open(path(root), "rb") as fh:
            token = fh.read(64).decode("ascii", "replace").strip()
        if token:
            return token
    except OSError:
        pass
    return bump(root) if create else ""
