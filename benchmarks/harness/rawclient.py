"""The fastest client Python can be: pre-encoded creates over keep-alive HTTP/1.1 connections.

The raw rate a simulator reaches with this client is the "physical limit" every other figure
is compared with: no controller creates pods faster on the same simulator. Each connection
sends one pre-encoded request at a time, with no header objects, no URL parsing and no
cookie jar; it relies on the server answering with ``Content-Length`` (aiohttp does).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["RawConnection", "RawRun", "post_all"]


class RawConnection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection sending pre-encoded requests, one at a time."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._waiter: asyncio.Future[int] | None = None
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc or ConnectionResetError("connection closed"))

    def data_received(self, data: bytes) -> None:
        self._buf += data
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        end = self._buf.find(b"\r\n\r\n")
        if end < 0:
            return
        head = bytes(self._buf[:end]).lower()
        at = head.find(b"content-length:")
        line_end = head.find(b"\r\n", at)
        length = int(head[at + 15:line_end if line_end >= 0 else len(head)])
        if len(self._buf) < end + 4 + length:
            return
        del self._buf[:end + 4 + length]
        waiter.set_result(int(head[9:12]))

    async def send(self, request: bytes) -> int:
        """Send one request; the response's status code."""
        assert self._transport is not None
        self._waiter = asyncio.get_running_loop().create_future()
        self._transport.write(request)
        return await self._waiter

    def close(self) -> None:
        """Close the connection."""
        if self._transport is not None:
            self._transport.close()


@dataclass
class RawRun:
    """What one ``post_all`` did: requests sent, seconds from first send to last answer, and
    the answers that were not ``expect``."""

    requests: int
    seconds: float
    errors: dict[int, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        """Requests per second."""
        return self.requests / self.seconds if self.seconds > 0 else 0.0


def request_bytes(path: str, body: bytes, *, agent: str = "dsctl-bench/raw") -> bytes:
    """A complete POST of a JSON ``body`` to ``path``."""
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: sim\r\nUser-Agent: " + agent.encode()
            + b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(body)).encode()
            + b"\r\n\r\n" + body)


async def post_all(url: str, path: str, bodies: Sequence[bytes], *, concurrency: int = 32, expect: int = 201,
                   agent: str = "dsctl-bench/raw") -> RawRun:
    """POST every body to ``url + path`` over ``concurrency`` connections, as fast as they answer."""
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    loop = asyncio.get_running_loop()
    conns = [(await loop.create_connection(RawConnection, host, int(port)))[1] for _ in range(concurrency)]
    requests = [request_bytes(path, body, agent=agent) for body in bodies]
    counter = itertools.count()
    errors: dict[int, int] = {}

    async def worker(conn: RawConnection) -> None:
        while (i := next(counter)) < len(requests):
            status = await conn.send(requests[i])
            if status != expect:
                errors[status] = errors.get(status, 0) + 1

    start = time.perf_counter()
    try:
        await asyncio.gather(*(worker(conn) for conn in conns))
    finally:
        for conn in conns:
            conn.close()
    return RawRun(len(requests), time.perf_counter() - start, errors)
