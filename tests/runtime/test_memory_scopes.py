"""Memory scopes as agents see them, in real runs: a run's working memory is its own, session
memory is shared by the session's runs only, user memory by one owner's sessions only;
promotion is recorded with its source; ended runs' memory is read-only."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from datetime import datetime
from typing import Any

import pytest

from tests.waiting import WAIT
from tether.core.clock import ManualClock
from tether.core.errors import Conflict, NotFound
from tether.core.memory import MemoryScope
from tether.core.run import Run
from tether.core.status import RunStatus
from tether.runtime.agent import AgentRegistry
from tether.runtime.memory_views import AppMemory, RunMemory, SessionMemory, UserMemory
from tether.runtime.run_context import MemoryView, RunContext
from tether.runtime.service import Service
from tether.runtime.tools import tool

pytestmark = pytest.mark.usefixtures("worker")


async def writer(ctx: RunContext) -> dict[str, Any]:
    """Writes its working memory (and session memory if asked), then reports what it saw."""
    seen = _seen(ctx)
    ctx.memory.run["secret"] = f"only for {ctx.run.id}"
    ctx.memory.run["scratch"] = 1
    for key, value in ctx.input.get("session", {}).items():
        ctx.memory.session[key] = value
    for key, value in ctx.input.get("user", {}).items():
        ctx.memory.user[key] = value
    if ctx.input.get("promote"):
        await ctx.memory.promote("secret", as_key="promoted")
    if ctx.input.get("fail"):
        raise RuntimeError("failing after writing memory")
    return seen


async def reader(ctx: RunContext) -> dict[str, Any]:
    return _seen(ctx)


def _seen(ctx: RunContext) -> dict[str, Any]:
    return {
        "run": ctx.memory.run.to_dict(),
        "session": ctx.memory.session.to_dict(),
        "user": ctx.memory.user.to_dict(),
        "context_session_memory": {i["key"]: i["value"] for i in ctx.context["session_memory"]},
        "context_user_memory": {i["key"]: i["value"] for i in ctx.context["user_memory"]},
    }


@tool(needs_approval=True)
def confirm() -> str:
    """Something a person must allow first."""
    return "confirmed"


async def mapper(ctx: RunContext) -> dict[str, Any]:
    """Uses the scopes as mappings, before and after a tool that waits for approval (so also
    on the replay that follows the resume)."""
    before = dict(ctx.memory.session)
    ctx.memory.run["step"] = "before"
    ctx.memory.session.update({"answer": None})
    ctx.memory.session["answer"] = await ctx.tool("confirm")
    session = ctx.memory.session
    return {
        "before": before,
        "session": dict(session),
        "keys": sorted(session.keys()),
        "items": sorted(session.items()),
        "iterated": sorted(session),
        "len": len(session),
        "has_answer": "answer" in session,
        "missing": session.get("missing", "default"),
        "run": dict(ctx.memory.run),
        "user": dict(ctx.memory.user),
        "now_is_a_datetime": isinstance(ctx.now(), datetime),
    }


@pytest.fixture(autouse=True)
def memory_agents(agents: AgentRegistry) -> None:
    agents.register("writer", writer)
    agents.register("reader", reader)
    agents.register("mapper", mapper, tools=[confirm])


async def _run(service: Service, session_id: str, agent: str, **run_input: Any) -> Run:
    run = await service.create_run(session_id, agent, agent=agent, input=run_input)
    done = await service.wait_run(run.id, timeout=WAIT)
    assert done.is_terminal, done
    return done


async def test_a_run_never_sees_another_runs_working_memory(service: Service) -> None:
    session = await service.create_session()
    first = await _run(service, session.id, "writer")
    second = await _run(service, session.id, "writer")
    third = await _run(service, session.id, "reader")
    assert first.status is second.status is third.status is RunStatus.COMPLETED
    # Each run started with empty working memory, although earlier runs wrote theirs.
    assert first.output["run"] == {}
    assert second.output["run"] == {}
    assert third.output["run"] == {}
    # Through the store: each run's items are its own, and kept after it ended.
    for run in (first, second):
        items = await service.list_run_memory(run.id)
        assert {i.key: i.value for i in items} == {"secret": f"only for {run.id}", "scratch": 1}
        assert {i.source_run_id for i in items} == {run.id}
    assert await service.list_run_memory(third.id) == []
    # Working memory never leaks into the session's memory or the next run's context.
    assert await service.list_session_memory(session.id) == []
    assert third.output["context_session_memory"] == {}


async def test_session_memory_is_seen_by_every_run_of_its_session_only(service: Service) -> None:
    session = await service.create_session()
    other = await service.create_session()
    await service.set_session_memory(session.id, "python", "3.9")
    await _run(service, session.id, "writer", session={"style": "minimal changes"})

    later = await _run(service, session.id, "reader")
    elsewhere = await _run(service, other.id, "reader")

    expected = {"python": "3.9", "style": "minimal changes"}
    assert later.output["session"] == expected
    assert later.output["context_session_memory"] == expected
    assert elsewhere.output["session"] == {}
    assert elsewhere.output["context_session_memory"] == {}
    written = await service.get_session_memory(session.id, "style")
    assert written.source_run_id is not None  # written by the first run


async def test_user_memory_crosses_one_owners_sessions_and_no_other_owner(
    service: Service,
) -> None:
    bob = service.for_owner("bob")
    alice_one = await service.create_session()
    alice_two = await service.create_session()
    bobs = await bob.create_session()
    await service.set_user_memory("name", "Alice")
    await _run(service, alice_one.id, "writer", user={"tone": "brief"})

    in_two = await _run(service, alice_two.id, "reader")
    in_bobs = await _run(bob, bobs.id, "reader")

    assert in_two.output["user"] == {"name": "Alice", "tone": "brief"}
    assert in_two.output["context_user_memory"] == {"name": "Alice", "tone": "brief"}
    assert in_bobs.output["user"] == {}
    assert in_bobs.output["context_user_memory"] == {}
    assert {i.key for i in await service.list_user_memory()} == {"name", "tone"}
    assert await bob.list_user_memory() == []
    with pytest.raises(NotFound):
        await bob.get_user_memory("name")
    # Bob cannot reach Alice's sessions, runs or their memory either.
    with pytest.raises(NotFound):
        await bob.list_session_memory(alice_one.id)
    with pytest.raises(NotFound):
        await bob.set_session_memory(alice_one.id, "k", "v")
    with pytest.raises(NotFound):
        await bob.list_run_memory(in_two.id)
    with pytest.raises(NotFound):
        await bob.promote_memory(in_two.id, "secret")


async def test_promotion_from_inside_a_run(service: Service) -> None:
    session = await service.create_session()
    run = await _run(service, session.id, "writer", promote=True)
    assert run.status is RunStatus.COMPLETED, run.error
    item = await service.get_session_memory(session.id, "promoted")
    assert item.value == f"only for {run.id}"
    assert item.source_run_id == run.id
    events = [e for e in await service.list_events(session_id=session.id)]
    promoted = [e for e in events if e.type == "memory.promoted"]
    assert len(promoted) == 1
    assert promoted[0].run_id == run.id
    assert promoted[0].data["source_run_id"] == run.id
    assert promoted[0].data["from_key"] == "secret"
    # The next run sees it, with its source, in memory and in its context.
    nxt = await _run(service, session.id, "reader")
    assert nxt.output["session"] == {"promoted": f"only for {run.id}"}
    assert nxt.context is not None
    (entry,) = nxt.context["session_memory"]
    assert entry["source_run_id"] == run.id


async def test_promotion_after_the_run_ended(service: Service) -> None:
    session = await service.create_session()
    run = await _run(service, session.id, "writer")
    item = await service.promote_memory(run.id, "scratch")
    assert (item.key, item.value, item.source_run_id) == ("scratch", 1, run.id)


async def test_run_memory_is_read_only_after_the_run_ended(
    service: Service, clock: ManualClock
) -> None:
    session = await service.create_session()
    run = await _run(service, session.id, "writer")
    with pytest.raises(Conflict, match="read-only"):
        await service.store.put_memory(
            scope=MemoryScope.RUN,
            scope_id=run.id,
            key="secret",
            value="rewritten",
            owner=service.owner,
            now=clock.now(),
        )
    items = {i.key: i.value for i in await service.list_run_memory(run.id)}
    assert items["secret"] == f"only for {run.id}"


async def test_memory_written_before_an_agent_fails_is_kept(service: Service) -> None:
    """Working memory is kept for audit, including the memory of a run that failed."""
    session = await service.create_session()
    run = await _run(service, session.id, "writer", fail=True, session={"seen": "yes"})
    assert run.status is RunStatus.FAILED
    items = {i.key: i.value for i in await service.list_run_memory(run.id)}
    assert items == {"secret": f"only for {run.id}", "scratch": 1}
    assert (await service.get_session_memory(session.id, "seen")).value == "yes"


async def test_memory_scopes_are_mappings_also_on_replay_after_an_approval(
    service: Service,
) -> None:
    session = await service.create_session()
    await service.set_session_memory(session.id, "python", "3.9")
    await service.set_user_memory("name", "Alice")
    run = await service.create_run(session.id, "map", agent="mapper")
    waiting = await service.wait_run(run.id, timeout=WAIT)
    assert waiting.status is RunStatus.WAITING, waiting.error
    assert waiting.waiting_for is not None and waiting.waiting_for["kind"] == "approval"
    await service.resume_run(run.id, "yes")
    done = await service.wait_run(run.id, timeout=WAIT)
    assert done.status is RunStatus.COMPLETED, done.error
    assert done.output == {
        # The output is the replay's: its snapshot holds what the first pass wrote.
        "before": {"python": "3.9", "answer": None},
        "session": {"python": "3.9", "answer": "confirmed"},
        "keys": ["answer", "python"],
        "items": [["answer", "confirmed"], ["python", "3.9"]],
        "iterated": ["answer", "python"],
        "len": 2,
        "has_answer": True,
        "missing": "default",
        "run": {"step": "before"},
        "user": {"name": "Alice"},
        "now_is_a_datetime": True,
    }

    # The facade's views: writable scopes are MutableMappings, a run's memory is read-only.
    assert issubclass(MemoryView, MutableMapping)
    for writable in (SessionMemory, UserMemory, AppMemory):
        assert issubclass(writable, MutableMapping)
    assert issubclass(RunMemory, Mapping) and not issubclass(RunMemory, MutableMapping)
