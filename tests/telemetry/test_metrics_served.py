"""GET /metrics of a real ``tether serve --metrics`` and ``tether worker --metrics-port``: open
Server-Sent Events streams are counted while they last, and a standalone worker serves its own
numbers beside the database's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from tests.serving import Served, serve
from tests.telemetry.scrape import Samples, parse
from tests.waiting import eventually_sync

pytestmark = pytest.mark.slow


def _scrape(url: str, **headers: str) -> Samples:
    answer = httpx.get(f"{url}/metrics", headers=headers, timeout=10)
    assert answer.status_code == 200, answer.text
    return parse(answer.text)


def test_open_event_streams_are_counted_while_they_last(tmp_path: Path) -> None:
    server = serve(Served, tmp_path / "t.db", "--no-auth", "--metrics")
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            session = http.post("/v1/sessions", json={"title": "streamed"}).json()
            assert _scrape(server.url).get("tether_sse_connections") == 0
            path = f"/v1/sessions/{session['id']}/events"
            with http.stream("GET", path) as stream, http.stream("GET", path) as other:
                assert stream.status_code == other.status_code == 200
                eventually_sync(
                    lambda: _scrape(server.url).get("tether_sse_connections") == 2,
                    what="two streams counted",
                )
            eventually_sync(
                lambda: _scrape(server.url).get("tether_sse_connections") == 0,
                what="the streams to be forgotten once closed",
            )
    finally:
        assert server.stop() == 0


def test_a_worker_serves_its_own_metrics(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    server = serve(Served, db, "--no-auth", "--workers", "0")
    worker = subprocess.Popen(
        [sys.executable, "-m", "tether", "worker", "--db", str(db), "--metrics-port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TETHER_METRICS_TOKEN": "w0rker"},
    )
    found: dict[str, str] = {}
    lines: list[str] = []

    def read() -> None:
        assert worker.stderr is not None
        with worker.stderr:
            for line in worker.stderr:
                lines.append(line)
                match = re.search(r"metrics on (http://\S+)/metrics", line)
                if match:
                    found["url"] = match.group(1)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        url = eventually_sync(
            lambda: found.get("url"), timeout=60, what="the worker's metrics port"
        )
        with httpx.Client(base_url=server.url, timeout=30) as http:
            session = http.post("/v1/sessions", json={"title": "worked"}).json()
            run = http.post(f"/v1/sessions/{session['id']}/runs", json={"goal": "g"}).json()
            done = http.get(f"/v1/runs/{run['id']}/wait", params={"timeout": 15}).json()
            assert done["status"] == "completed"
        assert httpx.get(f"{url}/metrics", timeout=10).status_code == 401  # token required
        samples = eventually_sync(
            lambda: (
                s
                if (s := _scrape(url, Authorization="Bearer w0rker")).get(
                    "tether_runs_finished_total", agent="echo", status="completed"
                )
                == 1
                else None
            ),
            what="the worker's count of the run it finished",
        )
        assert samples.get("tether_runs_created_total", agent="echo") is None  # the server's
        assert samples.get("tether_sessions_active") == 1  # the database's
        assert samples.get("tether_worker_slots") == 8
        assert httpx.get(f"{url}/v1/sessions", timeout=10).status_code == 404  # nothing else
    finally:
        worker.terminate()
        code = worker.wait(30)
        reader.join(10)
        assert server.stop() == 0
    assert code == 0, "".join(lines)
