"""tether.integrations.adk: ADK's session service over tether, on both backends. What ADK's
own contract suite cannot see: where ADK's sessions, events and state land in tether (external
keys, messages with the event as item, session/user/app memory), that an event and its state
delta commit together, and that the service opens on a path, a handle or a service.
(ADK's suite itself runs with ../shared/peers/adk/run.sh; see docs/integrations.md.)"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

try:
    from google.adk.agents import Agent
    from google.adk.errors.already_exists_error import AlreadyExistsError
    from google.adk.errors.session_not_found_error import SessionNotFoundError
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.adk.sessions.base_session_service import GetSessionConfig
    from google.genai import types
except ImportError:  # pragma: no cover - the adk extra is part of tether[dev]
    if os.environ.get("CI", "").lower() == "true":
        raise
    pytest.skip("needs tether[adk] (google-adk)", allow_module_level=True)

import tether
from tests.support import OWNER
from tether.core.errors import UsageError
from tether.core.message import Role
from tether.integrations.adk import TetherSessionService, external_key
from tether.runtime.service import Service

APP = "weather"


def text_of(event: Event) -> str:
    """The text of an event holding one text part."""
    assert event.content is not None and event.content.parts
    text = event.content.parts[0].text
    assert text is not None
    return text


def say(text: str, *, author: str = "user", **fields: object) -> Event:
    role = "user" if author == "user" else "model"
    return Event(
        author=author,
        invocation_id="inv-1",
        content=types.Content(role=role, parts=[types.Part(text=text)]),
        **fields,  # type: ignore[arg-type]
    )


async def test_a_session_is_a_tether_session_named_by_its_external_key(service: Service) -> None:
    adk = TetherSessionService(service)
    created = await adk.create_session(app_name=APP, user_id="u/1", session_id="s 1")
    key = external_key(APP, "u/1", "s 1")
    assert key == "adk/weather/u%2F1/s%201"
    found = await service.get_session_by_key(key)
    assert found.app == APP and found.owner == OWNER and found.ttl_seconds is None
    assert created.id == "s 1" and created.user_id == "u/1"
    with pytest.raises(AlreadyExistsError):
        await adk.create_session(app_name=APP, user_id="u/1", session_id="s 1")
    listed = await adk.list_sessions(app_name=APP, user_id="u/1")
    assert [(s.user_id, s.id) for s in listed.sessions] == [("u/1", "s 1")]


async def test_events_are_messages_carrying_the_event(service: Service) -> None:
    adk = TetherSessionService(service)
    session = await adk.create_session(app_name=APP, user_id="u1")
    image = types.Part.from_bytes(data=b"\x00\xffpng", mime_type="image/png")
    asked = Event(
        author="user",
        invocation_id="inv-1",
        timestamp=1700000000.123456,
        content=types.Content(role="user", parts=[types.Part(text="Weather in Paris?"), image]),
    )
    call = Event(
        author="agent",
        invocation_id="inv-1",
        content=types.Content(
            role="model",
            parts=[types.Part.from_function_call(name="weather", args={"city": "Paris"})],
        ),
    )
    answer = Event(
        author="agent",
        invocation_id="inv-1",
        content=types.Content(
            role="user",
            parts=[types.Part.from_function_response(name="weather", response={"c": 21.5})],
        ),
    )
    for event in (asked, call, answer, say("Sunny, 21.5 °C", author="agent")):
        await adk.append_event(session, event)
    stored = await service.get_session_by_key(external_key(APP, "u1", session.id))
    messages = (await service.list_messages(stored.id)).data
    assert [(m.role, m.content) for m in messages] == [
        (Role.USER, "Weather in Paris?"),
        (Role.ASSISTANT, ""),
        (Role.TOOL, ""),
        (Role.ASSISTANT, "Sunny, 21.5 °C"),
    ]
    again = await TetherSessionService(service).get_session(
        app_name=APP, user_id="u1", session_id=session.id
    )
    assert again is not None
    assert again.events == session.events
    assert again.events[0].timestamp == 1700000000.123456
    assert again.events[0].content == asked.content  # the bytes too
    assert again.last_update_time == session.events[-1].timestamp


async def test_state_scopes_are_session_user_and_app_memory(service: Service) -> None:
    adk = TetherSessionService(service)
    session = await adk.create_session(
        app_name=APP, user_id="u1", state={"city": "Paris", "user:unit": "C", "app:model": "m1"}
    )
    delta = {"city": "Lyon", "user:unit": "F", "app:model": "m2", "temp:scratch": 1}
    await adk.append_event(session, say("Lyon?", actions=EventActions(state_delta=delta)))
    stored = await service.get_session_by_key(external_key(APP, "u1", session.id))
    own = {i.key: i.value for i in await service.list_session_memory(stored.id)}
    assert own == {"city": "Lyon"}  # temp: never stored, the adapter's bookkeeping hidden
    user = await service.get_user_memory("unit", namespace=("adk", APP, "u1"))
    assert user.value == "F"
    assert (await service.get_app_memory(APP, "model")).value == "m2"
    assert session.state["temp:scratch"] == 1  # the in-memory session keeps it
    assert await adk.get_user_state(app_name=APP, user_id="u1") == {"unit": "F"}

    # A native tether session of the same app shares the app memory (one owner, one app).
    native = await service.create_session(app=APP)
    assert {i.key: i.value for i in await service.list_app_memory(native.app or "")} == {
        "model": "m2"
    }


async def test_app_state_is_isolated_between_owners(service: Service) -> None:
    alice = TetherSessionService(service)
    bob = TetherSessionService(service.for_owner("bob"))
    await alice.create_session(app_name=APP, user_id="u1", state={"app:k": "alice"})
    theirs = await bob.create_session(app_name=APP, user_id="u1")
    assert theirs.state == {}
    assert (await bob.list_sessions(app_name=APP)).sessions == [theirs]


async def test_an_event_and_its_state_delta_commit_together(service: Service) -> None:
    adk = TetherSessionService(service)
    session = await adk.create_session(app_name=APP, user_id="u1", state={"k": 1})
    too_long = "x" * 300  # a key tether refuses: the whole append is refused
    bad = say("hi", actions=EventActions(state_delta={"k": 2, "user:" + too_long: 1}))
    with pytest.raises(UsageError):
        await adk.append_event(session, bad)
    again = await adk.get_session(app_name=APP, user_id="u1", session_id=session.id)
    assert again is not None and again.events == [] and again.state == {"k": 1}


async def test_recent_events_and_after_timestamp(service: Service) -> None:
    adk = TetherSessionService(service)
    session = await adk.create_session(app_name=APP, user_id="u1")
    for second in (5, 1, 3, 4, 2):  # appended out of order: read back by timestamp
        await adk.append_event(session, say(f"t{second}", timestamp=float(second)))

    async def stamps(config: GetSessionConfig) -> list[float]:
        got = await adk.get_session(
            app_name=APP, user_id="u1", session_id=session.id, config=config
        )
        assert got is not None
        return [e.timestamp for e in got.events]

    assert await stamps(GetSessionConfig()) == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert await stamps(GetSessionConfig(after_timestamp=3.0)) == [3.0, 4.0, 5.0]
    assert await stamps(GetSessionConfig(after_timestamp=2.0, num_recent_events=2)) == [4.0, 5.0]
    assert await stamps(GetSessionConfig(num_recent_events=0)) == []


@pytest.mark.slow  # a thousand appends
async def test_a_conversation_longer_than_a_page_reads_whole_and_by_its_tail(
    service: Service,
) -> None:
    adk = TetherSessionService(service)
    session = await adk.create_session(app_name=APP, user_id="u1", state={"k": 1})
    for i in range(1_003):
        await adk.append_event(session, say(f"m{i}", timestamp=float(i)))
    texts = [f"m{i}" for i in range(1_003)]

    async def read(reader: TetherSessionService, config: GetSessionConfig) -> list[str]:
        got = await reader.get_session(
            app_name=APP, user_id="u1", session_id=session.id, config=config
        )
        assert got is not None and got.state == {"k": 1}
        return [str(e.content.parts[0].text) for e in got.events if e.content and e.content.parts]

    fresh = TetherSessionService(service)  # no event built yet: the tail is read again with items
    assert await read(fresh, GetSessionConfig()) == texts
    assert await read(adk, GetSessionConfig(num_recent_events=1_002)) == texts[1:]
    assert await read(adk, GetSessionConfig(num_recent_events=3)) == texts[-3:]
    assert await read(adk, GetSessionConfig(after_timestamp=1.0)) == texts[1:]


async def test_deleted_sessions_take_no_events_and_keys_come_back(service: Service) -> None:
    adk = TetherSessionService(service)
    session = await adk.create_session(app_name=APP, user_id="u1", session_id="s")
    await adk.append_event(session, say("one"))
    await adk.delete_session(app_name=APP, user_id="u1", session_id="s")
    with pytest.raises(SessionNotFoundError):
        await adk.append_event(session, say("two"))
    fresh = await adk.create_session(app_name=APP, user_id="u1", session_id="s")
    await adk.append_event(fresh, say("three"))
    got = await adk.get_session(app_name=APP, user_id="u1", session_id="s")
    assert got is not None and [text_of(e) for e in got.events] == ["three"]


def test_opens_on_a_path_and_on_a_sync_handle(tmp_path: Path) -> None:
    path = tmp_path / "adk.db"

    async def write() -> str:
        adk = TetherSessionService(str(path), owner="carol")
        session = await adk.create_session(app_name=APP, user_id="u1", state={"k": "v"})
        await adk.append_event(session, say("kept"))
        await adk.close()
        return session.id

    sid = asyncio.run(write())
    with tether.open(path, owner="carol", worker=False) as tt:
        native = tt.sessions.get(key=external_key(APP, "u1", sid))
        assert [m.content for m in native.messages.list()] == ["kept"]
        assert dict(native.memory) == {"k": "v"}

        async def read() -> list[str]:
            got = await TetherSessionService(tt).get_session(
                app_name=APP, user_id="u1", session_id=sid
            )
            assert got is not None
            return [text_of(e) for e in got.events]

        assert asyncio.run(read()) == ["kept"]


@pytest.mark.slow
def test_tether_never_imports_adk_and_a_missing_adk_is_named(tmp_path: Path) -> None:
    code = """
        import sys
        import tether
        tether.open("t.db", worker=False).close()
        assert not any(m.startswith("google") for m in sys.modules), "google imported"
        sys.modules["google.adk"] = None
        try:
            import tether.integrations.adk
        except tether.MissingExtra as exc:
            print(exc.extra)
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "adk"


