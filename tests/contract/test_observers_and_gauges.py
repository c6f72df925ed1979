"""What the store tells in-process observers (each committed event, once committed) and the
gauges it reads for every owner at once (unfinished runs, active sessions), on both backends."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from tests.support import WORKER, Factory
from tether.core.clock import ManualClock
from tether.core.errors import SessionClosed
from tether.core.run import Run
from tether.core.status import RunStatus
from tether.core.step import Step, StepKind
from tether.store.base import Store


class Told:
    """Records what an observer is told."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Mapping[str, Any]]] = []

    def __call__(self, type_: str, data: Mapping[str, Any]) -> None:
        self.events.append((type_, data))

    def types(self) -> list[str]:
        return [t for t, _ in self.events]


async def test_observers_are_told_each_committed_event_with_its_records(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    told = Told()
    store.observe(told)
    session = await make.session()
    run = await make.held(session.id, agent="echo")
    step = await store.record_step(
        run_id=run.id,
        worker_id=WORKER,
        position=1,
        kind=StepKind.NOTE,
        name="n",
        input=None,
        now=clock.now(),
    )
    finished = await store.finish_run(
        run.id, worker_id=WORKER, status=RunStatus.COMPLETED, now=clock.now()
    )
    assert told.types() == [
        "session.created",
        "run.created",
        "run.started",
        "step.completed",
        "run.completed",
    ]
    records = [data.get("run", data.get("step")) for _, data in told.events[1:]]
    assert [type(r) for r in records] == [Run, Run, Step, Run]
    assert records[2] == step and records[3] == finished
    assert finished.status is RunStatus.COMPLETED


async def test_a_refused_write_tells_nothing_and_a_failing_observer_breaks_nothing(
    store: Store, make: Factory
) -> None:
    def broken(type_: str, data: Mapping[str, Any]) -> None:
        raise RuntimeError("observer bug")

    told = Told()
    store.observe(broken)
    store.observe(told)
    session = await make.session()
    await store.close_session(session.id, owner=None, now=make.clock.now())
    with pytest.raises(SessionClosed):
        await make.run(session.id)
    assert told.types() == ["session.created", "session.closed"]
    stored = await store.get_session(session.id)
    assert stored is not None and stored.closed_at is not None


async def test_unfinished_runs_are_counted_by_status_and_agent_for_every_owner(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    assert await store.count_unfinished_runs() == []
    alice, bob, carol = (
        await make.session(),
        await make.session(owner="bob"),
        await make.session(owner="carol"),
    )
    await make.held(alice.id, agent="echo")  # running
    await make.run(alice.id, agent="echo")  # ready, behind it
    await make.waiting(bob.id, agent="coder")
    done = await make.held(carol.id, agent="echo")
    await store.finish_run(done.id, worker_id=WORKER, status=RunStatus.FAILED, now=clock.now())
    counts = sorted(await store.count_unfinished_runs())
    assert counts == [
        (RunStatus.READY, "echo", 1),
        (RunStatus.RUNNING, "echo", 1),
        (RunStatus.WAITING, "coder", 1),
    ]


async def test_active_sessions_are_counted_with_exact_expiry(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    await make.session(ttl_seconds=60)
    await make.session(owner="bob", ttl_seconds=None)
    closed = await make.session(ttl_seconds=None)
    await store.close_session(closed.id, owner=None, now=clock.now())
    assert await store.count_active_sessions(now=clock.now()) == 2
    clock.advance(60)  # past the TTL: expired, though no sweep has persisted it yet
    assert await store.count_active_sessions(now=clock.now()) == 1
