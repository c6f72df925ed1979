"""The Python client against the real server: same operations, records and errors as the
library; streams resume by themselves after a dropped connection."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

import tether
from tests.api.httpkit import Server
from tests.conversation import async_walkthrough, walkthrough
from tests.serving import Proxy
from tests.waiting import WAIT
from tether import AsyncClient, Client
from tether.core.errors import (
    InvalidTransition,
    NotFound,
    SessionBusy,
    SessionClosed,
    Unauthorized,
    UsageError,
)
from tether.core.page import Page


@pytest.fixture
def proxy(server: Server) -> Iterator[Proxy]:
    running = Proxy(server.url)
    yield running
    running.close()


def test_connect_gives_the_library_facade_over_http(server: Server) -> None:
    with tether.connect(server.url, api_key=server.keys["alice"]) as tt:
        s = tt.sessions.create(title="Keep helping me", project={"workspace": "./calc"})
        assert isinstance(s, tether.Session) and s.owner == "alice"
        s.memory["python"] = "3.9"
        assert dict(s.memory) == {"python": "3.9"}
        first = s.runs.create(goal="Analyse", input={"steps": 2}).wait(WAIT)
        second = s.runs.create(goal="Fix", input={"fail": "no such module"}).wait(WAIT)
        assert isinstance(first, tether.RunHandle)
        assert (first.status, second.status) == (
            tether.RunStatus.COMPLETED,
            tether.RunStatus.FAILED,
        )
        assert second.error == tether.ErrorInfo(type="ValueError", message="no such module")
        assert first.started_at is not None and first.ended_at is not None
        assert [step.kind.value for step in first.steps] == ["note", "note", "message"]
        assert [r.seq for r in s.runs] == [1, 2]
        assert s.refresh().status is tether.SessionStatus.ACTIVE
        assert [m.content for m in s.messages] == ["echo: Analyse"]
        assert [e.type for e in first.stream()][-1] == "run.completed"
        tt.user_memory["tz"] = "UTC"
        assert tt.user_memory["tz"] == "UTC"
        assert s.close().status is tether.SessionStatus.CLOSED
        with pytest.raises(SessionClosed) as closed:
            s.runs.create(goal="after close")
        assert closed.value.code == "session_closed"
        with pytest.raises(UsageError):
            tt.sweep_expired()


def test_sync_client_mirrors_the_service(server: Server) -> None:
    with Client(server.url, api_key=server.keys["alice"]) as client:
        session = client.create_session(title="sync", ttl_seconds=None)
        assert isinstance(session, tether.Session) and session.ttl_seconds is None
        waiting = client.create_run(session.id, "ask", input={"wait": "ok?"})
        assert client.wait_run(waiting.id, timeout=WAIT).status is tether.RunStatus.WAITING
        with pytest.raises(SessionBusy) as busy:
            client.create_run(session.id, "another")
        assert busy.value.active_run_id == waiting.id
        resumed = client.resume_run(waiting.id, "yes")
        done = client.wait_run(resumed.id, timeout=WAIT)
        assert done.output == {"text": "echo: ask yes"}
        with pytest.raises(InvalidTransition) as finished:
            client.cancel_run(done.id)
        assert (finished.value.current, finished.value.target) == ("completed", "cancelled")
        with pytest.raises(NotFound) as missing:
            client.get_run("nope")
        assert (missing.value.kind, missing.value.ident) == ("run", "nope")
        page = client.list_runs(session.id)
        assert [r.id for r in page.data] == [done.id] and page.next_cursor is None
        assert client.list_events(run_id=done.id)[-1].type == "run.completed"
        item = client.set_session_memory(session.id, "k/with/slashes", [1, 2])
        assert client.get_session_memory(session.id, "k/with/slashes") == item
        assert client.get_context(session.id, budget_tokens=500)["session_id"] == session.id
        updated = client.update_session(session.id, title="renamed", ttl_seconds=60)
        assert (updated.title, updated.ttl_seconds) == ("renamed", 60)
        client.delete_session(session.id)
        with pytest.raises(NotFound):
            client.get_session(session.id)
    with Client(server.url, api_key="tk_wrong") as stranger, pytest.raises(Unauthorized):
        stranger.list_sessions()


def test_run_options_travel_as_one_value_or_as_keywords(server: Server) -> None:
    options = tether.RunOptions(
        max_attempts=3, metadata={"ticket": 7}, idempotency_key="once", after_seconds=3600
    )
    with Client(server.url, api_key=server.keys["alice"]) as client:
        session = client.create_session()
        first = client.create_run(session.id, "later", options=options)
        assert (first.max_attempts, first.metadata, first.idempotency_key) == (
            3,
            {"ticket": 7},
            "once",
        )
        assert first.not_before is not None and first.status is tether.RunStatus.READY
        assert client.create_run(session.id, "later", options=options).id == first.id
        second = client.create_run(
            session.id, "next", options=options, idempotency_key="twice", if_busy="enqueue"
        )
        assert (second.seq, second.max_attempts, second.idempotency_key) == (2, 3, "twice")
        with pytest.raises(UsageError):
            client.create_run(session.id, "bad", if_busy="sometimes")


def test_sync_stream_resumes_after_a_dropped_connection(server: Server, proxy: Proxy) -> None:
    with (
        Client(server.url, api_key=server.keys["alice"]) as direct,
        Client(proxy.url, api_key=server.keys["alice"]) as client,
    ):
        session = direct.create_session()
        run = direct.create_run(session.id, "go", input={"steps": 1, "wait": "continue?"})
        seen = []
        for event in client.stream_events(run_id=run.id):
            assert event is not None
            seen.append(event)
            if event.type == "run.waiting":
                proxy.cut()  # the connection drops mid-run
                direct.resume_run(run.id, "yes")
        assert proxy.connections >= 2
        assert seen == direct.list_events(run_id=run.id)
        assert seen[-1].type == "run.completed"
        assert len({e.id for e in seen}) == len(seen)


def test_async_client_streams_with_heartbeats_and_resumes(server: Server, proxy: Proxy) -> None:
    async def scenario() -> None:
        async with (
            AsyncClient(server.url, api_key=server.keys["alice"]) as direct,
            AsyncClient(proxy.url, api_key=server.keys["alice"]) as client,
        ):
            session = await direct.create_session(title="async")
            seen = []
            beats = 0
            stream = client.stream_events(session_id=session.id, heartbeat=0.2)
            async for event in stream:
                if event is None:
                    beats += 1
                    if beats == 1:
                        await direct.add_message(session.id, "user", "one")
                    continue
                seen.append(event)
                if event.type == "message.added" and len(seen) == 2:
                    proxy.cut()
                    await direct.add_message(session.id, "user", "two")
                if len(seen) == 3:
                    break
            await stream.aclose()
            assert [e.type for e in seen] == ["session.created", "message.added", "message.added"]
            assert [e.data["message"]["content"] for e in seen[1:]] == ["one", "two"]
            assert seen == await direct.list_events(session_id=session.id)
            assert proxy.connections >= 2

    asyncio.run(scenario())


def test_the_conversation_api_over_http(server: Server) -> None:
    with tether.connect(server.url, api_key=server.keys["alice"]) as tt:
        walkthrough(tt, "http/user_123")
        walkthrough(tt, "http/ключ ?&#%/..")


def test_the_async_conversation_api_over_http(server: Server) -> None:
    async def main() -> None:
        async with tether.connect_async(server.url, api_key=server.keys["alice"]) as tt:
            await async_walkthrough(tt, "async-http/user_123")

    asyncio.run(main())


def test_connect_and_open_read_alike(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """await connect_async as await open_async; the key from TETHER_API_KEY as the CLI takes
    it; tt.backend gives results, not coroutines, and its errors name no async internals."""
    monkeypatch.setenv("TETHER_API_KEY", server.keys["alice"])

    async def main() -> None:
        tt = await tether.connect_async(server.url)
        async with tt:
            assert (await tt.sessions.create(title="awaited")).owner == "alice"

    asyncio.run(main())
    with tether.connect(server.url) as tt:
        session = tt.sessions.create(title="from the environment")
        assert session.owner == "alice"
        page = tt.backend.list_messages(session.id)
        assert isinstance(page, Page) and page.data == []
        with pytest.raises(TypeError) as wrong:
            tt.backend.list_messages(session.id, newest=True)
        assert str(wrong.value).startswith("backend.list_messages(): ")
        assert "Async" not in str(wrong.value)
        with pytest.raises(tether.AgentNotFound) as unknown:
            session.runs.create("x", agent="only_in_this_process")
        assert "tether serve --agents MODULE" in str(unknown.value)
    with Client(server.url) as client, pytest.raises(TypeError) as wrong:
        client.list_messages("s", newest=True)  # type: ignore[call-arg]  # the mistake tested
    assert str(wrong.value).startswith("Client.list_messages(): ") and "Async" not in str(
        wrong.value
    )
