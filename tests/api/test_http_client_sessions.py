"""Sessions read through the client are the library's, record for record: every field, with a
TTL or none, closed, expired, with usage, keys, apps, metadata and project, in the sync and async
clients, listed or one by one; and each is what ``from_data`` makes of the same JSON, times in any
time zone or a session lacking optional fields included."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from uuid import uuid4

import tether
from tests.api.httpkit import Server
from tether import AsyncClient
from tether.client.records import session_from_data, sessions_from_data
from tether.core.clock import ManualClock
from tether.core.serde import from_data, to_data
from tether.core.session import Session
from tether.core.status import SessionStatus
from tether.core.step import StepKind
from tether.core.usage import Usage
from tether.runtime.held_run import HeldRun


def fill(server: Server, mark: str) -> list[str]:
    """Sessions of every shape for alice, each matching the query mark (in its title, metadata
    or key): two days old (one expired since, one without a TTL, one closed then), one changed
    since it was made, fresh ones with keys, apps, project and unicode; their ids."""
    then = ManualClock(datetime.now(UTC) - timedelta(days=2))
    with tether.open(server.db, owner="alice", worker=False, clock=then) as old:
        made = [
            old.sessions.create(title=f"expired {mark}", ttl_seconds=60),
            old.sessions.create(metadata={"mark": mark}, ttl_seconds=None),
            old.sessions.create(external_key=f"{mark}-closed", project={"n": [1, {}]}),
        ]
        then.advance(30.5)
        made[2].close()
        then.advance(0.25)
        made[1].messages.add("user", "later")  # last activity after its creation
        made[1].update(title=f"changed {mark}")
    with tether.open(server.db, owner="alice", worker=False) as now:
        made += [
            now.sessions.create(
                title=f"café 世界 😀 \u2028 {mark}",
                metadata={"k": ["ü", 1.5, 2**70, None, True], "x": {}},
                project={"workspace": "./calc"},
                external_key=f"{mark} ü",
                app="sessionclient",
                ttl_seconds=3600,
            ),
            now.sessions.create(metadata={"mark": mark}),
        ]
        # Stored as expired now: the server's sweep would otherwise do it (changing its
        # updated_at) between two of a test's reads.
        now.sweep_expired()
    return [s.id for s in made]


async def spend(server: Server, session_id: str) -> None:
    """A run of the session that spent tokens (the session's usage), held over HTTP."""
    async with AsyncClient(server.url, api_key=server.keys["alice"]) as client:
        held = await HeldRun.start(client, session_id, "count", agent="framework")
        await held.step(StepKind.MODEL_CALL, "gpt", usage=Usage(5, 2, 1))
        await held.finish(output={"text": "4"})


def test_the_client_reads_the_sessions_the_library_reads(server: Server) -> None:
    mark = uuid4().hex
    ids = fill(server, mark)
    asyncio.run(spend(server, ids[3]))
    with tether.connect(server.url, api_key=server.keys["alice"]) as remote:
        over_http = (remote.sessions.list(query=mark), [remote.sessions.get(i) for i in ids])

    async def read_async() -> tuple[list[Any], list[Any]]:
        async with tether.connect_async(server.url, api_key=server.keys["alice"]) as att:
            listed = await att.sessions.list(query=mark)
            return listed, [await att.sessions.get(i) for i in ids]

    with tether.open(server.db, owner="alice", worker=False) as local:
        library = (local.sessions.list(query=mark), [local.sessions.get(i) for i in ids])
    in_async = asyncio.run(read_async())
    assert over_http == library
    assert [plain(s) for s in in_async[0] + in_async[1]] == [
        plain(s) for s in library[0] + library[1]
    ]
    listed, one_by_one = over_http
    assert sorted(s.id for s in listed) == sorted(ids)
    expired, forever, closed, spent, fresh = one_by_one
    assert expired.status is SessionStatus.EXPIRED and closed.status is SessionStatus.CLOSED
    assert forever.ttl_seconds is None and forever.last_activity_at > forever.created_at
    assert closed.closed_at is not None and closed.project == {"n": [1, {}]}
    assert (spent.usage, spent.run_count, spent.app) == (Usage(5, 2, 1), 1, "sessionclient")
    # as the store's read: a time a session's fields share is one datetime, in UTC
    assert fresh.updated_at is fresh.created_at and fresh.last_activity_at is fresh.created_at
    assert all(s.created_at.tzinfo is UTC for s in listed)


def _records() -> list[Session]:
    """Sessions of every shape, read back by the library."""
    clock = ManualClock(datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC))
    with tether.open(":memory:", worker=False, clock=clock) as tt:
        tt.sessions.create(title="t", metadata={"a": [1, None]}, ttl_seconds=60)
        tt.sessions.create(project={"w": "./x"}, external_key="k", app="a", ttl_seconds=None)
        tt.sessions.create().close()
        clock.advance(120)  # the first has expired
        tt.sessions.create().messages.add("user", "x")
        return [plain(s) for s in tt.sessions.list()]


def plain(session: Session) -> Session:
    """The session of a handle (a handle equals only a handle of its own class)."""
    return Session(*(getattr(session, f.name) for f in dataclasses.fields(Session)))


def test_a_session_is_built_as_from_data_builds_it() -> None:
    records = _records()
    page: list[dict[str, Any]] = to_data(records)
    assert sessions_from_data(page) == [from_data(Session, d) for d in page] == records
    assert {s.status for s in records} == set(SessionStatus)
    for record, data in zip(records, page, strict=True):
        assert session_from_data(data) == from_data(Session, data) == record
        # times in other time zones, or without one (read as UTC): the same instants
        shifted = {
            "created_at": record.created_at.astimezone(tz(5, 30)).isoformat(),
            "updated_at": record.updated_at.astimezone(tz(-8)).isoformat(),
            "last_activity_at": record.last_activity_at.replace(tzinfo=None).isoformat(),
        }
        elsewhere = {**data, **shifted}
        assert session_from_data(elsewhere) == from_data(Session, elsewhere) == record
        assert session_from_data(elsewhere).updated_at.tzinfo is UTC
        # a server older than a field: the field's default, as from_data gives it
        optional = ("ttl_seconds", "metadata", "project", "closed_at", "run_count", "usage")
        older = {k: v for k, v in data.items() if k not in (*optional, "external_key", "app")}
        assert session_from_data(older) == from_data(Session, older)
        former = {k: v for k, v in data.items() if k != "project"}  # only "context"
        assert session_from_data(former) == from_data(Session, former) == record
        partial = {**data, "usage": {"input_tokens": 3}, "closed_at": None, "title": None}
        assert session_from_data(partial) == from_data(Session, partial)


def tz(hours: int, minutes: int = 0) -> timezone:
    return timezone(timedelta(hours=hours, minutes=minutes))
