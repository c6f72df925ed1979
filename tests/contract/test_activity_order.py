"""Sessions list by their exact last activity, newest first, however many moved within one
second (the SQLite store keys its activity index by the second), and the sweep expires a
session at the exact microsecond its TTL passes, in the middle of a second."""

from __future__ import annotations

from tests.support import OWNER, Factory
from tether.core.clock import ManualClock
from tether.core.status import SessionStatus
from tether.store.base import Store


async def _listed(store: Store, clock: ManualClock, status: SessionStatus | None) -> list[str]:
    """Every page of the owner's sessions, two at a time (cursors inside one second)."""
    listed: list[str] = []
    cursor: str | None = None
    while True:
        page = await store.list_sessions(
            owner=OWNER, now=clock.now(), status=status, limit=2, cursor=cursor
        )
        listed += [s.id for s in page.data]
        if page.next_cursor is None:
            return listed
        cursor = page.next_cursor


async def test_sessions_active_within_one_second_list_by_their_exact_time(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    clock.advance(0.2)
    older = await make.session()
    clock.advance(0.3)
    within = sorted([(await make.session()).id for _ in range(5)])
    # Touched in the reverse order of their ids, a microsecond apart, all in one second: the
    # newest activity has the smallest id, so a tie broken by id would list them reversed.
    for session_id in reversed(within):
        clock.advance(0.000001)
        await make.message(session_id)
    clock.advance(0.6)  # the next second
    newer = await make.session()

    expected = [newer.id, *within, older.id]
    assert await _listed(store, clock, None) == expected
    assert await _listed(store, clock, SessionStatus.ACTIVE) == expected


async def test_the_sweep_expires_a_session_at_its_exact_microsecond(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    clock.advance(0.75)
    session = await make.session(ttl_seconds=60)
    clock.advance(59.999999)  # a microsecond before its expiry, in the second it falls in
    assert await store.expire_sessions(now=clock.now()) == []
    clock.advance(0.000001)
    swept = await store.expire_sessions(now=clock.now())
    assert [s.id for s in swept] == [session.id]
    assert swept[0].status is SessionStatus.EXPIRED
