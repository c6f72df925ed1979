"""Every accepted run reaches a terminal state, even if its worker dies: the reaper fails or
retries runs whose lease expired and times out runs past their deadline."""

from __future__ import annotations

from tests.support import LEASE_SECONDS, WORKER, Factory, event_types
from tether.core.clock import ManualClock
from tether.core.status import RunStatus, SessionStatus, StepStatus
from tether.core.step import StepKind
from tether.store.base import Store


async def _open_tool_call(store: Store, clock: ManualClock, run_id: str) -> str:
    step = await store.start_step(
        run_id=run_id,
        worker_id=WORKER,
        position=1,
        kind=StepKind.TOOL_CALL,
        name="write_file",
        input={"arguments": {"path": "a"}},
        now=clock.now(),
    )
    return step.id


async def test_a_lost_worker_fails_its_run(store: Store, make: Factory, clock: ManualClock) -> None:
    session = await make.session()
    run = await make.held(session.id)
    await _open_tool_call(store, clock, run.id)
    clock.advance(LEASE_SECONDS - 1)
    assert await store.reap_runs(now=clock.now()) == []  # the lease still holds
    clock.advance(1)

    (reaped,) = await store.reap_runs(now=clock.now())

    assert reaped.id == run.id
    assert reaped.status is RunStatus.FAILED
    assert reaped.error is not None and reaped.error.type == "worker_lost"
    assert reaped.ended_at == clock.now() and reaped.worker_id is None
    (step,) = await store.list_steps(run.id)
    assert step.status is StepStatus.IN_DOUBT  # its side effect may have happened
    types = await event_types(store, run_id=run.id)
    assert types[-2:] == ["step.in_doubt", "run.failed"]
    stored = await store.get_session(session.id)
    assert stored is not None and stored.status is SessionStatus.ACTIVE


async def test_a_renewed_lease_is_not_reaped(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    run = await make.held(session.id)
    clock.advance(LEASE_SECONDS - 1)
    renewed = await store.renew_lease(
        run.id, worker_id=WORKER, now=clock.now(), lease_seconds=LEASE_SECONDS
    )
    assert renewed is not None
    clock.advance(LEASE_SECONDS - 1)
    assert await store.reap_runs(now=clock.now()) == []
    assert (
        await store.renew_lease(run.id, worker_id="someone else", now=clock.now(), lease_seconds=1)
        is None
    )


async def test_a_run_with_attempts_left_is_retried(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    run = await make.held(session.id, max_attempts=2)
    await _open_tool_call(store, clock, run.id)
    clock.advance(LEASE_SECONDS)

    (requeued,) = await store.reap_runs(now=clock.now())

    assert requeued.status is RunStatus.READY
    assert requeued.attempt == 2
    assert requeued.ended_at is None
    again = await store.claim_run(worker_id="w2", now=clock.now(), lease_seconds=LEASE_SECONDS)
    assert again is not None and again.id == run.id and again.attempt == 2
    # The second attempt is lost too: no attempts left, it fails.
    clock.advance(LEASE_SECONDS)
    (failed,) = await store.reap_runs(now=clock.now())
    assert failed.status is RunStatus.FAILED
    types = await event_types(store, run_id=run.id)
    assert types.count("run.started") == 2
    assert "run.requeued" in types


async def test_deadlines_time_runs_out(store: Store, make: Factory, clock: ManualClock) -> None:
    running_session, waiting_session = await make.session(), await make.session()
    running = await make.held(running_session.id, timeout_seconds=10)
    waiting = await make.waiting(waiting_session.id, wait_timeout_seconds=20)
    clock.advance(10)
    (first,) = await store.reap_runs(now=clock.now())
    assert first.id == running.id and first.status is RunStatus.TIMED_OUT
    assert first.error is not None and first.error.type == "timeout"
    clock.advance(10)
    (second,) = await store.reap_runs(now=clock.now())
    assert second.id == waiting.id and second.status is RunStatus.TIMED_OUT
    assert second.error is not None and second.error.type == "wait_timeout"
    for session in (running_session, waiting_session):
        stored = await store.get_session(session.id)
        assert stored is not None and stored.status is SessionStatus.ACTIVE
