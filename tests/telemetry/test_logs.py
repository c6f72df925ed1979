"""Structured logs: ``--log-format json`` makes every line of ``tether serve`` (uvicorn's access
log included) and ``tether worker`` one JSON object, and every line about a run names the run
and its session; the plain format says the same on one line of text."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.serving import Served, cli, serve
from tests.waiting import eventually_sync
from tether.core.run import Run
from tether.core.status import RunStatus
from tether.runtime import log_context
from tether.telemetry import logs

pytestmark = pytest.mark.slow

RUN = Run(
    id="01900000-0000-7000-8000-00000000aaaa",
    session_id="01900000-0000-7000-8000-00000000bbbb",
    owner="alice",
    seq=1,
    agent="echo",
    goal="g",
    status=RunStatus.RUNNING,
    created_at=datetime(2025, 1, 1, tzinfo=UTC),
    updated_at=datetime(2025, 1, 1, tzinfo=UTC),
)


@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, io.StringIO, logging.StreamHandler[io.StringIO]]]:
    """A logger whose lines land in a buffer, through a handler whose formatter a test sets."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    logger = logging.getLogger("tether.test-logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger, buffer, handler
    logger.removeHandler(handler)


def _json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_json_line_names_the_run_it_is_about(captured: Any) -> None:
    logger, buffer, handler = captured
    handler.setFormatter(logs.JsonFormatter())
    logger.info("outside any run")
    with log_context.about(RUN):
        logger.warning("inside %s", "the run", extra={"attempt": 2})
    logger.info("about a run, from elsewhere", extra=log_context.ids(RUN))
    outside, inside, elsewhere = _json_lines(buffer.getvalue())
    assert outside["message"] == "outside any run" and "run_id" not in outside
    assert inside == {
        "time": inside["time"],
        "level": "warning",
        "logger": "tether.test-logs",
        "message": "inside the run",
        "run_id": RUN.id,
        "session_id": RUN.session_id,
        "attempt": 2,
    }
    assert datetime.fromisoformat(inside["time"]).tzinfo is not None
    assert (elsewhere["run_id"], elsewhere["session_id"]) == (RUN.id, RUN.session_id)


def test_a_json_line_keeps_the_traceback_inside_its_one_line(captured: Any) -> None:
    logger, buffer, handler = captured
    handler.setFormatter(logs.JsonFormatter())
    try:
        raise ValueError("boom\nwith a second line")
    except ValueError:
        logger.exception("it failed")
    [line] = buffer.getvalue().splitlines()
    record = json.loads(line)
    assert record["level"] == "error" and record["message"] == "it failed"
    assert "ValueError: boom" in record["exception"] and "Traceback" in record["exception"]


def test_an_access_line_carries_the_request(captured: Any) -> None:
    _, buffer, handler = captured
    access = logging.getLogger("uvicorn.access")
    access.addHandler(handler)
    old_level, access.level = access.level, logging.INFO
    try:
        args = ("127.0.0.1:5000", "GET", "/v1/runs/x?limit=2", "1.1", 404)
        handler.setFormatter(logs.JsonFormatter())
        access.info('%s - "%s %s HTTP/%s" %d', *args)
        handler.setFormatter(logs.PlainFormatter())
        access.info('%s - "%s %s HTTP/%s" %d', *args)
    finally:
        access.removeHandler(handler)
        access.level = old_level
    as_json, as_text = buffer.getvalue().splitlines()
    record = json.loads(as_json)
    assert (record["client"], record["method"], record["path"]) == args[:3]
    assert (record["http_version"], record["status"]) == ("1.1", 404)
    request = '127.0.0.1:5000 - "GET /v1/runs/x?limit=2 HTTP/1.1" 404'
    assert as_text.endswith(f" INFO uvicorn.access {request}")


