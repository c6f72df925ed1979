"""Cancellation (ready, running, waiting; in this process and across processes) and timeouts."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.engine.engine_helpers import Engine, WorkerProcess, wait_status, wait_step
from tests.waiting import eventually
from tether.core.errors import InvalidTransition
from tether.core.status import RUN_TERMINAL, RunStatus, SessionStatus, StepStatus
from tether.runtime.service import Service

TERMINAL = tuple(RUN_TERMINAL)
#: The issue's bound on cancellation latency.
CANCEL_LATENCY = 1.0


def _observed_at(path: Path) -> float | None:
    try:
        return float(path.read_text())
    except (FileNotFoundError, ValueError):
        return None


async def _cancel_running_and_measure(svc: Service, run_id: str, observed: Path) -> float:
    """Cancel a run blocked in its step; seconds until its agent saw CancelledError."""
    await wait_step(svc, run_id, "blocked")
    started = time.time()
    cancelled = await svc.cancel_run(run_id, reason="the user changed their mind")
    assert cancelled.status is RunStatus.CANCELLED
    seen = await eventually(lambda: _observed_at(observed), what="the agent to see the cancel")
    return seen - started


async def _assert_cancelled_keeping_work(svc: Service, run_id: str) -> None:
    run = await svc.get_run(run_id)
    assert run.status is RunStatus.CANCELLED
    assert run.error is not None and run.error.type == "cancelled"
    assert run.error.message == "the user changed their mind"
    assert run.output == {"partial": "half of the answer"}, "partial output is kept"
    assert run.ended_at is not None and run.worker_id is None
    steps = await svc.list_steps(run_id)
    assert [(s.name, s.status) for s in steps] == [
        ("started", StepStatus.COMPLETED),
        ("blocked", StepStatus.FAILED),
    ]
    assert steps[1].error is not None and steps[1].error.type == "cancelled"
    session = await svc.get_session(run.session_id)
    assert session.status is SessionStatus.ACTIVE


@pytest.mark.parametrize("connection", ["shared", "own"])
async def test_cancel_a_running_run_reaches_the_agent_within_a_second(
    db_path: Path, tmp_path: Path, connection: str
) -> None:
    """The worker shares the canceller's store (woken at once) or has its own connection
    (its keeper notices on its next watch)."""
    async with Engine(db_path) as eng:
        svc = eng.service
        eng.worker(own_store=connection == "own")
        session = await svc.create_session(title="cancel")
        observed = tmp_path / "observed"
        run = await svc.create_run(
            session.id,
            "something long",
            agent="engine_cancellable",
            input={"gate": str(tmp_path / "never"), "observed": str(observed)},
        )
        latency = await _cancel_running_and_measure(svc, run.id, observed)
        assert 0 <= latency < CANCEL_LATENCY
        await _assert_cancelled_keeping_work(svc, run.id)
        # The worker's slot is free again: the next run of the session executes.
        nxt = await svc.create_run(session.id, "next", agent="echo")
        assert (await wait_status(svc, nxt.id, *TERMINAL)).status is RunStatus.COMPLETED


@pytest.mark.slow
async def test_cancel_reaches_an_agent_in_another_process_within_a_second(
    db_path: Path, tmp_path: Path, worker_process: Callable[..., WorkerProcess]
) -> None:
    async with Engine(db_path) as eng:
        svc = eng.service
        proc = worker_process()
        session = await svc.create_session(title="cancel across processes")
        observed = tmp_path / "observed"
        run = await svc.create_run(
            session.id,
            "something long",
            agent="engine_cancellable",
            input={"gate": str(tmp_path / "never"), "observed": str(observed)},
        )
        await wait_step(svc, run.id, "blocked")
        assert proc.holds(await svc.get_run(run.id))
        latency = await _cancel_running_and_measure(svc, run.id, observed)
        assert 0 <= latency < CANCEL_LATENCY
        await _assert_cancelled_keeping_work(svc, run.id)
        nxt = await svc.create_run(session.id, "next", agent="echo")
        done = await wait_status(svc, nxt.id, *TERMINAL)
        assert done.status is RunStatus.COMPLETED and proc.proc.poll() is None


async def test_cancel_a_ready_run_it_never_starts(db_path: Path) -> None:
    async with Engine(db_path) as eng:
        svc = eng.service
        session = await svc.create_session(title="cancel ready")
        run = await svc.create_run(session.id, "not yet", agent="echo")
        cancelled = await svc.cancel_run(run.id)
        assert cancelled.status is RunStatus.CANCELLED
        assert cancelled.started_at is None and cancelled.ended_at is not None
        assert cancelled.error is not None and cancelled.error.type == "cancelled"
        eng.worker()
        nxt = await svc.create_run(session.id, "next", agent="echo")
        assert (await wait_status(svc, nxt.id, *TERMINAL)).status is RunStatus.COMPLETED
        again = await svc.get_run(run.id)
        assert again.status is RunStatus.CANCELLED and again.started_at is None
        assert await svc.list_steps(run.id) == []
        types = [e.type for e in await svc.list_events(run_id=run.id)]
        assert types == ["run.created", "run.cancelled"]


async def test_cancel_a_waiting_run_keeps_its_steps(db_path: Path, tmp_path: Path) -> None:
    async with Engine(db_path) as eng:
        svc = eng.service
        eng.worker()
        session = await svc.create_session(title="cancel waiting")
        run = await svc.create_run(
            session.id, "ask", agent="engine_asks", input={"log": str(tmp_path / "log")}
        )
        waiting = await wait_status(svc, run.id, RunStatus.WAITING)
        before = await svc.list_steps(run.id)
        cancelled = await svc.cancel_run(waiting.id)
        assert cancelled.status is RunStatus.CANCELLED and cancelled.waiting_for is None
        steps = await svc.list_steps(run.id)
        assert [s.id for s in steps] == [s.id for s in before]
        assert [s.status for s in steps] == [
            StepStatus.COMPLETED,
            StepStatus.COMPLETED,
            StepStatus.FAILED,
        ]
        assert steps[-1].name == "wait_for_input"
        assert steps[-1].error is not None and steps[-1].error.type == "cancelled"
        with pytest.raises(InvalidTransition):
            await svc.resume_run(run.id, "too late")


async def test_cancelling_a_finished_run_is_a_clear_error(db_path: Path) -> None:
    async with Engine(db_path) as eng:
        svc = eng.service
        eng.worker()
        session = await svc.create_session(title="finished")
        run = await svc.create_run(session.id, "quick", agent="echo")
        done = await wait_status(svc, run.id, *TERMINAL)
        assert done.status is RunStatus.COMPLETED
        with pytest.raises(InvalidTransition) as raised:
            await svc.cancel_run(run.id)
        assert raised.value.code == "invalid_transition"
        assert raised.value.current == "completed" and raised.value.target == "cancelled"
        assert run.id in str(raised.value) and "completed" in str(raised.value)
        assert await svc.get_run(run.id) == done, "nothing changed"

        cancelled = await svc.create_run(session.id, "to cancel", agent="echo")
        await eng.stop_workers()
        await svc.cancel_run(cancelled.id)
        with pytest.raises(InvalidTransition):
            await svc.cancel_run(cancelled.id)


async def test_timeout_seconds_ends_the_run_timed_out(db_path: Path, tmp_path: Path) -> None:
    async with Engine(db_path) as eng:
        svc = eng.service
        eng.worker()
        session = await svc.create_session(title="timeout")
        observed = tmp_path / "observed"
        run = await svc.create_run(
            session.id,
            "too slow",
            agent="engine_cancellable",
            input={"gate": str(tmp_path / "never"), "observed": str(observed)},
            timeout_seconds=2,  # time for the agent to reach its gate on a loaded machine
        )
        await wait_step(svc, run.id, "blocked")  # its partial output is set: then time runs out
        ended = await wait_status(svc, run.id, *TERMINAL)
        assert ended.status is RunStatus.TIMED_OUT
        assert ended.error is not None and ended.error.type == "timeout"
        assert "2" in ended.error.message
        assert ended.output == {"partial": "half of the answer"}
        assert ended.duration_seconds is not None and ended.duration_seconds >= 2
        assert observed.exists(), "the agent was cancelled when its time ran out"
        steps = await svc.list_steps(run.id)
        assert steps[-1].status is StepStatus.FAILED
        assert steps[-1].error is not None and steps[-1].error.type == "timeout"
        assert (await svc.get_session(session.id)).status is SessionStatus.ACTIVE
        assert [e.type for e in await svc.list_events(run_id=run.id)][-1] == "run.timed_out"


async def test_wait_timeout_ends_a_waiting_run_timed_out(db_path: Path, tmp_path: Path) -> None:
    async with Engine(db_path) as eng:
        svc = eng.service
        eng.worker()
        session = await svc.create_session(title="nobody answers")
        run = await svc.create_run(
            session.id,
            "ask",
            agent="engine_asks",
            input={"log": str(tmp_path / "log")},
            wait_timeout_seconds=0.5,
        )
        # Read from the log, not by polling for the status: on a loaded machine the 0.5 s
        # of waiting can pass between two polls.
        ended = await wait_status(svc, run.id, *TERMINAL)
        runs = [e for e in await svc.list_events(run_id=run.id) if e.type.startswith("run.")]
        assert [e.type for e in runs][-2:] == ["run.waiting", "run.timed_out"]
        assert runs[-2].data["run"]["waiting_for"] is not None
        assert ended.status is RunStatus.TIMED_OUT
        assert ended.error is not None and ended.error.type == "wait_timeout"
        assert ended.waiting_for is None
        steps = await svc.list_steps(run.id)
        assert steps[-1].name == "wait_for_input" and steps[-1].status is StepStatus.FAILED
        with pytest.raises(InvalidTransition):
            await svc.resume_run(run.id, "too late")


async def test_closing_the_session_cancels_its_running_and_queued_runs(
    db_path: Path, tmp_path: Path
) -> None:
    async with Engine(db_path) as eng:
        svc = eng.service
        eng.worker()
        session = await svc.create_session(title="closing")
        observed = tmp_path / "observed"
        running = await svc.create_run(
            session.id,
            "long",
            agent="engine_cancellable",
            input={"gate": str(tmp_path / "never"), "observed": str(observed)},
        )
        await wait_step(svc, running.id, "blocked")
        queued = await svc.create_run(session.id, "next", agent="echo", if_busy="enqueue")
        started = time.time()
        closed = await svc.close_session(session.id)
        assert closed.status is SessionStatus.CLOSED
        seen = await eventually(lambda: _observed_at(observed), what="the agent to stop")
        assert seen - started < CANCEL_LATENCY
        for run_id in (running.id, queued.id):
            run = await svc.get_run(run_id)
            assert run.status is RunStatus.CANCELLED
        assert (await svc.get_run(running.id)).output == {"partial": "half of the answer"}
        assert [s.status for s in await svc.list_steps(running.id)] == [
            StepStatus.COMPLETED,
            StepStatus.FAILED,
        ]
