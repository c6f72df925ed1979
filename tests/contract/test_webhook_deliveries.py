"""Webhook deliveries on both backends: written with the run, due once it ended, taken by
exactly one of many stores at a time, each attempt recorded as a run.webhook event."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from tests.support import Backend
from tether.core.clock import ManualClock
from tether.core.event import EventType
from tether.runtime.service import Service

#: A public address given as such: no DNS involved.
URL = "http://93.184.216.34/hook"


async def test_a_delivery_is_taken_by_one_store_and_recorded(
    backend: Backend, db_url: str, service: Service, clock: ManualClock
) -> None:
    session = await service.create_session()
    run = await service.create_run(session.id, "go", webhook=URL)
    store = service.store
    assert await store.due_webhook_deliveries(now=clock.now()) == []  # the run has not ended
    await service.cancel_run(run.id)
    (due,) = await store.due_webhook_deliveries(now=clock.now())
    assert (due.run_id, due.session_id, due.url, due.shape) == (run.id, session.id, URL, "native")
    assert due.attempts == 0 and due.state == "pending"

    nodes = [backend.open(db_url) for _ in range(3)]
    try:
        lease = clock.now() + timedelta(minutes=2)
        claims = await asyncio.gather(
            *(
                node.claim_webhook_delivery(due, lease_until=lease, now=clock.now())
                for node in [store, *nodes]
            )
        )
    finally:
        for node in nodes:
            await node.close()
    (claimed,) = [c for c in claims if c is not None]
    assert claimed.attempts == 1 and claimed.next_attempt_at == lease
    assert await store.due_webhook_deliveries(now=clock.now()) == []  # leased

    retry_at = clock.now() + timedelta(seconds=2)
    assert await store.end_webhook_attempt(
        claimed,
        outcome="retrying",
        next_attempt_at=retry_at,
        status_code=500,
        error="answered 500",
        now=clock.now(),
    )
    assert not await store.end_webhook_attempt(  # recorded once
        claimed, outcome="delivered", next_attempt_at=None, status_code=200, error=None,
        now=clock.now(),
    )  # fmt: skip
    clock.advance(2)
    (again,) = await store.due_webhook_deliveries(now=clock.now())
    second = await store.claim_webhook_delivery(again, lease_until=lease, now=clock.now())
    assert second is not None and second.attempts == 2
    assert await store.end_webhook_attempt(
        second, outcome="delivered", next_attempt_at=None, status_code=204, error=None,
        now=clock.now(),
    )  # fmt: skip
    clock.advance(3600)
    assert await store.due_webhook_deliveries(now=clock.now()) == []
    events = await service.list_events(run_id=run.id)
    attempts = [e.data for e in events if e.type == EventType.RUN_WEBHOOK]
    assert [(a["attempt"], a["outcome"], a["status_code"]) for a in attempts] == [
        (1, "retrying", 500),
        (2, "delivered", 204),
    ]


async def test_secrets_are_per_owner_and_kept(service: Service, clock: ManualClock) -> None:
    store = service.store
    first = await store.webhook_secret("alice", candidate="a1", now=clock.now())
    assert first == "a1"
    assert await store.webhook_secret("alice", candidate="a2", now=clock.now()) == "a1"
    assert await store.webhook_secret("bob", candidate="b1", now=clock.now()) == "b1"
    assert await store.rotate_webhook_secret("alice", secret="a3", now=clock.now()) == "a3"
    assert await store.webhook_secret("alice", candidate="a4", now=clock.now()) == "a3"


async def test_deleting_the_session_deletes_its_deliveries(
    service: Service, clock: ManualClock
) -> None:
    session = await service.create_session()
    run = await service.create_run(session.id, "go", webhook=URL)
    await service.cancel_run(run.id)
    assert len(await service.store.due_webhook_deliveries(now=clock.now())) == 1
    await service.delete_session(session.id)
    assert await service.store.due_webhook_deliveries(now=clock.now()) == []
