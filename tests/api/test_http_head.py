"""Request heads under both HTTP parsers tether serve may use (httptools when installed, else
h11): a head has a deadline and a size limit, and neither limit touches a normal request."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from tether.api.head_timeout import MAX_HEAD_BYTES, HeadTimeoutH11, with_head_timeout
from tether.api.head_timeout_httptools import HeadTimeoutHttpTools
from tether.api.server import _Embedded, _listen

PROTOCOLS = [HeadTimeoutH11, HeadTimeoutHttpTools]


async def _echo_length(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers 200 with the length of the request body."""
    if scope["type"] != "http":
        return
    size, more = 0, True
    while more:
        message = await receive()
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    body = str(size).encode()
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextlib.asynccontextmanager
async def _serving(base: type[asyncio.Protocol], timeout: float) -> AsyncIterator[int]:
    """A uvicorn server on this loop with base's protocol, heads given timeout seconds."""
    protocol = type(base.__name__, (base,), {"head_timeout": timeout})
    sock = _listen("127.0.0.1", 0)
    config = uvicorn.Config(_echo_length, http=protocol, log_config=None, lifespan="off")
    server = _Embedded(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    listening = asyncio.create_task(server.listening.wait())
    await asyncio.wait({task, listening}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        task.result()  # it could not start: say why
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        await task


async def _response(reader: asyncio.StreamReader) -> bytes:
    """The status line of one response (its body read too), or b"" once the server closed."""
    head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            await reader.readexactly(int(line.split(b":", 1)[1]))
    return head.split(b"\r\n", 1)[0]


def test_tether_serve_parses_with_httptools_when_installed() -> None:
    assert issubclass(with_head_timeout(10), HeadTimeoutHttpTools)
    assert with_head_timeout(3).head_timeout == 3  # type: ignore[attr-defined]


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=["h11", "httptools"])
def test_an_incomplete_head_over_the_limit_is_refused_and_a_large_body_is_not(
    protocol: type[asyncio.Protocol],
) -> None:
    async def scenario() -> tuple[bytes, bytes, bytes]:
        async with _serving(protocol, 30) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            filler = b"x" * (MAX_HEAD_BYTES // 2)
            writer.write(b"GET / HTTP/1.1\r\nHost: a\r\nX-A: " + filler + b"\r\n\r\n")
            fits = await _response(reader)
            body = b"y" * (8 * MAX_HEAD_BYTES)  # sent with its head, in one write
            head = f"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: {len(body)}\r\n\r\n"
            writer.write(head.encode() + body)
            posted = await _response(reader)
            # More than the limit of a head, and not its end yet: the server buffers no more.
            writer.write(b"GET / HTTP/1.1\r\nHost: a\r\n" + b"X-B: " + filler * 3)
            refused = await _response(reader)
            writer.close()
            return fits, posted, refused

    fits, posted, refused = asyncio.run(scenario())
    assert fits == b"HTTP/1.1 200 OK"
    assert posted == b"HTTP/1.1 200 OK"
    assert refused == b"HTTP/1.1 400 Bad Request"


@pytest.mark.slow
@pytest.mark.parametrize("protocol", PROTOCOLS, ids=["h11", "httptools"])
def test_a_late_head_closes_its_connection(protocol: type[asyncio.Protocol]) -> None:
    async def scenario() -> tuple[bytes, bytes, bytes, bytes]:
        async with _serving(protocol, 0.5) as port:
            silent = await asyncio.open_connection("127.0.0.1", port)
            half = await asyncio.open_connection("127.0.0.1", port)
            kept = await asyncio.open_connection("127.0.0.1", port)
            half[1].write(b"GET / HTTP/1.1\r\nHost: a\r\nX-Slow: ")
            kept[1].write(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            answered = await _response(kept[0])
            kept[1].write(b"GET / HTTP/1.1\r\n")  # a second request, never finished
            # Each waits for what the server does: it closes them (EOF).
            closed = [await reader.read() for reader, _ in (half, silent, kept)]
            for _, writer in (silent, half, kept):
                writer.close()
            return answered, *closed  # type: ignore[return-value]

    answered, *closed = asyncio.run(scenario())
    assert answered == b"HTTP/1.1 200 OK"
    assert closed == [b"", b"", b""]
