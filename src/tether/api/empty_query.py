"""EmptyQuery: a query parameter given with no value (``?status=&cursor=``) means "not given",
as clients that fill every parameter of a URL template send them."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send


class EmptyQuery:
    """ASGI middleware: drops ``name=`` pairs from the query string before routing (the rest of
    it is passed on byte for byte)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        query: bytes = scope.get("query_string", b"")
        if scope["type"] == "http" and b"=" in query:
            kept = [part for part in query.split(b"&") if not part.endswith(b"=") or _valued(part)]
            if len(kept) != query.count(b"&") + 1:
                scope = {**scope, "query_string": b"&".join(kept)}
        await self.app(scope, receive, send)


def _valued(part: bytes) -> bool:
    """Whether name=value has a value (``a==`` has one: ``=``)."""
    return part.partition(b"=")[2] != b""
