"""The synchronous facade (``tether.open``) end to end, the way DESIGN.md §5 shows it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import tether
from tests.support import TEST_SETTINGS
from tests.waiting import WAIT
from tether.core.clock import ManualClock
from tether.runtime.agent import AgentRegistry
from tether.runtime.run_context import RunContext


async def remembering(ctx: RunContext) -> dict[str, object]:
    ctx.memory.run["hypothesis"] = "module `requests` is missing"
    answer = await ctx.wait_for_input("Apply the fix?")
    await ctx.memory.promote("hypothesis")
    return {"summary": f"answer was {answer}", "python": ctx.memory.session.get("python")}


@pytest.fixture
def tt(tmp_path: Path, agents: AgentRegistry) -> Iterator[tether.Tether]:
    agents.register("remembering", remembering)
    opened = tether.open(
        tmp_path / "facade.db", clock=ManualClock(), agents=agents, settings=TEST_SETTINGS
    )
    yield opened
    opened.close()


def test_quick_taste(tt: tether.Tether) -> None:
    s = tt.sessions.create(title="x")
    run = s.runs.create("hi", agent="echo", input={"text": "yo"}).wait(WAIT)
    assert run.status is tether.RunStatus.COMPLETED
    assert run.output == {"text": "echo: yo"}
    assert [m.content for m in s.messages] == ["echo: yo"]


def test_the_design_walkthrough(tt: tether.Tether) -> None:
    s = tt.sessions.create(title="Keep helping me", project={"workspace": "./calc"})
    s.memory["python"] = "3.9"
    assert dict(s.memory) == {"python": "3.9"}

    run = s.runs.create(goal="Analyse", agent="remembering").wait(WAIT)
    assert run.status is tether.RunStatus.WAITING
    assert run.waiting_for is not None and run.waiting_for["prompt"] == "Apply the fix?"
    assert dict(run.memory) == {"hypothesis": "module `requests` is missing"}
    with pytest.raises(TypeError, match="read-only"):
        run.memory["hypothesis"] = "changed from outside"

    done = run.resume("yes").wait(WAIT)
    assert done.status is tether.RunStatus.COMPLETED, done.error
    assert done.output == {"summary": "answer was yes", "python": "3.9"}
    assert [i.source_run_id for i in s.memory.items_with_source() if i.key == "hypothesis"] == [
        run.id
    ]
    assert [st.kind for st in done.steps] == [tether.StepKind.MESSAGE]

    second = s.runs.create("Verify", agent="echo", input={"text": "ok"}).wait(WAIT)
    assert [r.seq for r in s.runs.list()] == [1, 2]
    assert second.refresh().status is tether.RunStatus.COMPLETED
    assert s.refresh().status is tether.SessionStatus.ACTIVE

    closed = s.close()
    assert closed.status is tether.SessionStatus.CLOSED
    with pytest.raises(tether.SessionClosed):
        s.runs.create("more", agent="echo")
    with pytest.raises(tether.SessionClosed):
        s.memory["python"] = "3.12"
    assert tt.sessions.get(s.id).status is tether.SessionStatus.CLOSED
    assert [e.type for e in s.events()][-1] == "session.closed"


def test_busy_session_through_the_facade(tt: tether.Tether) -> None:
    s = tt.sessions.create()
    waiting = s.runs.create("ask", agent="echo", input={"wait": "ok?"}).wait(WAIT)
    assert waiting.status is tether.RunStatus.WAITING
    with pytest.raises(tether.SessionBusy) as caught:
        s.runs.create("again", agent="echo")
    assert caught.value.active_run_id == waiting.id
    newer = s.runs.create("again", agent="echo", input={"text": "2"}, if_busy="interrupt")
    assert newer.wait(WAIT).status is tether.RunStatus.COMPLETED
    assert waiting.refresh().status is tether.RunStatus.CANCELLED


def test_the_library_checks_what_the_http_api_checks(tmp_path: Path, tt: tether.Tether) -> None:
    s = tt.sessions.create()
    waiting = s.runs.create("ask", agent="echo", input={"wait": "ok?"}).wait(WAIT)
    with pytest.raises(tether.UsageError, match="reason is longer than 500"):
        waiting.cancel(reason="r" * 501)
    assert waiting.refresh().status is tether.RunStatus.WAITING
    for owner in ("", " padded ", "x" * 257):
        with pytest.raises(tether.UsageError, match="owner must be"):
            tether.open(tmp_path / "other.db", owner=owner, worker=False)


@pytest.mark.slow
def test_a_program_that_ends_without_close_hands_its_runs_back(tmp_path: Path) -> None:
    db = tmp_path / "exit.db"
    script = (
        "import sys, time, tether\n"
        "tt = tether.open(sys.argv[1])\n"
        "run = tt.sessions.create().runs.create('nap', agent='echo', input={'sleep': 30})\n"
        "while run.refresh().status is not tether.RunStatus.RUNNING:\n"
        "    time.sleep(0.02)\n"
        "print(run.id)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(db)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    with tether.open(db, worker=False) as tt:
        run = tt.runs.get(done.stdout.strip())
        assert run.status is tether.RunStatus.READY and run.worker_id is None


@pytest.mark.slow
def test_a_forked_child_exits_without_touching_its_parents_worker(tmp_path: Path) -> None:
    script = (
        "import os, sys, tether\n"
        "tt = tether.open(sys.argv[1])\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    sys.exit(0)\n"
        "print(os.waitpid(child, 0)[1])\n"
        "tt.close()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "fork.db")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0 and done.stdout.strip() == "0", done