class Scripted(BaseLlm):
    """A model that answers each request with the next of its replies (no network)."""

    replies: list[types.Content]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        yield LlmResponse(content=self.replies.pop(0))


def get_weather(city: str) -> dict[str, str]:
    """Returns the current weather in a city."""
    return {"report": f"It is sunny in {city}."}


async def test_an_adk_runner_keeps_its_conversation_in_tether(service: Service) -> None:
    model = Scripted(
        model="scripted",
        replies=[
            types.Content(
                role="model",
                parts=[types.Part.from_function_call(name="get_weather", args={"city": "Paris"})],
            ),
            types.Content(role="model", parts=[types.Part(text="Sunny in Paris.")]),
        ],
    )
    agent = Agent(name="weather_agent", model=model, tools=[get_weather])
    runner = Runner(agent=agent, app_name=APP, session_service=TetherSessionService(service))
    session = await runner.session_service.create_session(app_name=APP, user_id="u1")
    asked = types.Content(role="user", parts=[types.Part(text="Weather in Paris?")])
    async for _ in runner.run_async(user_id="u1", session_id=session.id, new_message=asked):
        pass
    stored = await service.get_session_by_key(external_key(APP, "u1", session.id))
    messages = (await service.list_messages(stored.id)).data
    assert [(m.role, m.content) for m in messages] == [
        (Role.USER, "Weather in Paris?"),
        (Role.ASSISTANT, ""),
        (Role.TOOL, ""),
        (Role.ASSISTANT, "Sunny in Paris."),
    ]
    again = await runner.session_service.get_session(
        app_name=APP, user_id="u1", session_id=session.id
    )
    assert again is not None
    assert again.events[2].get_function_responses()[0].response == {
        "report": "It is sunny in Paris."
    }


