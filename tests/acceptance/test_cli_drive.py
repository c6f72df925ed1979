"""Driving runs from the shell: create a session, a message and a run; see what a waiting run
asks (for an approval, the tool and its arguments) in ``runs show`` and ``tether tail``; resume
it; the words of the errors on the way (a session's id given as a run's, a finished run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import tether
from tests.waiting import WAIT
from tether.cli.main import app
from tether.core.status import RunStatus
from tether.runtime import builtin
from tether.runtime.agent import AgentRegistry
from tether.runtime.tools import tool
from tether.version import __version__


def cli(*args: str) -> Any:
    """One command in this process (the output of typer's runner: exit_code, stdout, stderr)."""
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def words(text: str) -> str:
    """text with its spacing and line breaks (a terminal's width wraps lines) as single spaces."""
    return " ".join(text.split())


@tool(needs_approval=True)
def delete_branch(name: str) -> str:
    """Delete a git branch (a person must approve)."""
    return f"deleted {name}"


async def careful(ctx: tether.RunContext) -> dict[str, Any]:
    outcome = await ctx.call_tool("delete_branch", {"name": "old"})
    return {"ok": outcome.ok}


@pytest.fixture
def agents() -> AgentRegistry:
    registry = builtin.register(AgentRegistry())
    registry.register("careful", careful, tools=[delete_branch])
    return registry


def test_a_run_driven_from_the_shell(tmp_path: Path, agents: AgentRegistry) -> None:
    db = str(tmp_path / "t.db")
    with tether.open(db, agents=agents) as tt:
        created = cli("sessions", "create", "--title", "shell", "--db", db, "--json")
        assert created.exit_code == 0, created.output
        session = json.loads(created.stdout)
        assert session["title"] == "shell" and session["expires_at"] is not None
        sid = session["id"]
        added = cli("messages", "add", sid, "hello from the shell", "--db", db)
        assert added.exit_code == 0 and words("message 1 added (user)") in words(added.stdout)
        assert [m.content for m in tt.sessions.get(sid).messages.list()] == ["hello from the shell"]

        started = cli(
            "runs", "create", sid, "ask", "--input", '{"wait": "Which file?"}', "--db", db
        )
        assert started.exit_code == 0, started.output
        assert words("is ready") in words(started.stdout)
        assert words("a worker that has agent 'echo'") in words(started.stdout)
        run_id = tt.sessions.get(sid).runs.list()[0].id
        assert tt.runs.get(run_id).wait(WAIT).status is RunStatus.WAITING

        shown = cli("runs", "show", run_id, "--db", db)
        assert shown.exit_code == 0, shown.output
        assert words("waits for input: Which file?") in words(shown.stdout)
        assert words(f"tether runs resume {run_id}") in words(shown.stdout)
        assert (
            words("wait for input") in words(shown.stdout) and "wait_for_input" not in shown.stdout
        )
        assert words("1 step, 0 tool calls") in words(shown.stdout)
        record = json.loads(cli("runs", "show", run_id, "--db", db, "--json").stdout)
        assert record["waiting_for"]["prompt"] == "Which file?"
        assert "context" in record and "messages" in record["context"]

        wrong = cli("runs", "show", sid, "--db", db)
        assert wrong.exit_code == 1
        assert words("is a session's id") in words(wrong.stderr) and words(
            f"tether sessions show {sid}"
        ) in words(wrong.stderr)

        resumed = cli("runs", "resume", run_id, "main.py", "--db", db)
        assert resumed.exit_code == 0, resumed.output
        assert words("is running") in words(resumed.stdout) and words(
            "a worker that has agent 'echo'"
        ) in words(resumed.stdout)
        assert tt.runs.get(run_id).wait(WAIT).output == {"text": "echo: ask main.py"}
        again = cli("runs", "resume", run_id, "again", "--db", db)
        assert again.exit_code == 1
        assert words("has finished (completed): only a waiting run can be resumed") in words(
            again.stderr
        )

        bad = cli("runs", "create", sid, "x", "--input", "[1]", "--db", db)
        assert bad.exit_code == 2 and words("must be a JSON object") in words(bad.output)


def test_an_approval_shows_its_tool_and_arguments(tmp_path: Path, agents: AgentRegistry) -> None:
    db = str(tmp_path / "t.db")
    with tether.open(db, agents=agents) as tt:
        run = tt.sessions.create().runs.create("prune", agent="careful").wait(WAIT)
        assert run.status is RunStatus.WAITING
        shown = cli("runs", "show", run.id, "--db", db)
        assert words("waits for approval: Allow delete_branch") in words(shown.stdout)
        assert words('tool: delete_branch arguments: {"name": "old"}') in words(shown.stdout)
        assert words(f"tether runs resume {run.id} yes (or no)") in words(shown.stdout)
        assert cli("runs", "resume", run.id, "yes", "--db", db).exit_code == 0
        assert tt.runs.get(run.id).wait(WAIT).output == {"ok": True}
        followed = cli("tail", run.id, "--db", db)  # the whole log: the run has ended
        assert followed.exit_code == 0, followed.output
        assert words("wait for approval") in words(followed.stdout)
        assert words("waits for approval: Allow delete_branch") in words(followed.stdout)
        assert words('tool: delete_branch arguments: {"name": "old"}') in words(followed.stdout)


def test_sessions_list_pages_with_a_cursor(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    with tether.open(db, worker=False) as tt:
        for title in ("one", "two", "three"):
            tt.sessions.create(title=title)
    first = json.loads(cli("sessions", "list", "--limit", "2", "--db", db, "--json").stdout)
    assert [s["title"] for s in first["data"]] == ["three", "two"]
    assert all(s["expires_at"] for s in first["data"])
    cursor = first["next_cursor"]
    rest = cli("sessions", "list", "--limit", "2", "--cursor", cursor, "--db", db, "--json")
    assert [s["title"] for s in json.loads(rest.stdout)["data"]] == ["one"]
    assert json.loads(rest.stdout)["next_cursor"] is None
    table = cli("sessions", "list", "--limit", "2", "--db", db)
    assert words("more: --cursor") in words(table.stdout)  # the next page, in words


def test_sessions_create_takes_a_project(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    tether.open(db, worker=False).close()
    made = cli("sessions", "create", "--project", '{"workspace": "./calc"}', "--db", db, "--json")
    assert made.exit_code == 0, made.output
    session = json.loads(made.stdout)
    assert session["project"] == session["context"] == {"workspace": "./calc"}
    assert made.stderr == ""
    shown = cli("sessions", "show", session["id"], "--db", db)
    assert shown.exit_code == 0, shown.output
    assert 'project {"workspace": "./calc"}' in shown.stdout
    old = cli("sessions", "create", "--context", '{"workspace": "./b"}', "--db", db, "--json")
    assert old.exit_code == 0, old.output
    assert json.loads(old.stdout)["project"] == {"workspace": "./b"}
    assert words("warning: --context is deprecated: use --project") == words(old.stderr)
    both = cli("sessions", "create", "--project", "{}", "--context", "{}", "--db", db)
    assert both.exit_code == 1
    assert words("error: give --project only (--context is its deprecated name)") == words(
        both.stderr
    )
    bad = cli("sessions", "create", "--project", "[1]", "--db", db)
    assert bad.exit_code != 0 and "--project" in bad.stderr


def test_version() -> None:
    shown = cli("--version")
    assert shown.exit_code == 0 and shown.stdout == f"tether {__version__}\n"
