"""The cache's storage, composed from values the caller holds (ccache's storage layering).

Nothing under :mod:`sgcc.cache` reads configuration. The one that holds the settings (the
drop-in driver from ``compile_settings``, the engine from its ``Request``, a ``sgcc cache``
command from the loaded configuration) builds the local :class:`~sgcc.cache.store.Store` and,
when ``remote_storage`` is set, the remote :class:`~sgcc.cache.remote.Layer` behind it here,
and hands them down. ``Store(remote=None)`` means one thing: no remote.

Kept lean: the compile path imports this only when ``remote_storage`` is set.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's own costs a compile ~2 ms; mypy knows this name
if TYPE_CHECKING:
    from sgcc.cache.remote import Layer, Spec, Storage
    from sgcc.cache.store import Store

def open_storage(spec: Spec, timeout: float) -> Storage:
    """The backend for ``spec`` (``timeout`` in seconds per conversation with the server): one
    branch per URL scheme (:data:`sgcc.cache.remote.SCHEMES`), its module imported when used."""
    if spec.scheme == "redis":
        from sgcc.cache.redis_backend import RedisStorage

        return RedisStorage(spec, timeout)
    from sgcc.cache.remote import RemoteError

    raise RemoteError(f"unsupported remote storage {spec.scheme!r}")


def remote_layer(root: str, setting: str, timeout_ms: int) -> Layer | None:
    """The remote layer for the ``remote_storage`` value ``setting`` (None when it is empty), its
    down marker in the local cache directory ``root``; ``timeout_ms`` bounds each conversation.
    Raises ValueError for a value :func:`sgcc.cache.remote.parse` refuses."""
    if not setting:
        return None
    from sgcc.cache import remote

    spec = remote.parse(setting)
    return remote.Layer(root, spec, open_storage(spec, max(1, int(timeout_ms)) / 1000.0))


def open_store(root: str, *, max_bytes: int | None = None, signing_key: str = "", trusted_keys: str = "",
               remote_storage: str = "", remote_timeout: int = 150) -> Store:
    """The local store at ``root`` with the remote layer ``remote_storage`` names behind it (none
    when empty); the store records the remote's counters with its own statistics."""
    from sgcc.cache import store

    layer = remote_layer(root, remote_storage, remote_timeout)
    kwargs = {} if max_bytes is None else {"max_bytes": max_bytes}
    return store.Store(root, signing_key=signing_key, trusted_keys=trusted_keys, remote=layer,
                       record_remote=True, **kwargs)
