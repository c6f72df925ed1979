"""The seed rules through the service, with runs really executing: outcomes never touch the
session, closing and expiry cancel what is unfinished (stopping the agent), one active run per
session with if_busy, exact expiry on read, the sweep, read-only yet readable sessions."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.waiting import WAIT, eventually
from tether.core.clock import ManualClock
from tether.core.errors import Conflict, SessionBusy, SessionClosed, SessionExpired
from tether.core.run import IfBusy, Run
from tether.core.status import RunStatus, SessionStatus, StepStatus
from tether.runtime.service import Service
from tether.runtime.worker import Worker

pytestmark = pytest.mark.usefixtures("worker")

ACTIVE, CLOSED, EXPIRED = SessionStatus.ACTIVE, SessionStatus.CLOSED, SessionStatus.EXPIRED
SLEEPY = {"text": "zzz", "sleep": 30}


async def _started(service: Service, run: Run) -> Run:
    """Wait until the run's agent is executing (its sleep step has opened)."""

    async def sleeping() -> bool:
        return any(s.name == "sleep" for s in await service.list_steps(run.id))

    await eventually(sleeping, what=f"run {run.seq} starts sleeping")
    return await service.get_run(run.id)


OUTCOMES: dict[str, dict[str, Any]] = {
    "completed": {"input": {"text": "ok"}},
    "failed": {"input": {"fail": True}},
    "timed_out": {"input": SLEEPY, "timeout_seconds": 0.1},
    "cancelled": {"input": SLEEPY},
}


@pytest.mark.parametrize("outcome", list(OUTCOMES))
async def test_no_run_outcome_changes_the_session(service: Service, outcome: str) -> None:
    session = await service.create_session(ttl_seconds=3600)
    run = await service.create_run(session.id, "go", agent="echo", **OUTCOMES[outcome])
    if outcome == "cancelled":
        await _started(service, run)
        await service.cancel_run(run.id)
    done = await service.wait_run(run.id, timeout=WAIT)
    assert done.status.value == outcome

    after = await service.get_session(session.id)
    assert after.status is ACTIVE
    assert after.closed_at is None
    types: list[str] = [e.type for e in await service.list_events(session_id=session.id)]
    assert [t for t in types if t.startswith("session.")] == ["session.created"]
    # The session goes on: a message and a new run are accepted right away.
    await service.add_message(session.id, "user", "next?")
    nxt = await service.create_run(session.id, "next", agent="echo", if_busy="reject")
    assert (await service.wait_run(nxt.id, timeout=WAIT)).status is RunStatus.COMPLETED


async def test_closing_stops_an_executing_run(service: Service, worker: Worker) -> None:
    session = await service.create_session()
    run = await _started(service, await service.create_run(session.id, "nap", input=SLEEPY))
    assert run.status is RunStatus.RUNNING
    assert (run.worker_id or "").startswith(worker.worker_id + "/")

    closed = await service.close_session(session.id)

    assert closed.status is CLOSED
    cancelled = await service.get_run(run.id)
    assert cancelled.status is RunStatus.CANCELLED
    assert cancelled.error is not None and cancelled.error.message == "session closed"
    await eventually(lambda: worker.active_runs == 0, what="the agent is stopped")
    (step,) = await service.list_steps(run.id)
    assert step.status is StepStatus.FAILED
    assert (await service.get_run(run.id)).status is RunStatus.CANCELLED  # not overwritten


async def test_closing_cancels_waiting_and_queued_runs(service: Service) -> None:
    session = await service.create_session()
    waiting = await service.create_run(session.id, "ask", input={"wait": "ok?"})
    assert (await service.wait_run(waiting.id, timeout=WAIT)).status is RunStatus.WAITING
    queued = await service.create_run(session.id, "later", if_busy="enqueue")
    assert (await service.get_run(queued.id)).status is RunStatus.READY

    await service.close_session(session.id)

    for run_id in (waiting.id, queued.id):
        run = await service.get_run(run_id)
        assert run.status is RunStatus.CANCELLED
        events = [e.type for e in await service.list_events(run_id=run_id)]
        assert events[-1] == "run.cancelled"
    types: list[str] = [e.type for e in await service.list_events(session_id=session.id)]
    assert types[-1] == "session.closed"
    with pytest.raises(SessionClosed):
        await service.add_message(session.id, "user", "hello?")


