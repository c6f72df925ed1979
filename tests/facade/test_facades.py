"""The sync facade and its async twin offer the same objects over the same runtime."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.conversation import async_walkthrough, walkthrough

import tether
from tether.core.errors import SessionClosed
from tether.core.status import RunStatus, SessionStatus


def test_sync_facade_handles_are_records_with_operations(tmp_path: Path) -> None:
    with tether.open(tmp_path / "t.db") as tt:
        s = tt.sessions.create(title="Keep helping me with this project")
        assert isinstance(s, tether.Session) and s.status is SessionStatus.ACTIVE
        s.memory["python"] = "3.11"
        tt.user_memory["style"] = "short"
        run = s.runs.create("say hi", agent="echo", input={"text": "hi", "steps": 1}).wait(10)
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
            ).wait(10)
            assert run.status is RunStatus.WAITING and run.waiting_for is not None
            run = await (await run.resume("yes")).wait(10)
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
