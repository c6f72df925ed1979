"""Store.claim_next: a claim that also says whether another run was startable."""

from __future__ import annotations

from tests.support import LEASE_SECONDS, WORKER, Factory
from tether.core.clock import ManualClock
from tether.store.base import Store


async def test_claim_next_says_more_until_the_last_startable_run_is_claimed(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    first = await make.run((await make.session()).id)
    second = await make.run((await make.session()).id)
    claims = []
    look = True
    for _ in range(3):
        claims.append(
            await store.claim_next(
                worker_id=WORKER, now=clock.now(), lease_seconds=LEASE_SECONDS, look=look
            )
        )
        look = not claims[-1][1]
    (one, more), (two, _), (three, none_left) = claims
    assert one is not None and two is not None
    assert [one.id, two.id] == [first.id, second.id]
    assert more  # the second run was startable when the first was claimed
    assert (three, none_left) == (None, False)


async def test_claim_next_without_a_look_finds_nothing_when_nothing_is_startable(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    await make.held(session.id)
    await make.run(session.id)  # queued behind the running one
    found = await store.claim_next(
        worker_id=WORKER, now=clock.now(), lease_seconds=LEASE_SECONDS, look=False
    )
    assert found == (None, False)