async def test_close_is_idempotent_and_the_session_stays_readable(service: Service) -> None:
    session = await service.create_session()
    await service.add_message(session.id, "user", "hello")
    run = await service.create_run(session.id, "go", input={"text": "x"})
    await service.wait_run(run.id, timeout=WAIT)
    await service.set_session_memory(session.id, "k", "v")
    first = await service.close_session(session.id)
    events = await service.list_events(session_id=session.id)
    second = await service.close_session(session.id)
    assert second == first
    assert await service.list_events(session_id=session.id) == events
    await _assert_read_only_and_readable(service, session.id, SessionClosed, run.id)


async def _assert_read_only_and_readable(
    service: Service, session_id: str, error: type[Conflict], run_id: str
) -> None:
    for write in (
        lambda: service.add_message(session_id, "user", "hi"),
        lambda: service.create_run(session_id, "go", if_busy="enqueue"),
        lambda: service.set_session_memory(session_id, "k2", "v"),
        lambda: service.delete_session_memory(session_id, "k"),
        lambda: service.update_session(session_id, title="renamed"),
    ):
        with pytest.raises(error) as caught:
            await write()
        assert session_id in str(caught.value)
    session = await service.get_session(session_id)
    assert session.status is (CLOSED if error is SessionClosed else EXPIRED)
    assert (await service.list_messages(session_id)).data[0].content == "hello"
    assert (await service.list_runs(session_id)).data[0].id == run_id
    assert [i.key for i in await service.list_session_memory(session_id)] == ["k"]
    assert (await service.get_session_memory(session_id, "k")).value == "v"
    assert len(await service.list_events(session_id=session_id)) >= 5
    assert len(await service.list_steps(run_id)) == 1
    context = await service.get_context(session_id)
    assert context["messages"][0] == {"role": "user", "content": "hello"}
    listed = (await service.list_sessions(status=session.status)).data
    assert session_id in [s.id for s in listed]


# -- one active run per session ---------------------------------------------------------------


async def test_a_busy_session_rejects_queues_or_interrupts(service: Service) -> None:
    session = await service.create_session()
    first = await _started(service, await service.create_run(session.id, "one", input=SLEEPY))

    with pytest.raises(SessionBusy) as caught:
        await service.create_run(session.id, "two", input={"text": "2"})
    assert caught.value.active_run_id == first.id
    assert first.id in str(caught.value)

    queued = await service.create_run(session.id, "two", input={"text": "2"}, if_busy="enqueue")
    assert queued.status is RunStatus.READY
    assert (await service.get_run(queued.id)).status is RunStatus.READY  # still waiting its turn

    newcomer = await service.create_run(
        session.id, "three", input={"text": "3"}, if_busy=IfBusy.INTERRUPT
    )
    done = await service.wait_run(newcomer.id, timeout=WAIT)
    assert done.status is RunStatus.COMPLETED
    for run_id in (first.id, queued.id):
        interrupted = await service.get_run(run_id)
        assert interrupted.status is RunStatus.CANCELLED
        assert interrupted.error is not None and newcomer.id in interrupted.error.message
    assert (await service.get_session(session.id)).status is ACTIVE


async def test_enqueued_runs_execute_one_at_a_time_in_order(service: Service) -> None:
    session = await service.create_session()
    runs = [
        await service.create_run(
            session.id, f"run {i}", input={"text": str(i), "sleep": 0.02}, if_busy="enqueue"
        )
        for i in range(4)
    ]
    done = [await service.wait_run(r.id, timeout=WAIT) for r in runs]
    assert [r.status for r in done] == [RunStatus.COMPLETED] * 4
    assert [r.seq for r in done] == [1, 2, 3, 4]
    # Never two at once: each run started only after the previous one completed (event order).
    events = await service.list_events(session_id=session.id)
    position: dict[tuple[str, str | None], int] = {(e.type, e.run_id): e.id for e in events}
    for earlier, later in itertools.pairwise(done):
        assert position["run.completed", earlier.id] < position["run.started", later.id]
    messages = (await service.list_messages(session.id)).data
    assert [m.content for m in messages] == [f"echo: {i}" for i in range(4)]


