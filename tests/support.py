"""Helpers shared by the test modules: record factories, backends, test settings.

Nothing here replaces a part of tether: factories build real records and write them through the
real store. Waiting on observable state is tests/waiting.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tether.core.clock import ManualClock
from tether.core.ids import new_id
from tether.core.message import Message, Role
from tether.core.run import IfBusy, Run
from tether.core.session import DEFAULT_TTL_SECONDS, Session
from tether.core.status import RunStatus, SessionStatus
from tether.core.usage import Usage
from tether.runtime.settings import RuntimeSettings
from tether.store.base import Store
from tether.store.factory import open_store

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
        context: dict[str, Any] | None = None,
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
                context=context or {},
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

    async def waiting(self, session_id: str, **fields: Any) -> Run:
        """A run of session_id in status waiting (for input)."""
        run = await self.held(session_id, **fields)
        return await self.store.suspend_run(
            run.id,
            worker_id=self.worker_id,
            now=self.clock.now(),
            waiting_for={"kind": "input", "prompt": "continue?"},
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
