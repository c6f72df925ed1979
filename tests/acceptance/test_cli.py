"""The CLI on a database: cancel and resume runs, see another owner's sessions, usage errors
as one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import tether
from tether.core.status import RunStatus

TETHER = [sys.executable, "-m", "tether.cli"]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TETHER, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_runs_cancel_and_resume_from_the_cli(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    with tether.open(db, owner="alice") as tt:
        session = tt.sessions.create(title="cli")
        waiting = session.runs.create("ask", agent="echo", input={"wait": "ok?"}).wait(10)
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
        done = tt.runs.get(waiting.id).wait(10)
        assert done.output == {"text": "echo: ask yes"}
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
