"""A webhook attempt against a receiver that answers a byte at a time: it ends by its deadline."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from tether.runtime.webhook_post import post
from tether.runtime.webhooks import WebhookPolicy


@pytest.fixture
def trickling() -> Iterator[str]:
    """A receiver that sends its answer's head a byte every 50 ms, for up to 10 s, then 200."""
    server = socket.create_server(("127.0.0.1", 0))
    gone = threading.Event()

    def answer() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(65536)
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                for _ in range(200):
                    conn.sendall(b"X-Slow: 1\r\n")
                    if gone.wait(0.05):
                        return
                conn.sendall(b"Content-Length: 0\r\n\r\n")
            except OSError:
                return

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/hook"
    finally:
        gone.set()
        thread.join()
        server.close()


def test_a_trickling_receiver_cannot_hold_an_attempt(trickling: str) -> None:
    policy = WebhookPolicy(("127.0.0.1",))
    with pytest.raises(OSError, match="took longer than"):
        post(policy, trickling, b"{}", {"Content-Type": "application/json"}, deadline=0.5)