def test_a_plain_line_puts_the_ids_at_its_end(captured: Any) -> None:
    logger, buffer, handler = captured
    handler.setFormatter(logs.PlainFormatter())
    with log_context.about(RUN):
        logger.info("run failed")
    [line] = buffer.getvalue().splitlines()
    stamp, level, name, rest = line.split(" ", 3)
    assert datetime.fromisoformat(stamp).tzinfo is not None
    assert (level, name) == ("INFO", "tether.test-logs")
    assert rest == f"run failed [run_id={RUN.id} session_id={RUN.session_id}]"


def test_an_unknown_log_format_is_one_usage_line() -> None:
    for command in ("serve", "worker"):
        done = cli(command, "--log-format", "xml", "--db", "nowhere.db")
        assert done.returncode == 2, done
        assert "Traceback" not in done.stderr
        assert "'xml' is not one of plain, json" in done.stderr


def test_serve_logs_json_lines_with_the_access_log_and_the_runs_ids(tmp_path: Path) -> None:
    server = serve(Served, tmp_path / "t.db", "--no-auth", "--log-format", "json", "--access-log")
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            session = http.post("/v1/sessions", json={"title": "logged"}).json()
            path = f"/v1/sessions/{session['id']}/runs"
            run = http.post(path, json={"goal": "g", "input": {"fail": "no way"}}).json()
            done = http.get(f"/v1/runs/{run['id']}/wait", params={"timeout": 15}).json()
            assert done["status"] == "failed"
        eventually_sync(
            lambda: any(run["id"] in line for line in server.log), what="the run's log line"
        )
    finally:
        assert server.stop() == 0
    lines = _json_lines("".join(server.log))  # every line parses as JSON
    # First what confines the coder agent, then uvicorn's own lines.
    confinement = [r["message"].split(":")[0] for r in lines if r["logger"] == "tether.serve"]
    assert confinement == ["coder workspace roots", "coder commands", "coder command limits"]
    assert lines[len(confinement)]["logger"].startswith("uvicorn")
    [listening] = [r for r in lines if r["message"].startswith("tether listening on ")]
    assert listening["url"] == server.url
    [created] = [r for r in lines if r.get("path") == path]
    assert (created["logger"], created["method"]) == ("uvicorn.access", "POST")
    assert created["status"] == 201
    [failed] = [r for r in lines if r["logger"] == "tether.executor"]
    assert (failed["run_id"], failed["session_id"]) == (run["id"], session["id"])
    assert "no way" in failed["message"]


def test_a_worker_logs_json_lines_naming_the_runs(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    server = serve(Served, db, "--no-auth", "--workers", "0")
    worker = subprocess.Popen(
        [sys.executable, "-m", "tether", "worker", "--db", str(db)],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TETHER_LOG_FORMAT": "json"},
    )
    lines: list[str] = []

    def read() -> None:
        assert worker.stderr is not None
        with worker.stderr:
            lines.extend(worker.stderr)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        started = "worker .* started on"  # a slow machine may take seconds to start Python
        eventually_sync(
            lambda: any("started on" in line for line in lines), timeout=60, what=started
        )
        with httpx.Client(base_url=server.url, timeout=30) as http:
            session = http.post("/v1/sessions", json={"title": "worked"}).json()
            path = f"/v1/sessions/{session['id']}/runs"
            run = http.post(path, json={"goal": "g", "input": {"fail": True}}).json()
            done = http.get(f"/v1/runs/{run['id']}/wait", params={"timeout": 15}).json()
            assert done["status"] == "failed"
        eventually_sync(lambda: any(run["id"] in line for line in lines), what="the run's log line")
    finally:
        worker.terminate()
        code = worker.wait(30)
        reader.join(10)
        assert server.stop() == 0
    assert code == 0, "".join(lines)
    records = _json_lines("".join(lines))
    assert records[0]["message"].startswith("worker ") and "started on" in records[0]["message"]
    [failed] = [r for r in records if r.get("run_id") == run["id"]]
    assert failed["session_id"] == session["id"] and failed["level"] == "info"
    assert records[-1]["message"] == "worker stopped"
