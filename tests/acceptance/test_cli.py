"""The CLI on a database: cancel and resume runs, see another owner's sessions, usage errors
as one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tether
from tests.waiting import WAIT
from tether.core.status import RunStatus

pytestmark = pytest.mark.slow

TETHER = [sys.executable, "-m", "tether.cli"]


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TETHER, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_runs_cancel_and_resume_from_the_cli(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    with tether.open(db, owner="alice") as tt:
        session = tt.sessions.create(title="cli")
        waiting = session.runs.create("ask", agent="echo", input={"wait": "ok?"}).wait(WAIT)
        assert waiting.status is RunStatus.WAITING
        hidden = cli("runs", "show", waiting.id, "--db", db, cwd=tmp_path)
        assert hidden.returncode == 1 and "not found" in hidden.stderr
        resumed = cli(
            "runs",
            "resume",
            waiting.id,
            '{"text": "yes"}',
            "--db",
            db,
            "--owner",
            "alice",
            "--json",
            cwd=tmp_path,
        )
        assert resumed.returncode == 0, resumed.stderr
        assert json.loads(resumed.stdout)["status"] == "running"
        done = tt.runs.get(waiting.id).wait(WAIT)
        assert done.output == {"text": "echo: ask yes"}
        # what strict JSON does not parse (NaN, 1e999) is text
        for text in ("NaN", "1e999"):
            asking = session.runs.create("ask", agent="echo", input={"wait": "ok?"}).wait(WAIT)
            assert asking.status is RunStatus.WAITING
            resumed = cli(
                "runs", "resume", asking.id, text, "--db", db, "--owner", "alice", cwd=tmp_path
            )
            assert resumed.returncode == 0, resumed.stderr
            assert tt.runs.get(asking.id).wait(WAIT).output == {"text": f"echo: ask {text}"}
        slow = session.runs.create("nap", agent="echo", input={"sleep": 30})
        cancelled = cli("runs", "cancel", slow.id, "--db", db, "--owner", "alice", cwd=tmp_path)
        assert cancelled.returncode == 0, cancelled.stderr
        assert "cancelled" in cancelled.stdout
        assert tt.runs.get(slow.id).status is RunStatus.CANCELLED
        again = cli("runs", "cancel", slow.id, "--db", db, "--owner", "alice", cwd=tmp_path)
        assert again.returncode == 1 and "cannot go from cancelled to cancelled" in again.stderr


def test_usage_mistakes_are_one_line(tmp_path: Path) -> None:
    for args in (("sessions", "show"), ("sessions", "list", "--limit", "0"), ("bogus",)):
        done = cli(*args, cwd=tmp_path)
        assert done.returncode == 2, done
        assert done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1
        assert "Traceback" not in done.stderr


def _one_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, done
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1, done
    return done.stderr


def test_bad_databases_servers_and_values_are_one_line(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    with tether.open(db) as tt:
        tt.sessions.create(title="one")
    # wrong values of an option are usage mistakes (2), like wrong options
    _one_line(cli("sessions", "list", "--db", db, "--status", "bogus", cwd=tmp_path), 2)
    for value in ("inf", "nan", "0"):
        _one_line(cli("worker", "--db", db, "--lease-seconds", value, cwd=tmp_path), 2)
    _one_line(cli("worker", "--db", db, "--grace-seconds", "-5", cwd=tmp_path), 2)
    # databases that name nothing tether can open
    assert "scheme 'mysql'" in _one_line(
        cli("sessions", "list", "--db", "mysql://x/y", cwd=tmp_path), 2
    )
    _one_line(cli("db", "migrate", "--db", "mysql://x/y", cwd=tmp_path), 2)
    _one_line(cli("sessions", "list", "--db", "", cwd=tmp_path), 2)
    # a sqlite URL without a path would be a throwaway in-memory database: refused, not "saved"
    for empty in ("sqlite:///", "sqlite://"):
        assert "names no database file" in _one_line(
            cli("db", "copy", "--from", db, "--to", empty, cwd=tmp_path), 2
        )
        _one_line(cli("keys", "create", "--owner", "z", "--db", empty, cwd=tmp_path), 2)
    for bad in ("postgresql://a@[::1/x", "postgresql://a@h:99x/db"):
        assert "invalid PostgreSQL URL" in _one_line(
            cli("sessions", "list", "--db", bad, cwd=tmp_path), 2
        )
    # an owner that names nobody is refused on reads too, from the flag or the environment
    _one_line(cli("sessions", "list", "--db", db, "--owner", "", cwd=tmp_path), 2)
    _one_line(cli("sessions", "list", "--db", db, env={"TETHER_OWNER": " x "}, cwd=tmp_path), 2)
    # a --db flag beats TETHER_URL; both flags together are a usage mistake
    nowhere = {"TETHER_URL": "http://127.0.0.1:9"}
    listed = cli("sessions", "list", "--db", db, "--json", env=nowhere, cwd=tmp_path)
    assert listed.returncode == 0 and '"title": "one"' in listed.stdout, listed
    both = cli("sessions", "list", "--db", db, "--url", "http://127.0.0.1:9", cwd=tmp_path)
    assert "not both" in _one_line(both, 2)
    # servers that cannot be addressed
    for url in ("http://[::1", "http://127.0.0.1:abc", "http://127.0.0.1:99999", "ftp://x"):
        assert "invalid server URL" in _one_line(
            cli("sessions", "list", "--url", url, "--api-key", "k", cwd=tmp_path), 2
        )
    _one_line(cli("tail", "x", "--url", "http://[::1", cwd=tmp_path), 2)
    # `tether serve` on a database it cannot open says so before starting
    missing = str(tmp_path / "no" / "such" / "t.db")
    served = cli("serve", "--port", "0", "--db", missing, cwd=tmp_path)
    assert "the folder" in _one_line(served, 2) and "API keys" not in served.stderr


def test_sessions_by_key_and_their_conversation_from_the_cli(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    with tether.open(db, worker=False) as tt:
        session = tt.sessions.create(title="keyed", external_key="app/user 1", app="shop")
        session.messages.add_many([{"content": f"m{n}"} for n in range(1, 31)])
        session.messages.add(item={"type": "function_call", "call_id": "c", "name": "f"})
        session.messages.pop()
        tt.app_memory("shop")["plan"] = "gold"
        tt.sessions.create(title="other")

    tail = cli(
        "sessions",
        "messages",
        "app/user 1",
        "--key",
        "--tail",
        "3",
        "--json",
        "--db",
        db,
        cwd=tmp_path,
    )
    assert tail.returncode == 0, tail.stderr
    assert [m["content"] for m in json.loads(tail.stdout)["data"]] == ["m28", "m29", "m30"]
    before = cli(
        "sessions",
        "messages",
        session.id,
        "--tail",
        "2",
        "--before",
        "3",
        "--json",
        "--db",
        db,
        cwd=tmp_path,
    )
    assert [m["seq"] for m in json.loads(before.stdout)["data"]] == [1, 2]
    audit = cli(
        "sessions",
        "messages",
        session.id,
        "--all",
        "--include-removed",
        "--json",
        "--db",
        db,
        cwd=tmp_path,
    )
    rows = json.loads(audit.stdout)["data"]
    assert len(rows) == 31 and rows[-1]["removed_at"] is not None
    assert rows[-1]["item"] == {"type": "function_call", "call_id": "c", "name": "f"}
    table = cli("sessions", "messages", session.id, "--db", db, cwd=tmp_path)
    assert table.returncode == 0 and "m30" in table.stdout and "m10" not in table.stdout

    listed = cli("sessions", "list", "--query", "user 1", "--json", "--db", db, cwd=tmp_path)
    assert [s["external_key"] for s in json.loads(listed.stdout)["data"]] == ["app/user 1"]
    shown = cli("sessions", "show", "app/user 1", "--key", "--json", "--db", db, cwd=tmp_path)
    data = json.loads(shown.stdout)
    assert data["session"]["id"] == session.id and data["session"]["app"] == "shop"
    assert [i["key"] for i in data["memory"]["app"]] == ["plan"]
    text = cli("sessions", "show", "app/user 1", "--key", "--db", db, cwd=tmp_path)
    assert "key='app/user 1'" in text.stdout and "App memory" in text.stdout

    by_id_as_key = cli("sessions", "show", session.id, "--key", "--db", db, cwd=tmp_path)
    assert by_id_as_key.returncode == 1
    assert by_id_as_key.stderr.startswith("error:") and "not found" in by_id_as_key.stderr
    closed = cli("sessions", "close", "app/user 1", "--key", "--json", "--db", db, cwd=tmp_path)
    assert json.loads(closed.stdout)["status"] == "closed"
    runs = cli("runs", "list", "app/user 1", "--key", "--json", "--db", db, cwd=tmp_path)
    assert runs.returncode == 0 and json.loads(runs.stdout) == {"data": []}
    wrong = cli("sessions", "messages", session.id, "--include-removed", "--db", db, cwd=tmp_path)
    assert wrong.returncode == 2 and "--include-removed goes with --all" in wrong.stderr
