"""GET /v1/sessions/{id}/export: one JSON document with everything in a session, which
``tether sessions import`` puts into another database, ids kept."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.api.httpkit import Server, new_run, new_session, wait_run
from tests.serving import cli

pytestmark = pytest.mark.slow


def test_a_session_exported_over_http_imports_into_another_database(
    server: Server, alice: httpx.Client, bob: httpx.Client, tmp_path: Path
) -> None:
    session = new_session(alice, title="to move")
    run = wait_run(alice, new_run(alice, session["id"], goal="look", input={"steps": 2})["id"])
    answer = alice.get(f"/v1/sessions/{session['id']}/export")
    assert answer.status_code == 200, answer.text
    archive = answer.json()
    assert archive["format"] == "tether.session"
    assert archive["session"]["id"] == session["id"]
    assert [r["id"] for r in archive["runs"]] == [run["id"]]
    assert len(archive["steps"]) == 3  # two notes and the assistant message
    missing = bob.get(f"/v1/sessions/{session['id']}/export")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"

    remote = ("--url", server.url, "--api-key", server.keys["alice"])
    exported = tmp_path / "session.json"
    done = cli("sessions", "export", session["id"], "--out", exported, *remote)
    assert done.returncode == 0, done.stderr
    assert json.loads(exported.read_text()) == archive
    db = tmp_path / "other.db"
    done = cli("sessions", "import", exported, "--db", db)
    assert done.returncode == 0, done.stderr
    assert "imported (owner alice)" in done.stdout
    shown = cli("runs", "show", run["id"], "--db", db, "--owner", "alice", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["output"] == run["output"]
    again = cli("sessions", "export", session["id"], "--db", db, "--owner", "alice")
    assert json.loads(again.stdout) == archive  # the round trip changes nothing
    twice = cli("sessions", "import", exported, "--db", db)
    assert twice.returncode == 1 and "already exists" in twice.stderr
