"""CheckHost: answer only requests addressed to an allowed host name (against DNS rebinding)."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from tether.api.errors import error_response
from tether.core.errors import HostNotAllowed
from tether.core.hosts import AllowedHosts

#: At most this many allowed Host headers are remembered (a client can send any number): when
#: the set is full it is emptied, so the headers a server sees now are remembered again.
_REMEMBERED = 64


class CheckHost:
    """ASGI middleware: a request whose ``Host`` is not allowed (or is missing) gets 421
    ``host_not_allowed`` before anything else looks at it."""

    def __init__(self, app: ASGIApp, *, hosts: AllowedHosts) -> None:
        self.app = app
        self.hosts = hosts
        #: Host headers found allowed, as sent: a request repeating one is not parsed again.
        self._allowed: set[bytes] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = next((v for k, v in scope["headers"] if k == b"host"), None)
            if header is None or header not in self._allowed:
                host = None if header is None else header.decode("latin-1")
                if not self.hosts.permits(host):
                    shown = "no Host header" if host is None else f"host {host[:100]!r}"
                    error = HostNotAllowed(
                        f"this server does not answer for {shown}: serve with "
                        "--allowed-host NAME (or TETHER_ALLOWED_HOSTS) to add a name"
                    )
                    await error_response(error)(scope, receive, send)
                    return
                if header is not None:
                    if len(self._allowed) >= _REMEMBERED:  # full: start again from this traffic,
                        self._allowed.clear()  # else 64 odd headers would end remembering for good
                    self._allowed.add(header)
        await self.app(scope, receive, send)
