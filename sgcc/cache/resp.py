"""A minimal Redis client for the compile path: one connection, pipelined commands, RESP2
replies read with a deadline and size bounds.

Why not redis-py here: ``import redis`` costs ~160 ms (measured with ``python -X importtime``
on this project's machine), and a build pays the remote lookup on every compile whose local
cache has no winner; the issue's goal is at most 5 ms added to such a miss. This module
imports only ``_socket`` (~0.4 ms; ``socket`` pulls in selectors and enum, ~10 ms) and speaks
the few commands a lookup needs. Stores, which only ``sgcc optimize`` makes, go through
redis-py (:mod:`sgcc.cache.redis_backend`).

Everything a server sends is bounded: the whole conversation shares one deadline (the
``remote_timeout`` setting), a reply line is at most :data:`MAX_LINE` bytes, a value at most
the caller's limit, an array at most :data:`MAX_ITEMS` items. A server that breaks any of
these, or answers something that is not RESP, raises :class:`ProtocolError`.
"""

from __future__ import annotations

import _socket

MAX_LINE = 4096
MAX_ITEMS = 1 << 17


class RespError(Exception):
    """The server cannot be used for this request (base class)."""


class Timeout(RespError):
    """The deadline passed (connecting, sending or waiting for a reply)."""


class Unreachable(RespError):
    """Connecting failed (refused, no route, unknown host)."""


class ProtocolError(RespError):
    """The server answered something that is not a bounded RESP2 reply."""


class ServerError(RespError):
    """The server answered an error reply (``-ERR ...``, ``-NOAUTH ...``, ``-WRONGTYPE ...``)."""


class TooLarge(RespError):
    """A value larger than the caller accepts (not read: the connection is dropped)."""


def _now() -> float:
    import time

    return time.monotonic()


def encode(*args: bytes | str) -> bytes:
    """One command in RESP: an array of bulk strings."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a.encode() if isinstance(a, str) else a
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class Connection:
    """One TCP connection to a Redis server; every call honours the deadline given at open."""

    def __init__(self, host: str, port: int, timeout: float):
        self.deadline = _now() + timeout
        self.buf = b""
        self.sock = None
        try:
            # bytes: a str host goes through the idna codec, whose import (stringprep, re)
            # costs ~30 ms; an ASCII name needs no encoding.
            infos = _socket.getaddrinfo(host.encode("ascii") if host.isascii() else host, port, 0,
                                        _socket.SOCK_STREAM)
        except OSError as exc:
            raise Unreachable(f"cannot resolve {host}: {exc}") from None
        last: Exception | None = None
        for family, kind, proto, _name, addr in infos:
            sock = _socket.socket(family, kind, proto)
            try:
                sock.settimeout(self._left())
                sock.connect(addr)
                sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
            except TimeoutError:
                sock.close()
                raise Timeout(f"connecting to {host}:{port} timed out") from None
            except OSError as exc:
                sock.close()
                last = exc
                continue
            self.sock = sock
            return
        raise Unreachable(f"cannot connect to {host}:{port}: {getattr(last, 'strerror', None) or last}")

    def _left(self) -> float:
        left = self.deadline - _now()
        if left <= 0:
            raise Timeout("the server did not answer in time")
        return left

    def _open(self) -> _socket.socket:
        if self.sock is None:
            raise Unreachable("the connection is closed")
        return self.sock

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def send(self, data: bytes) -> None:
        """Send ``data`` whole before the deadline."""
        view = memoryview(data)
        while view:
            sock = self._open()
            sock.settimeout(self._left())
            try:
                n = sock.send(view)
            except TimeoutError:
                raise Timeout("sending to the server timed out") from None
            except OSError as exc:
                raise Unreachable(f"connection lost: {exc.strerror or exc}") from None
            view = view[n:]

    def _fill(self) -> None:
        sock = self._open()
        sock.settimeout(self._left())
        try:
            chunk = sock.recv(1 << 16)
        except TimeoutError:
            raise Timeout("the server did not answer in time") from None
        except OSError as exc:
            raise Unreachable(f"connection lost: {exc.strerror or exc}") from None
        if not chunk:
            raise ProtocolError("the server closed the connection")
        self.buf += chunk

    def _line(self) -> bytes:
        while True:
            end = self.buf.find(b"\r\n")
            if end >= 0:
                line, self.buf = self.buf[:end], self.buf[end + 2:]
                return line
            if len(self.buf) > MAX_LINE:
                raise ProtocolError("reply line too long")
            self._fill()

    def _exact(self, n: int) -> bytes:
        parts = []
        have = len(self.buf)
        if have >= n:
            data, self.buf = self.buf[:n], self.buf[n:]
            return data
        parts.append(self.buf)
        self.buf = b""
        while have < n:
            sock = self._open()
            sock.settimeout(self._left())
            try:
                chunk = sock.recv(min(1 << 20, n - have))
            except TimeoutError:
                raise Timeout("the server did not send the value in time") from None
            except OSError as exc:
                raise Unreachable(f"connection lost: {exc.strerror or exc}") from None
            if not chunk:
                raise ProtocolError("the server closed the connection mid-value")
            parts.append(chunk)
            have += len(chunk)
        return b"".join(parts)

    def reply(self, limit: int, *, depth: int = 0):
        """One reply: bytes (bulk or simple string), int, None (nil), or a list of replies.
        Bulk strings over ``limit`` bytes raise :class:`TooLarge`."""
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise ServerError(rest.decode("utf-8", "replace")[:200])
        if kind in (b":", b"$", b"*"):
            try:
                n = int(rest)
            except ValueError:
                raise ProtocolError(f"bad length {rest[:40]!r}") from None
            if kind == b":":
                return n
            if n < 0:
                return None
            if kind == b"$":
                if n > limit:
                    raise TooLarge(f"a value of {n} bytes (at most {limit} accepted)")
                data = self._exact(n + 2)
                if data[-2:] != b"\r\n":
                    raise ProtocolError("bulk string not terminated")
                return data[:-2]
            if n > MAX_ITEMS or depth > 2:
                raise ProtocolError(f"an array of {n} items")
            return [self.reply(limit, depth=depth + 1) for _ in range(n)]
        raise ProtocolError(f"not a RESP reply: {line[:40]!r}")


def call(host: str, port: int, timeout: float, commands: list[tuple], limit: int) -> list:
    """Send ``commands`` pipelined on a new connection and read one reply to each; the
    replies in order. The whole exchange (connect included) takes at most ``timeout``
    seconds. An error reply raises :class:`ServerError` (after all replies are read)."""
    conn = Connection(host, port, timeout)
    try:
        conn.send(b"".join(encode(*c) for c in commands))
        replies, error = [], None
        for _ in commands:
            try:
                replies.append(conn.reply(limit))
            except ServerError as exc:
                error = error or exc
                replies.append(None)
        if error is not None:
            raise error
        return replies
    finally:
        conn.close()