# -- expiry ---------------------------------------------------------------------------------


async def test_expiry_is_exact_on_read_and_lists_agree(
    service: Service, clock: ManualClock
) -> None:
    short = await service.create_session(ttl_seconds=60)
    forever = await service.create_session(ttl_seconds=None)
    clock.advance(59)
    assert (await service.get_session(short.id)).status is ACTIVE
    clock.advance(1)
    assert (await service.get_session(short.id)).status is EXPIRED
    assert (await service.get_session(forever.id)).status is ACTIVE
    expired = (await service.list_sessions(status="expired")).data
    active = (await service.list_sessions(status="active")).data
    assert [s.id for s in expired] == [short.id]
    assert [s.id for s in active] == [forever.id]
    everything = (await service.list_sessions()).data
    assert {s.id: s.status for s in everything} == {short.id: EXPIRED, forever.id: ACTIVE}
    clock.advance(10 * 365 * 24 * 3600)
    assert (await service.get_session(forever.id)).status is ACTIVE


async def test_sweep_persists_expiry_and_stops_unfinished_runs(
    service: Service, clock: ManualClock, worker: Worker
) -> None:
    session = await service.create_session(ttl_seconds=60)
    await service.add_message(session.id, "user", "hello")
    done = await service.create_run(session.id, "first", input={"text": "x"})
    await service.wait_run(done.id, timeout=WAIT)
    await service.set_session_memory(session.id, "k", "v")
    running = await _started(
        service, await service.create_run(session.id, "nap", input=SLEEPY, if_busy="enqueue")
    )
    bob = service.for_owner("bob")
    bobs = await bob.create_session(ttl_seconds=60)
    clock.advance(61)

    swept = await service.sweep_expired()

    assert {s.id for s in swept} == {session.id, bobs.id}  # every owner's
    stored = await service.store.get_session(session.id)
    assert stored is not None and stored.status is EXPIRED
    cancelled = await service.get_run(running.id)
    assert cancelled.status is RunStatus.CANCELLED
    assert cancelled.error is not None and "expired" in cancelled.error.message
    await eventually(lambda: worker.active_runs == 0, what="the agent is stopped")
    types: list[str] = [e.type for e in await service.list_events(session_id=session.id)]
    assert types[-2:] == ["run.cancelled", "session.expired"]
    assert await service.sweep_expired() == []
    await _assert_read_only_and_readable(service, session.id, SessionExpired, done.id)


@pytest.mark.parametrize("activity", ["message", "run", "memory", "run event"])
async def test_activity_pushes_expiry_back(
    service: Service, clock: ManualClock, activity: str
) -> None:
    session = await service.create_session(ttl_seconds=60)
    waiting = None
    if activity == "run event":
        waiting = await service.create_run(session.id, "ask", input={"wait": "ok?"})
        assert (await service.wait_run(waiting.id, timeout=WAIT)).status is RunStatus.WAITING
    clock.advance(50)
    if activity == "message":
        await service.add_message(session.id, "user", "still here")
    elif activity == "run":
        run = await service.create_run(session.id, "go", input={"text": "x"})
        await service.wait_run(run.id, timeout=WAIT)
    elif activity == "memory":
        await service.set_session_memory(session.id, "k", "v")
    else:
        assert waiting is not None
        await service.cancel_run(waiting.id)
    clock.advance(50)  # 100 s after creation, 50 s after the activity
    assert (await service.get_session(session.id)).status is ACTIVE
    assert await service.sweep_expired() == []
    clock.advance(10)
    assert (await service.get_session(session.id)).status is EXPIRED


async def test_an_expired_session_cannot_be_revived_by_its_run(
    service: Service, clock: ManualClock
) -> None:
    session = await service.create_session(ttl_seconds=60)
    waiting = await service.create_run(session.id, "ask", input={"wait": "ok?"})
    assert (await service.wait_run(waiting.id, timeout=WAIT)).status is RunStatus.WAITING
    clock.advance(60)
    with pytest.raises(SessionExpired):
        await service.resume_run(waiting.id, "yes")
    await service.cancel_run(waiting.id)
    assert (await service.get_session(session.id)).status is EXPIRED
    with pytest.raises(SessionExpired):
        await service.add_message(session.id, "user", "hello?")
