"""Retention on both backends: a session exported and imported into another database comes back
the same (ids kept), old closed and expired sessions are pruned in batches, and erasing an owner
leaves nothing of theirs (and everything of others)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import OWNER, WORKER, Backend, Factory
from tether.core.api_key import ApiKey
from tether.core.clock import ManualClock
from tether.core.errors import AlreadyExists, UsageError
from tether.core.ids import new_id
from tether.core.memory import MemoryScope
from tether.core.status import RunStatus
from tether.core.step import StepKind
from tether.core.usage import Usage
from tether.runtime import retention
from tether.store.base import Store

DAY = 86400.0


async def _full_session(store: Store, make: Factory, clock: ManualClock) -> str:
    """A session with a conversation, memory of both scopes, a finished run with a tool call and
    usage, and a run waiting for a person."""
    session = await make.session(title="everything", project={"workspace": "./calc"})
    await make.message(session.id, "fix the tests")
    run = await make.held(session.id, goal="analyse", agent="coder", input={"n": 1})
    await store.record_step(
        run_id=run.id,
        worker_id=WORKER,
        position=1,
        kind=StepKind.TOOL_CALL,
        name="run_command",
        input={"cmd": "pytest"},
        output={"exit": 1},
        usage=Usage(input_tokens=10, output_tokens=5, requests=1),
        now=clock.now(),
    )
    now = clock.now()
    await store.put_memory(
        scope=MemoryScope.RUN, scope_id=run.id, key="lead", value="requests", owner=None, now=now
    )
    await store.promote_memory(run_id=run.id, key="lead", owner=None, now=now)
    await store.put_memory(
        scope=MemoryScope.SESSION, scope_id=session.id, key="py", value="3.9", owner=None, now=now
    )
    await store.finish_run(
        run.id, worker_id=WORKER, status=RunStatus.COMPLETED, now=now, output={"ok": True}
    )
    await make.waiting(session.id, goal="ask")
    return session.id


async def test_an_exported_session_imports_into_another_database_unchanged(
    store: Store, make: Factory, clock: ManualClock, backend: Backend
) -> None:
    session_id = await _full_session(store, make, clock)
    archive = await store.export_session(session_id, owner=OWNER)
    assert [len(archive[t]) for t in ("runs", "steps", "messages", "memory")] == [2, 1, 1, 3]
    assert await store.export_session(session_id, owner=None) == archive
    other = backend.open(backend.new_url())
    try:
        assert await other.import_session(archive, owner=None) == session_id
        again = await other.export_session(session_id, owner=OWNER)
        assert again == archive
        imported = await other.get_session(session_id)
        original = await store.get_session(session_id)
        assert imported == original
        assert [e.type for e in await other.list_events(session_id=session_id)] == [
            e.type for e in await store.list_events(session_id=session_id)
        ]
        with pytest.raises(AlreadyExists):
            await other.import_session(archive, owner=None)
    finally:
        await other.close()


async def test_an_import_can_change_the_owner(
    store: Store, make: Factory, clock: ManualClock, backend: Backend
) -> None:
    session_id = await _full_session(store, make, clock)
    archive = await store.export_session(session_id, owner=None)
    other = backend.open(backend.new_url())
    try:
        await other.import_session(archive, owner="carol")
        assert await other.get_session(session_id, owner=OWNER) is None
        runs = (await other.list_runs(session_id=session_id)).data
        assert {r.owner for r in runs} == {"carol"}
        assert {e.owner for e in await other.list_events(session_id=session_id)} == {"carol"}
    finally:
        await other.close()


@pytest.mark.parametrize(
    "broken",
    [
        {"format": "something else"},
        {"format": "tether.session", "version": 99},
        {"format": "tether.session", "version": 1, "session": {"id": "x"}},
        [],
    ],
)
async def test_what_is_no_export_is_refused_and_nothing_is_written(
    store: Store, broken: Any
) -> None:
    before = await store.count_rows()
    with pytest.raises(UsageError):
        await store.import_session(broken, owner=None)
    assert await store.count_rows() == before


async def test_old_closed_and_expired_sessions_are_pruned_and_nothing_else(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    old_closed = await make.session(title="old closed")
    await make.run(old_closed.id)
    old_expiring = await make.session(title="old expired", ttl_seconds=int(DAY))
    await store.close_session(old_closed.id, owner=None, now=clock.now())
    clock.advance(100 * DAY)
    recent_closed = await make.session(title="recent closed")
    await store.close_session(recent_closed.id, owner=None, now=clock.now())
    active = await make.session(title="active")
    clock.advance(DAY)

    dry = await retention.prune(
        store, clock, closed_older_than=90 * DAY, expired_older_than=30 * DAY, dry_run=True
    )
    assert (dry.sessions, dry.before, dry.after) == (1, dry.before, dry.before)
    assert dry.before["sessions"] == 4
    # The old expiring session was not swept yet: dry, it is not counted as expired.
    report = await retention.prune(
        store, clock, closed_older_than=90 * DAY, expired_older_than=30 * DAY, batch=1
    )
    assert report.sessions == 2
    assert (report.before["sessions"], report.after["sessions"]) == (4, 2)
    assert (report.before["runs"], report.after["runs"]) == (1, 0)
    for gone in (old_closed, old_expiring):
        assert await store.get_session(gone.id) is None
    for kept in (recent_closed, active):
        assert await store.get_session(kept.id) is not None


async def test_erasing_an_owner_leaves_nothing_of_theirs(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    now = clock.now()
    for owner in ("alice", "bob"):
        session = await make.session(owner=owner)
        await make.message(session.id, f"hello from {owner}")
        await store.put_memory(
            scope=MemoryScope.USER, scope_id=owner, key="k", value=1, owner=owner, now=now
        )
        await store.put_memory(
            scope=MemoryScope.APP, scope_id="shop", key="k", value=1, owner=owner, now=now
        )
        key = ApiKey(id=new_id(), owner=owner, prefix="tk_" + owner, created_at=now)
        await store.create_api_key(key, key_hash=f"hash-{owner}")
    report = await retention.erase_owner(store, "alice")
    assert report.sessions == 1
    assert report.other == {
        "memory": 2,
        "events": 2,
        "schedules": 0,
        "webhook_deliveries": 0,
        "webhook_secrets": 0,
        "ui_sessions": 0,
        "api_keys": 1,
        "assistant_versions": 0,
        "assistants": 0,
    }
    assert await store.owner_session_ids("alice") == []
    assert await store.list_memory(scope=MemoryScope.USER, scope_id="alice") == []
    assert await store.list_memory(scope=MemoryScope.APP, scope_id="shop", owner="alice") == []
    assert await store.list_api_keys(owner="alice") == []
    assert len(await store.owner_session_ids("bob")) == 1
    assert len(await store.list_memory(scope=MemoryScope.APP, scope_id="shop", owner="bob")) == 1
    assert len(await store.list_api_keys(owner="bob")) == 1
