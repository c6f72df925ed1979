"""uvicorn's httptools protocol with a deadline and a size limit for each request head (see
``tether.api.head_timeout``). Importing it fails without httptools."""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from tether.api.head_timeout import MAX_HEAD_BYTES


class HeadTimeoutHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol, closing a connection whose request head is late, and
    answering 400 to a head over MAX_HEAD_BYTES (httptools would buffer any length)."""

    #: Seconds a request head may take to arrive (set by ``with_head_timeout``).
    head_timeout = 10.0
    _head_timer: asyncio.TimerHandle | None = None
    #: A request head is incomplete: from the connection's start or the request's first byte
    #: to the end of its headers.
    _head_open = True
    #: Bytes received while the head is open (counting whole reads: an upper bound).
    _head_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._head_open and not self.transport.is_closing():
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self._disarm()
                self.send_400_response("Invalid HTTP request received.")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    # Parser callbacks: a head runs from on_message_begin to on_headers_complete.

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_open, self._head_bytes = True, 0
        if self._head_timer is None:  # a new request started: its head has a deadline
            self._arm()

    def on_headers_complete(self) -> None:
        self._head_open = False
        self._disarm()
        super().on_headers_complete()

    def _arm(self) -> None:
        self._head_timer = self.loop.call_later(self.head_timeout, self._late)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _late(self) -> None:
        self._head_timer = None  # only armed while a head is incomplete
        if not self.transport.is_closing():
            self.transport.close()
