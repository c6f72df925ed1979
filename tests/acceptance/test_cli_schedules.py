"""tether schedules and tether webhooks secret on a database: create, list, show, pause,
resume and delete; bad input is one line and a non-zero exit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tether
from tests.serving import cli

pytestmark = pytest.mark.slow


def test_schedules_from_the_command_line(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    with tether.open(db, worker=False) as tt:
        session = tt.sessions.create(title="reports")
    made = cli(
        "schedules", "create", "0 9 * * mon-fri", "--timezone", "Europe/Paris",
        "--session", session.id, "--input", '{"text": "standup"}', "--db", db, "--json",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    schedule = json.loads(made.stdout)
    assert schedule["session_id"] == session.id and schedule["timezone"] == "Europe/Paris"
    listed = json.loads(cli("schedules", "list", "--db", db, "--json").stdout)["data"]
    assert [s["id"] for s in listed] == [schedule["id"]]
    table = cli("schedules", "list", "--db", db, env={"COLUMNS": "200"})
    assert "0 9 * * mon-fri" in table.stdout and "enabled" in table.stdout

    paused = cli("schedules", "pause", schedule["id"], "--db", db, "--json")
    assert json.loads(paused.stdout)["enabled"] is False
    shown = cli("schedules", "show", schedule["id"], "--db", db)
    assert "paused" in shown.stdout and "standup" in shown.stdout
    resumed = cli("schedules", "resume", schedule["id"], "--db", db, "--json")
    assert json.loads(resumed.stdout)["enabled"] is True
    assert cli("schedules", "delete", schedule["id"], "--db", db).returncode == 0
    gone = cli("schedules", "show", schedule["id"], "--db", db)
    assert gone.returncode == 1 and gone.stderr.count("\n") == 1 and "not found" in gone.stderr

    bad = cli("schedules", "create", "61 * * * *", "--db", db)
    assert bad.returncode != 0 and "minute" in bad.stderr and "Traceback" not in bad.stderr
    worse = cli("schedules", "create", "* * * * *", "--input", "[1]", "--db", db)
    assert worse.returncode != 0 and "--input" in worse.stderr


def test_the_webhook_secret_is_shown_and_rotated(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    cli("db", "migrate", "--db", db)
    first = cli("webhooks", "secret", "--owner", "alice", "--db", db)
    assert first.returncode == 0 and first.stdout.startswith("whsec_")
    assert cli("webhooks", "secret", "--owner", "alice", "--db", db).stdout == first.stdout
    rotated = cli("webhooks", "secret", "--owner", "alice", "--db", db, "--rotate")
    assert rotated.stdout != first.stdout
    other = cli("webhooks", "secret", "--owner", "bob", "--db", db)
    assert other.stdout not in (first.stdout, rotated.stdout)
