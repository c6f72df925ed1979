"""Slow requests: a connection that has not sent a whole request head in time is closed.

uvicorn closes idle keep-alive connections (``timeout_keep_alive``) but waits forever for the
rest of a request head (and a byte now and then resets its keep-alive timer), so a client can hold
any number of connections open by sending half a request (slowloris). This h11 protocol gives
every request head a deadline, from the connection's start or the first byte of the request.
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


class HeadTimeoutH11(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head is late."""

    #: Seconds a request head may take to arrive (set by ``with_head_timeout``).
    head_timeout = 10.0
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:
            if self._head_timer is None:  # a new request started: its head has a deadline
                self._arm()
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._head_timer = self.loop.call_later(self.head_timeout, self._late)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _late(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def with_head_timeout(seconds: float) -> type[HeadTimeoutH11]:
    """The protocol class giving request heads seconds to arrive."""
    return type("HeadTimeoutH11", (HeadTimeoutH11,), {"head_timeout": seconds})
