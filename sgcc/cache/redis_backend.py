"""The Redis backend of the remote cache (:mod:`sgcc.cache.remote`).

Lookups (every compile whose local cache misses) use the lean client :mod:`sgcc.cache.resp`,
one pipelined conversation per request: ``AUTH`` and ``SELECT`` when the URL asks for them,
then ``SMEMBERS`` of a context's winners index, ``GET`` of an entry, or ``GET`` of the
generation (``sgcc cache state``, once per wrapped build). Stores (made by
``sgcc optimize``, never by a plain compile) use redis-py, the well-kept client, in one
``MULTI``: the entry and its place in the winners index change together.
"""

from __future__ import annotations

import os

from sgcc.cache import remote, resp

#: Stores are not on a build's critical path: they get this many times the lookup timeout
#: (and at least one second), since an entry can be a few hundred kilobytes.
STORE_TIMEOUT_FACTOR = 10


def entry_name(key: str) -> str:
    """The Redis key of an entry: ``sgcc:2:<context id>:<key>``."""
    return f"{remote.NAMESPACE}:{key[48:64]}:{key}"


#: The Redis key of the generation token every store replaces (sgcc.cache.remote.Storage.generation).
GENERATION = f"{remote.NAMESPACE}:generation"


def index_name(context_id: str) -> str:
    """The Redis set of a context's keys with winners: ``sgcc:2:<context id>:win``."""
    return f"{remote.NAMESPACE}:{context_id}:win"


class RedisStorage(remote.Storage):
    """One Redis database (``redis://host:port/db``)."""

    def __init__(self, spec: remote.Spec, timeout: float):
        self.spec = spec
        self.timeout = timeout

    def _call(self, command: tuple, limit: int):
        prelude = []
        if self.spec.password:
            prelude.append(("AUTH", self.spec.username, self.spec.password) if self.spec.username
                           else ("AUTH", self.spec.password))
        if self.spec.db:
            prelude.append(("SELECT", str(self.spec.db)))
        try:
            return resp.call(self.spec.host, self.spec.port, self.timeout, [*prelude, command], limit)[-1]
        except resp.Timeout as exc:
            raise remote.RemoteTimeout(str(exc)) from None
        except resp.TooLarge as exc:
            raise remote.RemoteRefused(str(exc)) from None
        except resp.RespError as exc:
            raise remote.RemoteError(f"{type(exc).__name__}: {exc}") from None

    def get(self, key: str, limit: int) -> bytes | None:
        """The entry's bytes, None when absent; a value that is not a string is an error."""
        value = self._call(("GET", entry_name(key)), limit)
        if value is not None and not isinstance(value, bytes):
            raise remote.RemoteError("GET answered something that is not a value")
        return value

    def winners(self, context_id: str) -> frozenset[str]:
        """The keys in the context's winners index (each at most 64 bytes, or it is garbage)."""
        members = self._call(("SMEMBERS", index_name(context_id)), 64)
        if not isinstance(members, list) or not all(isinstance(m, bytes) for m in members):
            raise remote.RemoteError("SMEMBERS answered something that is not a set")
        return frozenset(m.decode("ascii", "replace") for m in members)

    def generation(self) -> str:
        """The generation token ("" before any store)."""
        value = self._call(("GET", GENERATION), 256)
        if value is not None and not isinstance(value, bytes):
            raise remote.RemoteError("GET answered something that is not a value")
        return (value or b"").decode("ascii", "replace")

    def put(self, key: str, data: bytes, has_winners: bool) -> None:
        """The entry, the index and a new generation, in one transaction."""
        try:
            import redis
        except ImportError:  # a dependency of sgcc; a broken install must not fail a search
            raise remote.RemoteError("redis-py is not installed (pip install redis)") from None
        timeout = max(1.0, self.timeout * STORE_TIMEOUT_FACTOR)
        client = redis.Redis(host=self.spec.host, port=self.spec.port, db=self.spec.db,
                             username=self.spec.username or None, password=self.spec.password or None,
                             socket_timeout=timeout, socket_connect_timeout=timeout)
        try:
            pipe = client.pipeline(transaction=True)
            pipe.set(entry_name(key), data)
            if has_winners:
                pipe.sadd(index_name(key[48:64]), key)
            else:
                pipe.srem(index_name(key[48:64]), key)
            pipe.set(GENERATION, os.urandom(16).hex())
            pipe.execute()
        except redis.TimeoutError as exc:
            raise remote.RemoteTimeout(str(exc)) from None
        except redis.RedisError as exc:
            raise remote.RemoteError(f"{type(exc).__name__}: {exc}") from None
        finally:
            client.close()
