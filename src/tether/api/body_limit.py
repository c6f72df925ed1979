"""BodyLimit: refuse request bodies over a size limit with 413, by header and by counting."""

from __future__ import annotations

import asyncio
import contextlib

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tether.api.errors import error_response
from tether.api.settings import DEFAULT_MAX_BODY_BYTES
from tether.core.errors import PayloadTooLarge

#: How long a refused body may take to arrive before the 413 is sent anyway.
_DRAIN_SECONDS = 5.0


class BodyLimit:
    """ASGI middleware: a declared Content-Length over the limit is refused without passing the
    body on; a body sent without one (chunked) is refused as soon as it passes the limit. Before
    answering, the rest of a refused body (up to four times the limit, for 5 s) is read and
    dropped, so closing the connection does not reset it under a client still sending.
    What was read is replayed to the app, then the connection's own messages follow (so
    disconnects still reach streaming responses)."""

    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes
        #: A refused body up to this size is read to its end first, so that closing the
        #: connection does not reset it while the client still sends (the client would see
        #: "connection reset" instead of the 413); a larger one is cut off.
        self._drain_bytes = max(4 * max_bytes, 4 * 1024 * 1024)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            if declared <= self._drain_bytes and not _expects_continue(scope):
                await _drain(receive, self._drain_bytes)
            await self._refuse(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                if message.get("more_body", False):
                    await _drain(receive, self._drain_bytes - size)
                await self._refuse(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        pending: list[Message] = [{"type": "http.request", "body": b"".join(chunks)}]

        async def replay() -> Message:
            return pending.pop() if pending else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        error = PayloadTooLarge(f"the request body is larger than {self.max_bytes} bytes")
        response = error_response(error)
        response.headers["Connection"] = "close"
        await response(scope, receive, send)


async def _drain(receive: Receive, budget: int) -> None:
    """Read and drop the rest of a request body, up to budget bytes and for at most
    _DRAIN_SECONDS: a client that stops sending gets its 413 all the same."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(_DRAIN_SECONDS):
            while budget > 0:
                message = await receive()
                if message["type"] != "http.request":
                    return
                budget -= len(message.get("body", b""))
                if not message.get("more_body", False):
                    return


def _expects_continue(scope: Scope) -> bool:
    """A client that waits for 100 Continue has sent nothing yet: refuse without inviting it."""
    return any(
        name == b"expect" and value.lower() == b"100-continue" for name, value in scope["headers"]
    )


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
