"""Cursor pagination of runs, sessions and messages: every item exactly once, in order."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.support import Factory
from tether.core.clock import ManualClock
from tether.core.page import Page
from tether.runtime.service import Service
from tether.store.base import Store


async def _walk(fetch: Callable[[str | None], Awaitable[Page[Any]]], limit: int) -> list[Any]:
    seen: list[Any] = []
    cursor = None
    for _ in range(1000):
        page = await fetch(cursor)
        assert len(page.data) <= limit
        seen.extend(page.data)
        if page.next_cursor is None:
            return seen
        assert len(page.data) == limit
        cursor = page.next_cursor
    raise AssertionError("pagination does not end")


@pytest.mark.parametrize("limit", [1, 3, 50])
@pytest.mark.parametrize("newest_first", [False, True])
async def test_runs(store: Store, make: Factory, limit: int, newest_first: bool) -> None:
    session = await make.session()
    runs = [await make.run(session.id) for _ in range(7)]
    seen = await _walk(
        lambda cursor: store.list_runs(
            session_id=session.id, limit=limit, cursor=cursor, newest_first=newest_first
        ),
        limit,
    )
    expected = [r.id for r in (reversed(runs) if newest_first else runs)]
    assert [r.id for r in seen] == expected


@pytest.mark.parametrize("limit", [1, 4, 50])
async def test_sessions_newest_activity_first(
    store: Store, make: Factory, clock: ManualClock, limit: int
) -> None:
    sessions = []
    for _ in range(9):
        clock.advance(1)
        sessions.append(await make.session())
    clock.advance(1)
    await make.message(sessions[2].id)  # activity moves it to the front
    seen = await _walk(
        lambda cursor: store.list_sessions(
            owner="alice", now=clock.now(), limit=limit, cursor=cursor
        ),
        limit,
    )
    expected = [sessions[2].id] + [s.id for s in reversed(sessions) if s is not sessions[2]]
    assert [s.id for s in seen] == expected


@pytest.mark.parametrize("limit", [1, 7, 100])
async def test_messages_through_the_service(service: Service, limit: int) -> None:
    session = await service.create_session()
    for i in range(15):
        await service.add_message(session.id, "user", f"m{i}")
    seen = await _walk(
        lambda cursor: service.list_messages(session.id, limit=limit, cursor=cursor), limit
    )
    assert [m.content for m in seen] == [f"m{i}" for i in range(15)]
    assert [m.seq for m in seen] == list(range(1, 16))