@pytest.mark.parametrize("cached_events", [10_000, 1])
async def test_reads_hand_out_lists_and_state_of_their_own(
    service: Service, cached_events: int
) -> None:
    adk = TetherSessionService(service, cached_events=cached_events)
    session = await adk.create_session(app_name=APP, user_id="u1", state={"k": 1})
    await adk.append_event(session, say("one"))
    await adk.append_event(session, say("two"))
    first = await adk.get_session(app_name=APP, user_id="u1", session_id=session.id)
    assert first is not None
    first.events.append(say("not appended"))  # a caller changing what it read
    first.state["k"] = 2
    second = await adk.get_session(app_name=APP, user_id="u1", session_id=session.id)
    assert second is not None and second.events == session.events
    assert second.state == {"k": 1}


async def test_reads_share_the_events_built_once(service: Service) -> None:
    adk = TetherSessionService(service)
    session = await adk.create_session(app_name=APP, user_id="u1")
    await adk.append_event(session, say("one"))
    first = await adk.get_session(app_name=APP, user_id="u1", session_id=session.id)
    second = await adk.get_session(app_name=APP, user_id="u1", session_id=session.id)
    assert first is not None and second is not None
    assert second.events[0] is first.events[0]  # as ADK's light-copy service shares them
    assert second.events[0] == session.events[0]


async def test_a_session_deleted_and_created_again_elsewhere_reads_anew(service: Service) -> None:
    reader, writer = TetherSessionService(service), TetherSessionService(service)
    session = await writer.create_session(app_name=APP, user_id="u1", session_id="s1")
    await writer.append_event(session, say("old"))
    first = await reader.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert first is not None and [e.content for e in first.events] == [say("old").content]
    await writer.delete_session(app_name=APP, user_id="u1", session_id="s1")
    assert await reader.get_session(app_name=APP, user_id="u1", session_id="s1") is None
    again = await writer.create_session(app_name=APP, user_id="u1", session_id="s1")
    await writer.append_event(again, say("new"))
    await reader.get_session(app_name=APP, user_id="u1", session_id="s1")  # known again
    await writer.delete_session(app_name=APP, user_id="u1", session_id="s1")
    await writer.create_session(app_name=APP, user_id="u1", session_id="s1", state={"k": 1})
    fresh = await reader.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert fresh is not None and fresh.events == [] and fresh.state == {"k": 1}


def test_a_handle_that_is_not_one_is_a_clear_error(tmp_path: Path) -> None:
    pending = tether.open_async(tmp_path / "t.db")  # forgot the await
    try:
        with pytest.raises(UsageError, match="not awaited"):
            TetherSessionService(pending)  # type: ignore[arg-type]
    finally:
        pending.close()
    assert not any(tmp_path.iterdir())  # no file named after the object
