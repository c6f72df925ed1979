"""A webhook receiver for tests: an HTTP server on 127.0.0.1 that records what it is sent
and answers the status codes queued; and the check a receiver makes of the signature."""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Listener:
    """What the server was sent (headers with lower-case names, body) and will answer."""

    codes: list[int] = field(default_factory=list)
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    url: str = ""


@contextmanager
def listening() -> Iterator[Listener]:
    heard = Listener()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            heard.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
            self.send_response(heard.codes.pop(0) if heard.codes else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    heard.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/tether?x=1"
    try:
        yield heard
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def verify(secret: str, headers: dict[str, str], body: bytes) -> None:
    """Check X-Tether-Signature as a receiver does: t=<unix>,v1=<hex HMAC-SHA256>."""
    parts = dict(item.split("=", 1) for item in headers["x-tether-signature"].split(","))
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + body, hashlib.sha256)
    assert hmac.compare_digest(parts["v1"], expected.hexdigest())
