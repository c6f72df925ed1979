"""Utf8Only: a path or query string that is not valid UTF-8 once percent-decoded is refused with
422, as a body is; it never reaches a route as replacement characters (``a%FFb`` → ``a�b``)."""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from starlette.types import ASGIApp, Receive, Scope, Send

from tether.api.errors import validation_response


class Utf8Only:
    """ASGI middleware: 422 validation_error naming ``path`` or ``query``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw_path: bytes = scope.get("raw_path") or scope["path"].encode("utf-8", "replace")
            for field, raw in (("path", raw_path), ("query", scope.get("query_string", b""))):
                try:
                    unquote_to_bytes(raw.replace(b"+", b" ")).decode("utf-8")
                except UnicodeDecodeError:
                    error = {"loc": [field], "msg": "must be valid UTF-8", "type": "utf8"}
                    await validation_response([error])(scope, receive, send)
                    return
        await self.app(scope, receive, send)
