"""`tether demo` end to end, in a subprocess, checked on its --json output and on the database."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

TETHER = [sys.executable, "-m", "tether.cli"]


def tether_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TETHER, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    where = tmp_path_factory.mktemp("demo")
    done = tether_cli("demo", "--db", "demo.db", "--workspace", "calc", "--json", cwd=where)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["workspace_kept"] is True and Path(data["workspace"]) == where / "calc"
    return data, where / "demo.db"


def test_without_a_workspace_the_temporary_copy_is_removed(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    done = subprocess.run(
        [*TETHER, "demo", "--db", "demo.db"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "TMPDIR": str(temp)},
    )
    assert done.returncode == 0, done.stderr
    assert "a temporary copy, removed at the end" in done.stdout
    assert "keys create --owner local" in " ".join(done.stdout.split())  # the UI's first visit
    assert list(temp.iterdir()) == []


def test_the_demo_plays_again_on_a_database_with_api_keys(tmp_path: Path) -> None:
    """The README's first visit creates a key for local in the demo's database; playing the
    demo again there still lets its runs work on its own copy (and on nothing else)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    assert tether_cli("demo", "--db", "demo.db", cwd=tmp_path).returncode == 0
    keyed = tether_cli("keys", "create", "--owner", "local", "--db", "demo.db", cwd=tmp_path)
    assert keyed.returncode == 0, keyed.stderr
    done = subprocess.run(
        [*TETHER, "demo", "--db", "demo.db", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "TMPDIR": str(temp)},
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [r["status"] for r in data["runs"]] == ["completed"] * 4
    assert Path(data["workspace"]).parent.name == "local"  # ROOT/OWNER/calc
    assert list(temp.iterdir()) == []


def test_the_session_has_four_runs_and_stays_active(demo: tuple[dict[str, Any], Path]) -> None:
    data, _ = demo
    assert data["session"]["status"] == "active"
    assert data["session"]["title"] == "Keep helping me with this project"
    runs = data["runs"]
    assert [r["seq"] for r in runs] == [1, 2, 3, 4]
    assert [r["status"] for r in runs] == ["completed"] * 4
    for run in runs:
        assert run["started_at"] and run["ended_at"] and run["ended_at"] >= run["started_at"]
        assert run["error"] is None
        assert run["steps"], "every run records its steps"


def test_run_one_ran_the_failing_tests_for_real_and_promoted_its_finding(
    demo: tuple[dict[str, Any], Path],
) -> None:
    data, _ = demo
    first = data["runs"][0]
    commands = [s for s in first["tool_calls"] if s["name"] == "run_command"]
    assert commands and commands[0]["output"]["exit_code"] == 1
    assert "No module named 'calc._vendor'" in commands[0]["output"]["output"]
    assert [m["key"] for m in first["memory"]] == ["finding"]
    promoted = {m["key"]: m for m in data["memory"]["session"]}
    assert promoted["finding"]["source_run_id"] == first["id"]
    assert {"python_version", "preferences"} <= set(promoted)


def test_run_two_edited_the_project_and_run_three_passes(
    demo: tuple[dict[str, Any], Path],
) -> None:
    data, _ = demo
    workspace = Path(data["workspace"])
    writes = [s for s in data["runs"][1]["tool_calls"] if s["name"] == "write_file"]
    assert writes and writes[0]["status"] == "completed"
    assert "except ModuleNotFoundError" in (workspace / "calc" / "report.py").read_text()
    verify = [s for s in data["runs"][2]["tool_calls"] if s["name"] == "run_command"]
    assert verify and verify[-1]["output"]["exit_code"] == 0
    rerun = subprocess.run(
        [sys.executable, "-m", "unittest", "-q"],
        cwd=workspace,
        capture_output=True,
        text=True,
        check=False,
    )
    assert rerun.returncode == 0, rerun.stderr


def test_the_summary_comes_from_the_aggregated_tool_history(
    demo: tuple[dict[str, Any], Path],
) -> None:
    data, _ = demo
    summary_run = data["runs"][3]
    assert [s["name"] for s in summary_run["tool_calls"]] == ["session_tool_history"]
    union = [s["id"] for run in data["runs"] for s in run["tool_calls"]]
    assert sorted(s["id"] for s in data["tool_calls"]) == sorted(union)
    assert "Run 1" in summary_run["output"]["summary"]


def test_the_database_holds_the_same_story(demo: tuple[dict[str, Any], Path]) -> None:
    data, db = demo
    with sqlite3.connect(db) as conn:
        status = conn.execute(
            "SELECT status FROM sessions WHERE id = ?", (data["session"]["id"],)
        ).fetchone()[0]
        runs = conn.execute(
            "SELECT seq, status FROM runs WHERE session_id = ? ORDER BY seq",
            (data["session"]["id"],),
        ).fetchall()
        closing = conn.execute(
            "SELECT count(*) FROM events WHERE session_id = ? AND type = 'session.closed'",
            (data["session"]["id"],),
        ).fetchone()[0]
    assert status == "active"
    assert runs == [(1, "completed"), (2, "completed"), (3, "completed"), (4, "completed")]
    assert closing == 0


def test_show_from_a_new_process_prints_the_same(demo: tuple[dict[str, Any], Path]) -> None:
    data, db = demo
    shown = tether_cli(
        "sessions", "show", data["session"]["id"], "--db", str(db), "--json", cwd=db.parent
    )
    assert shown.returncode == 0, shown.stderr
    again = json.loads(shown.stdout)
    assert again["session"] == data["session"]
    assert again["runs"] == data["runs"]
    run = tether_cli(
        "runs", "show", data["runs"][1]["id"], "--db", str(db), "--json", cwd=db.parent
    )
    assert run.returncode == 0, run.stderr
    alone = json.loads(run.stdout)
    assert alone.pop("context")["session_id"] == data["session"]["id"]  # what it started from
    assert alone == data["runs"][1]
    text = tether_cli("sessions", "show", data["session"]["id"], "--db", str(db), cwd=db.parent)
    assert "Run 4" in text.stdout and "active" in text.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("runs", "show", "no-such-run"), "run no-such-run not found"),
        (("sessions", "show", "no-such-session"), "session no-such-session not found"),
        (("sessions", "list", "--status", "nope"), "status must be one of"),
    ],
)
def test_bad_input_is_one_line_without_a_traceback(
    demo: tuple[dict[str, Any], Path], args: tuple[str, ...], message: str
) -> None:
    _, db = demo
    done = tether_cli(*args, "--db", str(db), cwd=db.parent)
    assert done.returncode != 0
    assert message in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert len(done.stderr.strip().splitlines()) == 1


def test_missing_and_unreadable_databases_are_clear(tmp_path: Path) -> None:
    missing = tether_cli("sessions", "list", "--db", "nope.db", cwd=tmp_path)
    assert missing.returncode != 0 and "no tether database at nope.db" in missing.stderr
    (tmp_path / "junk.db").write_text("not a database")
    junk = tether_cli("sessions", "list", "--db", "junk.db", cwd=tmp_path)
    assert junk.returncode != 0 and "not a database" in junk.stderr
    assert "Traceback" not in junk.stderr


def test_closing_from_the_cli_makes_the_session_read_only(
    demo: tuple[dict[str, Any], Path], tmp_path: Path
) -> None:
    data, db = demo
    copy = tmp_path / "copy.db"
    with sqlite3.connect(db) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    closed = tether_cli(
        "sessions", "close", data["session"]["id"], "--db", str(copy), "--json", cwd=tmp_path
    )
    assert closed.returncode == 0, closed.stderr
    assert json.loads(closed.stdout)["status"] == "closed"
    again = tether_cli("sessions", "close", data["session"]["id"], "--db", str(copy), cwd=tmp_path)
    assert again.returncode == 0
