"""The sync facade and its async twin offer the same objects over the same runtime."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import tether
from tests.conversation import async_walkthrough, walkthrough
from tests.waiting import WAIT
from tether.core.errors import SessionClosed
from tether.core.status import RunStatus, SessionStatus


def test_sync_facade_handles_are_records_with_operations(tmp_path: Path) -> None:
    with tether.open(tmp_path / "t.db") as tt:
        s = tt.sessions.create(title="Keep helping me with this project")
        assert isinstance(s, tether.Session) and s.status is SessionStatus.ACTIVE
        s.memory["python"] = "3.11"
        tt.user_memory["style"] = "short"
        run = s.runs.create("say hi", agent="echo", input={"text": "hi", "steps": 1}).wait(WAIT)
        assert isinstance(run, tether.Run)
        assert run.status is RunStatus.COMPLETED and run.output == {"text": "echo: hi"}
        assert [step.name for step in run.steps] == ["step 1", "assistant_message"]
        assert dict(s.memory) == {"python": "3.11"} and tt.user_memory["style"] == "short"
        assert [m.content for m in s.messages] == ["echo: hi"]
        assert s.refresh().status is SessionStatus.ACTIVE
        closed = s.close()
        assert closed.status is SessionStatus.CLOSED
        with pytest.raises(SessionClosed):
            s.runs.create("again", agent="echo")
        with pytest.raises(KeyError):
            s.memory["missing"]


def test_runs_take_their_options_as_one_value_or_as_keywords(tmp_path: Path) -> None:
    options = tether.RunOptions(agent="echo", max_attempts=3, if_busy=tether.IfBusy.ENQUEUE)
    with tether.open(tmp_path / "t.db", worker=False) as tt:
        s = tt.sessions.create()
        first = s.runs.create("first", options=options)
        second = s.runs.create("second", options=options, timeout_seconds=5, metadata={"k": 1})
        third = s.runs.create("third", if_busy="enqueue", after_seconds=60)
        assert (first.max_attempts, first.timeout_seconds) == (3, None)
        assert (second.max_attempts, second.timeout_seconds, second.metadata) == (3, 5, {"k": 1})
        assert (third.max_attempts, third.agent) == (1, "echo") and third.not_before is not None
        assert [r.status for r in s.runs] == [RunStatus.READY] * 3

    async def main() -> None:
        async with await tether.open_async(tmp_path / "t.db", worker=False) as tt:
            s = await tt.sessions.get(first.session_id)
            fourth = await s.runs.create("fourth", options=options, max_attempts=2)
            assert (fourth.seq, fourth.max_attempts) == (4, 2)

    asyncio.run(main())


def test_async_twin_sees_what_the_sync_facade_wrote(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    with tether.open(db, worker=False) as tt:
        session_id = tt.sessions.create(title="shared").id

    async def main() -> None:
        async with await tether.open_async(db) as tt:
            s = await tt.sessions.get(session_id)
            assert isinstance(s, tether.Session) and s.title == "shared"
            await s.memory.set("python", "3.11")
            run = await (
                await s.runs.create("wait for me", agent="echo", input={"wait": "ok?"})
            ).wait(WAIT)
            assert run.status is RunStatus.WAITING and run.waiting_for is not None
            run = await (await run.resume("yes")).wait(WAIT)
            assert run.status is RunStatus.COMPLETED
            assert run.output == {"text": "echo: wait for me yes"}
            assert [st.name for st in await run.steps()] == ["wait_for_input", "assistant_message"]
            assert [e.type async for e in run.stream()][-1] == "run.completed"
            assert await s.memory.get("python") == "3.11"
            assert [r.seq for r in await s.runs.list()] == [1]
            closed = await s.close()
            assert closed.status is SessionStatus.CLOSED

    asyncio.run(main())
    with tether.open(db, worker=False) as tt:
        assert tt.sessions.get(session_id).status is SessionStatus.CLOSED


def test_the_conversation_api_on_a_local_database(tmp_path: Path) -> None:
    with tether.open(tmp_path / "t.db", worker=False) as tt:
        walkthrough(tt, "user_123")
        walkthrough(tt, "app/user/会话 2")


def test_the_async_conversation_api_on_a_local_database(tmp_path: Path) -> None:
    async def main() -> None:
        async with await tether.open_async(tmp_path / "t.db", worker=False) as tt:
            await async_walkthrough(tt, "user_123")

    asyncio.run(main())
