"""Runs their caller executes itself (a framework's runner, runtime.held_run): created or
resumed ``held_by`` a worker id, they are running and leased to it at once, so no worker claims
them, and they end through the holder like any held run."""

from __future__ import annotations

import pytest

from tests.support import LEASE_SECONDS, Factory
from tether.core.errors import InvalidTransition, TooManySteps
from tether.core.event import EventType
from tether.core.run import IfBusy
from tether.core.status import RunStatus
from tether.core.step import StepKind
from tether.store.base import Store

HOLDER = "external-1"


async def test_a_run_created_held_is_running_and_no_worker_claims_it(
    make: Factory, store: Store
) -> None:
    session = await make.session()
    run, created = await store.create_run(
        make.run_record(session.id),
        owner=None,
        if_busy=IfBusy.REJECT,
        now=make.clock.now(),
        held_by=HOLDER,
        lease_seconds=LEASE_SECONDS,
    )
    assert created and run.status is RunStatus.RUNNING and run.started_at == make.clock.now()
    assert await store.claim_run(worker_id="w2", now=make.clock.now(), lease_seconds=1) is None
    types = [e.type for e in await store.list_events(run_id=run.id)]
    assert types == [EventType.RUN_CREATED, EventType.RUN_STARTED]
    done = await store.finish_run(
        run.id, worker_id=HOLDER, status=RunStatus.COMPLETED, now=make.clock.now()
    )
    assert done.status is RunStatus.COMPLETED


async def test_a_waiting_run_resumed_held_goes_on_with_its_holder(
    make: Factory, store: Store
) -> None:
    session = await make.session()
    waiting = await make.waiting(session.id, by_caller=True)
    run = await store.resume_run(
        waiting.id,
        owner=None,
        now=make.clock.now(),
        input="approved",
        held_by=HOLDER,
        lease_seconds=LEASE_SECONDS,
    )
    assert run.status is RunStatus.RUNNING
    assert await store.claim_run(worker_id="w2", now=make.clock.now(), lease_seconds=1) is None
    renewed = await store.renew_lease(
        run.id, worker_id=HOLDER, now=make.clock.now(), lease_seconds=LEASE_SECONDS
    )
    assert renewed is not None


async def test_a_run_resumes_only_as_it_is_executed_held_by_its_caller_or_by_a_worker(
    make: Factory, store: Store
) -> None:
    session = await make.session()
    by_caller = await make.waiting(session.id, by_caller=True)
    now = make.clock.now()
    with pytest.raises(InvalidTransition, match="executed by its caller"):
        await store.resume_run(by_caller.id, owner=None, now=now, input="yes")
    await store.cancel_run(by_caller.id, owner=None, now=now, reason="next")
    by_worker = await make.waiting(session.id)
    with pytest.raises(InvalidTransition, match="executed by a worker"):
        await store.resume_run(
            by_worker.id, owner=None, now=now, input="yes", held_by=HOLDER, lease_seconds=1
        )
    assert (
        await store.resume_run(by_worker.id, owner=None, now=now, input="yes")
    ).worker_id is None


async def test_a_held_runs_timeout_runs_from_when_it_is_held_created_or_resumed(
    make: Factory, store: Store
) -> None:
    """Its lease outlasts its timeout: the timeout ends it (timed_out), not worker_lost."""
    session = await make.session()
    run, _ = await store.create_run(
        make.run_record(session.id, timeout_seconds=60.0),
        owner=None,
        if_busy=IfBusy.REJECT,
        now=make.clock.now(),
        held_by=HOLDER,
        lease_seconds=3600,
    )
    make.clock.advance(59)
    assert await store.reap_runs(now=make.clock.now()) == []
    make.clock.advance(2)
    [ended] = await store.reap_runs(now=make.clock.now())
    assert (ended.id, ended.status) == (run.id, RunStatus.TIMED_OUT)
    other = await make.session()
    waiting = await make.waiting(other.id, by_caller=True, timeout_seconds=60.0)
    resumed = await store.resume_run(
        waiting.id,
        owner=None,
        now=make.clock.now(),
        input="go on",
        held_by=HOLDER,
        lease_seconds=3600,
    )
    make.clock.advance(61)
    [timed_out] = await store.reap_runs(now=make.clock.now())
    assert (timed_out.id, timed_out.status) == (resumed.id, RunStatus.TIMED_OUT)


async def test_a_run_takes_no_step_past_max_steps_and_its_steps_page_by_seq(
    make: Factory, store: Store
) -> None:
    run = await make.held((await make.session()).id)

    async def note(name: str) -> None:
        await store.record_step(
            run_id=run.id,
            worker_id=make.worker_id,
            position=None,
            kind=StepKind.NOTE,
            name=name,
            input=None,
            now=make.clock.now(),
            max_steps=3,
        )

    for n in range(3):
        await note(f"s{n}")
    with pytest.raises(TooManySteps, match="holds 3 steps"):
        await note("s3")
    with pytest.raises(TooManySteps):
        await store.start_step(
            run_id=run.id,
            worker_id=make.worker_id,
            position=None,
            kind=StepKind.NOTE,
            name="s3",
            input=None,
            now=make.clock.now(),
            max_steps=3,
        )
    first = await store.page_steps(run.id, after_seq=0, limit=2)
    rest = await store.page_steps(run.id, after_seq=first[-1].seq, limit=2)
    assert [s.name for s in first] == ["s0", "s1"] and [s.name for s in rest] == ["s2"]
    assert await store.page_steps(run.id, after_seq=rest[-1].seq, limit=2) == []
