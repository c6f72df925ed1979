"""Helpers shared by the test modules: record factories, backends, test settings.

Nothing here replaces a part of tether: factories build real records and write them through the
real store. Waiting on observable state is tests/waiting.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tether.core.clock import ManualClock
from tether.core.ids import new_id
from tether.core.memory import MemoryScope
from tether.core.message import Message, Role
from tether.core.run import IfBusy, Run
from tether.core.session import DEFAULT_TTL_SECONDS, Session
from tether.core.status import RunStatus, SessionStatus
from tether.core.usage import Usage
from tether.runtime.settings import RuntimeSettings
from tether.store.base import Store
from tether.store.factory import open_store
from tether.store.migrate import Migration

#: The worker id the contract tests hold runs with.
WORKER = "worker-1"
OWNER = "alice"
LEASE_SECONDS = 30.0

#: Fast polling so waits end promptly. Leases are renewed on the event loop's clock but expire
#: on the (manual) tether clock: a year-long lease lets a test move the manual clock by days
#: while a run executes without the reaper declaring its worker lost.
TEST_SETTINGS = RuntimeSettings(
    owner=OWNER,
    poll_interval=0.02,
    watch_interval=0.02,
    reap_interval=0.05,
    sweep_interval=3600.0,
    lease_seconds=365 * 24 * 3600.0,
    shutdown_grace=2.0,
)


@dataclass
class Backend:
    """A kind of database the store tests run against."""

    name: str
    #: The URL of a fresh, empty database (each call gives a new one).
    new_url: Callable[[], str]
    #: The URL of a fresh database for throwaway use, as fast as the backend allows (SQLite: in
    #: memory). For tests that open hundreds of databases and need no durability.
    scratch_url: Callable[[], str]

    def open(self, url: str) -> Store:
        """A migrated store on url."""
        return open_store(url)


@dataclass
class Factory:
    """Builds sessions, runs and messages through the real store (the contract tests' level)."""

    store: Store
    clock: ManualClock
    owner: str = OWNER
    worker_id: str = WORKER
    created_runs: list[str] = field(default_factory=list)

    async def session(
        self,
        *,
        owner: str | None = None,
        ttl_seconds: int | None = DEFAULT_TTL_SECONDS,
        title: str | None = "a session",
        project: dict[str, Any] | None = None,
    ) -> Session:
        now = self.clock.now()
        return await self.store.create_session(
            Session(
                id=new_id(),
                owner=owner or self.owner,
                title=title,
                status=SessionStatus.ACTIVE,
                created_at=now,
                updated_at=now,
                last_activity_at=now,
                ttl_seconds=ttl_seconds,
                project=project or {},
            )
        )

    def run_record(self, session_id: str, *, goal: str = "do it", **fields: Any) -> Run:
        now = self.clock.now()
        values: dict[str, Any] = {
            "id": new_id(),
            "session_id": session_id,
            "owner": self.owner,
            "seq": 0,
            "agent": "echo",
            "goal": goal,
            "status": RunStatus.READY,
            "created_at": now,
            "updated_at": now,
        }
        values.update(fields)
        return Run(**values)

    async def run(
        self,
        session_id: str,
        *,
        if_busy: IfBusy = IfBusy.ENQUEUE,
        owner: str | None = None,
        **fields: Any,
    ) -> Run:
        run, created = await self.store.create_run(
            self.run_record(session_id, **fields),
            owner=owner,
            if_busy=if_busy,
            now=self.clock.now(),
        )
        assert created
        self.created_runs.append(run.id)
        return run

    async def claim(self, expected: Run | None = None) -> Run:
        """Claim the next startable run with WORKER (asserting which one, if given)."""
        claimed = await self.store.claim_run(
            worker_id=self.worker_id, now=self.clock.now(), lease_seconds=LEASE_SECONDS
        )
        assert claimed is not None, "no run was startable"
        if expected is not None:
            assert claimed.id == expected.id
        return claimed

    async def held(self, session_id: str, **fields: Any) -> Run:
        """A run of session_id in status running, held by WORKER."""
        run = await self.run(session_id, **fields)
        return await self.claim(run)

    async def waiting(self, session_id: str, *, by_caller: bool = False, **fields: Any) -> Run:
        """A run of session_id in status waiting (for input); by_caller: a run its caller
        executes (resumed held only)."""
        run = await self.held(session_id, **fields)
        waiting_for: dict[str, Any] = {"kind": "input", "prompt": "continue?"}
        return await self.store.suspend_run(
            run.id,
            worker_id=self.worker_id,
            now=self.clock.now(),
            waiting_for={**waiting_for, "held": True} if by_caller else waiting_for,
        )

    async def message(
        self, session_id: str, content: str = "hello", *, role: Role = Role.USER, **metadata: Any
    ) -> Message:
        return await self.store.add_message(
            session_id=session_id,
            owner=None,
            role=role,
            content=content,
            now=self.clock.now(),
            metadata=metadata or None,
        )


async def event_types(
    store: Store, *, session_id: str | None = None, run_id: str | None = None, after_id: int = 0
) -> list[str]:
    events = await store.list_events(session_id=session_id, run_id=run_id, after_id=after_id)
    return [e.type for e in events]


async def last_event_id(store: Store, session_id: str) -> int:
    events = await store.list_events(session_id=session_id, limit=100_000)
    return events[-1].id if events else 0


#: Rows as schema 3 left them (for the version 4 migration tests, on either backend): sessions s1
#: and s2 each had two runs (100 + 40 tokens), and one of s1's was deleted, which left s1's run
#: count and usage as they were.
SCHEMA_3_DELETED_RUN = tuple(
    [
        "INSERT INTO sessions (id, owner, status, created_at, updated_at, last_activity_at,"
        f" run_count, input_tokens, output_tokens, model_requests)"
        f" VALUES ('{sid}', 'local', 'active', 0, 0, 0, 2, 140, 14, 2)"
        for sid in ("s1", "s2")
    ]
    + [
        "INSERT INTO runs (id, session_id, owner, seq, agent, goal, status, created_at,"
        " updated_at, input_tokens, output_tokens, model_requests)"
        f" VALUES ('{rid}', '{sid}', 'local', {seq}, 'echo', 'g', 'completed', 0, 0,"
        f" {tokens}, {tokens // 10}, 1)"
        for rid, sid, seq, tokens in (
            ("r1", "s1", 2, 40),
            ("r2", "s2", 1, 100),
            ("r3", "s2", 2, 40),
        )
    ]
)


async def check_recounted(store: Store) -> None:
    """After migrating SCHEMA_3_DELETED_RUN: s1 counts its one run, s2 is unchanged."""
    one, two = await store.get_session("s1"), await store.get_session("s2")
    assert one is not None and (one.run_count, one.usage) == (1, Usage(40, 4, 1))
    assert two is not None and (two.run_count, two.usage) == (2, Usage(140, 14, 2))


#: Rows the first schema held: a session with a message, a run, a memory item and events.
SCHEMA_1_ROWS = (
    "INSERT INTO sessions (id, owner, title, status, created_at, updated_at, last_activity_at,"
    " run_count, message_count) VALUES ('s1', 'local', 'from the old days', 'active', 0, 0, 0,"
    " 1, 1)",
    "INSERT INTO messages (id, session_id, seq, role, content, created_at)"
    " VALUES ('m1', 's1', 1, 'user', 'still here?', 0)",
    "INSERT INTO runs (id, session_id, owner, seq, agent, goal, status, created_at, updated_at,"
    " started_at, worker_id, lease_expires_at)"
    " VALUES ('r1', 's1', 'local', 1, 'echo', 'an old goal', 'running', 0, 0, 0, 'w', 1)",
    "INSERT INTO memory (scope, scope_id, key, value, session_id, created_at, updated_at)"
    " VALUES ('session', 's1', 'python', '\"3.9\"', 's1', 0, 0)",
    "INSERT INTO events (type, owner, session_id, data, created_at)"
    " VALUES ('session.created', 'local', 's1', '{}', 0)",
    "INSERT INTO events (type, owner, session_id, data, created_at)"
    " VALUES ('message.added', 'local', 's1', '{}', 0)",
)

#: Rows written before the conversation-core migration that it must keep: memory of every
#: scope (the SQLite migration rebuilds that table) and a conversation.
ROWS_BEFORE_CONVERSATION_CORE = (
    "INSERT INTO sessions (id, owner, status, created_at, updated_at, last_activity_at,"
    " message_count) VALUES ('s1', 'local', 'active', 0, 0, 0, 2)",
    "INSERT INTO messages (id, session_id, seq, role, content, created_at)"
    " VALUES ('m1', 's1', 1, 'user', 'one', 0)",
    "INSERT INTO messages (id, session_id, seq, role, content, created_at)"
    " VALUES ('m2', 's1', 2, 'assistant', 'two', 0)",
    "INSERT INTO memory (scope, scope_id, key, value, session_id, created_at, updated_at)"
    " VALUES ('session', 's1', 'python', '\"3.9\"', 's1', 0, 1)",
    "INSERT INTO memory (scope, scope_id, namespace, key, value, created_at, updated_at)"
    " VALUES ('user', 'local', 'prefs', 'tone', '\"brief\"', 0, 2)",
)


def before_conversation_core(migrations: list[Migration]) -> list[Migration]:
    """The migrations before the conversation core's (found by name: numbers may move)."""
    names = [m.name for m in migrations]
    return migrations[: names.index("conversation_core")]


async def check_conversation_core(store: Store) -> None:
    """After migrating ROWS_BEFORE_CONVERSATION_CORE: the rows read as before, sessions have no
    key nor app, messages carry no item and none is removed, and the app scope takes items."""
    session = await store.get_session("s1")
    assert session is not None and (session.external_key, session.app) == (None, None)
    messages = await store.list_messages("s1")
    assert [(m.content, m.item, m.removed_at) for m in messages] == [
        ("one", None, None),
        ("two", None, None),
    ]
    kept = await store.get_memory(scope=MemoryScope.SESSION, scope_id="s1", key="python")
    assert kept is not None and kept.value == "3.9"
    user = await store.get_memory(
        scope=MemoryScope.USER, scope_id="local", key="tone", namespace=("prefs",)
    )
    assert user is not None and user.value == "brief"
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    await store.put_memory(
        scope=MemoryScope.APP, scope_id="shop", key="k", value=1, owner="local", now=moment
    )
    items = await store.list_memory(scope=MemoryScope.APP, scope_id="shop", owner="local")
    assert [(i.scope_id, i.key, i.value) for i in items] == [("shop", "k", 1)]
    popped = await store.pop_message("s1", owner="local", now=moment)
    assert popped is not None and popped.content == "two"
