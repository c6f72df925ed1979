"""A write waiting for SQLite's lock, held by another process, never freezes the server:
/healthz, reads and SSE heartbeats go on meanwhile, and the write that cannot get the lock in
time answers 503 store_unavailable (saying so without the database's path)."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator

import httpx
import pytest

from tests.api.httpkit import Server, new_session, read_sse, start_server

#: Another process: takes the write lock, says so, and keeps it until told to let go.
HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(tmp_path_factory.mktemp("lock"), "--heartbeat-seconds", "0.2")
    yield running
    running.stop()


def test_the_server_answers_while_a_write_waits_for_another_process(locked: Server) -> None:
    with locked.client("alice") as alice, locked.client("alice") as writer:
        session = new_session(alice, title="before the lock")
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(locked.db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert holder.stdin is not None and holder.stdout is not None
        try:
            assert holder.stdout.readline() == "locked\n"
            answers: list[httpx.Response] = []
            waiting = threading.Thread(
                target=lambda: answers.append(writer.post("/v1/sessions", json={"title": "w"}))
            )
            waiting.start()
            for _ in range(20):
                assert alice.get("/healthz").status_code == 200
            assert alice.get(f"/v1/sessions/{session['id']}").status_code == 200
            path = f"/v1/sessions/{session['id']}/events"
            with alice.stream("GET", path, params={"heartbeat": 0.2}) as stream:
                assert read_sse(stream, heartbeats=3)[1] == 3
            assert waiting.is_alive() and holder.poll() is None  # all that while it waited

            waiting.join()  # until the server gives up on the lock
            refused = answers[0]
            assert refused.status_code == 503, refused.text
            problem = refused.json()
            assert problem["code"] == "store_unavailable"
            assert str(locked.db.parent) not in refused.text and "/" not in problem["detail"]
        finally:
            holder.communicate("\n", timeout=30)
        assert writer.post("/v1/sessions", json={"title": "after"}).status_code == 201
