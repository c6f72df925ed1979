"""Stopping the server: streams and long-polls end promptly, running runs get the grace period
and are then handed back to the queue."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

import tether
from tests.api.httpkit import Frame, new_run, new_session, read_sse, start_server
from tests.waiting import eventually_sync

pytestmark = pytest.mark.slow


def test_sigterm_ends_streams_and_long_polls_and_hands_runs_back(tmp_path: Path) -> None:
    server = start_server(tmp_path, "--shutdown-grace", "0.5", owners=("alice",))
    try:
        with server.client("alice") as alice:
            sid = new_session(alice)["id"]
            sleeper = new_run(alice, sid, input={"sleep": 60})
            rid = sleeper["id"]
            eventually_sync(lambda: alice.get(f"/v1/runs/{rid}").json()["status"] == "running")

            # A long-poll, sent first on a raw connection so its reply can be read after the stop.
            host, port = server.url.removeprefix("http://").split(":")
            poll = socket.create_connection((host, int(port)))
            key = server.keys["alice"]
            poll.sendall(
                f"GET /v1/runs/{rid}/wait?timeout=300 HTTP/1.1\r\nHost: {host}\r\n"
                f"Authorization: Bearer {key}\r\nConnection: close\r\n\r\n".encode()
            )
            frames: list[Frame] = []
            streaming = threading.Event()

            def stream() -> None:
                with alice.stream("GET", f"/v1/sessions/{sid}/events") as response:
                    lines = response.iter_lines()
                    found, _ = read_sse(lines, until=lambda f: f.event == "run.started")
                    frames.extend(found)
                    streaming.set()
                    more, _ = read_sse(lines)  # returns when the server ends the stream
                    frames.extend(more)

            reader = threading.Thread(target=stream)
            reader.start()
            assert streaming.wait(10)

            code = server.stop()
            reader.join(30)
            assert not reader.is_alive(), "".join(server.log)  # the server ended the stream
            assert code == 0, server.log  # a requested stop is a clean exit
            reply = b""
            while chunk := poll.recv(65536):
                reply += chunk
            poll.close()
            assert reply.startswith(b"HTTP/1.1 200"), reply[:200]
            assert [f.event for f in frames][:3] == [
                "session.created",
                "run.created",
                "run.started",
            ]
    finally:
        server.stop()

    with tether.open(server.db, worker=False, owner="alice") as tt:
        run = tt.runs.get(rid)
        assert run.status is tether.RunStatus.READY  # handed back, for the next worker
        assert "run.requeued" in [e.type for e in run.events()]
