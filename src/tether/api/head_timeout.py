"""Slow requests: a connection that has not sent a whole request head in time is closed.

uvicorn closes idle keep-alive connections (``timeout_keep_alive``) but waits forever for the
rest of a request head (and a byte now and then resets its keep-alive timer), so a client can hold
any number of connections open by sending half a request (slowloris). The protocols here give
every request head a deadline, from the connection's start or the first byte of the request.

``tether serve`` parses HTTP with httptools when it is installed (the ``server`` extra brings it:
its C parser costs a fraction of h11's pure Python per request), else with h11. Both refuse a
request head over ``MAX_HEAD_BYTES`` with 400 (h11's own limit; httptools has none).
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

#: The largest request head (request line and headers) either protocol accepts: h11's own
#: limit (uvicorn's default ``h11_max_incomplete_event_size``).
MAX_HEAD_BYTES = 16 * 1024


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


def with_head_timeout(seconds: float) -> type[asyncio.Protocol]:
    """The protocol class giving request heads seconds to arrive: httptools' when installed,
    else h11's."""
    base: type[asyncio.Protocol]
    try:
        from tether.api.head_timeout_httptools import HeadTimeoutHttpTools

        base = HeadTimeoutHttpTools
    except ImportError:
        base = HeadTimeoutH11
    return type(base.__name__, (base,), {"head_timeout": seconds})
