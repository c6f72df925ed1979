"""The store enforces the run transition table again, in SQL: for every (from, to) pair, the
store operation that would make that change succeeds exactly when the table allows it, writes
its event, and otherwise leaves the run (and the event log) untouched."""

from __future__ import annotations

import itertools

import pytest

from tests.support import LEASE_SECONDS, WORKER, Factory
from tether.core.clock import ManualClock
from tether.core.errors import Conflict, InvalidTransition
from tether.core.run import ErrorInfo, Run
from tether.core.status import RunStatus, can_transition
from tether.store.base import Store

R = RunStatus
WAIT_TIMEOUT = 60.0

#: The event each accepted change writes.
EVENT_OF = {
    R.READY: "run.requeued",
    R.WAITING: "run.waiting",
    R.COMPLETED: "run.completed",
    R.FAILED: "run.failed",
    R.TIMED_OUT: "run.timed_out",
    R.CANCELLED: "run.cancelled",
}


async def reach(make: Factory, store: Store, status: RunStatus) -> Run:
    """A fresh session with one run in status."""
    session = await make.session()
    if status is R.READY:
        return await make.run(session.id, wait_timeout_seconds=WAIT_TIMEOUT)
    if status is R.WAITING:
        return await make.waiting(session.id, wait_timeout_seconds=WAIT_TIMEOUT)
    if status is R.CANCELLED:
        run = await make.run(session.id, wait_timeout_seconds=WAIT_TIMEOUT)
        return await store.cancel_run(run.id, owner=None, now=make.clock.now(), reason="test")
    held = await make.held(session.id, wait_timeout_seconds=WAIT_TIMEOUT)
    if status is R.RUNNING:
        return held
    return await store.finish_run(
        held.id,
        worker_id=WORKER,
        status=status,
        now=make.clock.now(),
        output={"done": True} if status is R.COMPLETED else None,
        error=None if status is R.COMPLETED else ErrorInfo("Test", "ended"),
    )


async def attempt(store: Store, clock: ManualClock, run: Run, target: RunStatus) -> list[object]:
    """Try every store operation that would move run to target; what each returned or raised."""
    now = clock.now()
    outcomes: list[object] = []

    async def call(coro: object) -> None:
        try:
            outcomes.append(await coro)  # type: ignore[misc]
        except Conflict as exc:
            outcomes.append(exc)

    if target is R.READY:
        await call(store.release_run(run.id, worker_id=WORKER, now=now))
    elif target is R.RUNNING:
        if run.status is not R.WAITING:
            await call(store.claim_run(worker_id=WORKER, now=now, lease_seconds=LEASE_SECONDS))
        if run.status is not R.READY:
            await call(store.resume_run(run.id, owner=None, now=now, input="go on"))
    elif target is R.WAITING:
        await call(
            store.suspend_run(run.id, worker_id=WORKER, now=now, waiting_for={"kind": "input"})
        )
    elif target is R.CANCELLED:
        await call(store.cancel_run(run.id, owner=None, now=now, reason="test"))
    elif target is R.TIMED_OUT and run.status is R.WAITING:
        # A waiting run times out only through the reaper, once its wait deadline passed.
        await call(store.reap_runs(now=clock.advance(WAIT_TIMEOUT + 1)))
    else:
        error = None if target is R.COMPLETED else ErrorInfo("Test", "ended")
        await call(store.finish_run(run.id, worker_id=WORKER, status=target, now=now, error=error))
    if target is R.FAILED:
        # A ready run fails when no running worker has its agent (none runs here) for the
        # grace period (none either); the same call leaves runs in other statuses alone.
        await call(store.fail_unroutable_runs(now=now, ready_since=now))
    return outcomes


@pytest.mark.parametrize(
    ("current", "target"),
    [
        pytest.param(c, t, id=f"{c.value}->{t.value}")
        for c, t in itertools.product(RunStatus, repeat=2)
    ],
)
async def test_store_agrees_with_the_transition_table(
    store: Store, make: Factory, clock: ManualClock, current: RunStatus, target: RunStatus
) -> None:
    run = await reach(make, store, current)
    assert run.status is current
    events_before = await store.list_events(run_id=run.id)

    outcomes = await attempt(store, clock, run, target)

    after = await store.get_run(run.id)
    assert after is not None
    new_events = [e.type for e in await store.list_events(run_id=run.id)][len(events_before) :]
    if can_transition(current, target):
        assert after.status is target, outcomes
        if target is R.RUNNING:
            expected = "run.started" if current is R.READY else "run.resumed"
        else:
            expected = EVENT_OF[target]
        assert expected in new_events
        assert (after.ended_at is not None) == after.is_terminal
    else:
        assert after.status is current, f"{current} -> {target} was accepted: {outcomes}"
        assert new_events == []
        for outcome in outcomes:
            # Refused: an error naming the conflict, or "nothing to do" (None / an empty list).
            assert outcome is None or outcome == [] or isinstance(outcome, Conflict), outcome
            if isinstance(outcome, InvalidTransition):
                assert current.value in str(outcome)
                assert target.value in str(outcome)
        assert after.updated_at == run.updated_at


async def test_cancelling_a_finished_run_names_both_states(store: Store, make: Factory) -> None:
    run = await reach(make, store, R.COMPLETED)
    with pytest.raises(InvalidTransition, match="from completed to cancelled"):
        await store.cancel_run(run.id, owner=None, now=make.clock.now(), reason="late")


async def test_finish_refuses_a_non_terminal_target(store: Store, make: Factory) -> None:
    run = await reach(make, store, R.RUNNING)
    for target in (R.READY, R.WAITING, R.RUNNING):
        with pytest.raises(InvalidTransition):
            await store.finish_run(run.id, worker_id=WORKER, status=target, now=make.clock.now())
    assert (await store.get_run(run.id)).status is R.RUNNING  # type: ignore[union-attr]
