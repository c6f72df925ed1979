"""A worker whose lease was taken from it (reaped elsewhere) stops its stale execution."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from tests.engine.engine_agents import lines_of
from tests.engine.engine_helpers import Engine, WorkerProcess, wait_status, wait_step
from tests.waiting import eventually
from tether.core.status import RUN_TERMINAL, RunStatus, StepStatus
from tether.core.step import StepKind
from tether.store.sqlite.store import SqliteStore

TERMINAL = tuple(RUN_TERMINAL)


def _state(pid: int) -> str:
    """The process state letter from /proc (T = stopped)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0]


async def _freeze(proc: WorkerProcess, db_path: Path) -> None:
    """SIGSTOP the process at a moment it holds no write lock on the database (stopped inside
    a write transaction, it would block every other writer)."""
    for _ in range(100):
        proc.proc.send_signal(signal.SIGSTOP)
        await eventually(lambda: _state(proc.pid) == "T", what="the process to stop")
        probe = sqlite3.connect(db_path, timeout=0, isolation_level=None)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.execute("ROLLBACK")
            return
        except sqlite3.OperationalError:
            proc.proc.send_signal(signal.SIGCONT)
            await asyncio.sleep(0.01)
        finally:
            probe.close()
    raise AssertionError("the worker process always held the write lock")


async def test_a_run_reaped_and_reclaimed_by_the_same_worker_runs_once(
    db_path: Path, tmp_path: Path
) -> None:
    """The worker stalled past its lease (a pause, an overloaded machine); another process
    reaped the run for a retry; the same worker claims the retry. Its stale execution of the
    first attempt must stop (the agent is cancelled) instead of running on beside the retry."""
    observed = tmp_path / "observed"
    gate = tmp_path / "gate"
    async with Engine(db_path) as eng:
        svc = eng.service
        # The claim loop polls much more often than the keeper watches: the retry is claimed
        # by this worker before its keeper looks at the run again.
        eng.worker(reap=False, watch_interval=1.0, poll_interval=0.02)
        session = await svc.create_session(title="stale")
        run = await svc.create_run(
            session.id,
            "long",
            agent="engine_cancellable",
            input={"gate": str(gate), "observed": str(observed)},
            max_attempts=2,
        )
        await wait_step(svc, run.id, "blocked")

        other = SqliteStore(db_path)  # another process's reaper
        try:
            later = svc.clock.now() + timedelta(seconds=60)
            (reaped,) = await other.reap_runs(now=later)
        finally:
            await other.close()
        assert reaped.status is RunStatus.READY and reaped.attempt == 2

        async def retry_blocked() -> bool:
            steps = await svc.list_steps(run.id)
            return any(s.name == "blocked" and s.attempt == 2 for s in steps)

        await eventually(retry_blocked, what="the retry to reach its blocking step")
        holder = (await svc.get_run(run.id)).worker_id or ""
        assert holder.startswith(eng.workers[0].worker_id + "/")
        await eventually(observed.exists, what="the stale agent to be cancelled")

        gate.touch()
        done = await wait_status(svc, run.id, *TERMINAL)
        assert done.status is RunStatus.COMPLETED, done.error
        assert done.attempt == 2 and done.output == {"complete": "the whole answer"}
        steps = await svc.list_steps(run.id)
        assert [(s.name, s.attempt, s.status) for s in steps] == [
            ("started", 1, StepStatus.COMPLETED),
            ("blocked", 1, StepStatus.FAILED),
            ("blocked", 2, StepStatus.COMPLETED),
        ]


async def test_a_live_worker_whose_run_was_reaped_stops_its_agent(
    db_path: Path, tmp_path: Path
) -> None:
    """Reaped as worker_lost elsewhere while its agent still runs: the keeper cancels the agent
    and the run stays as the reaper left it."""
    observed = tmp_path / "observed"
    async with Engine(db_path) as eng:
        svc = eng.service
        eng.worker(reap=False)
        session = await svc.create_session(title="reaped")
        run = await svc.create_run(
            session.id,
            "long",
            agent="engine_cancellable",
            input={"gate": str(tmp_path / "gate"), "observed": str(observed)},
        )
        await wait_step(svc, run.id, "blocked")
        other = SqliteStore(db_path)
        try:
            (reaped,) = await other.reap_runs(now=svc.clock.now() + timedelta(seconds=60))
        finally:
            await other.close()
        assert reaped.status is RunStatus.FAILED
        await eventually(observed.exists, what="the agent to be cancelled")
        (tmp_path / "gate").touch()
        nxt = await svc.create_run(session.id, "next", agent="echo")
        assert (await wait_status(svc, nxt.id, *TERMINAL)).status is RunStatus.COMPLETED
        after = await svc.get_run(run.id)
        assert after == reaped, "the stale execution wrote nothing"
        assert after.error is not None and after.error.type == "worker_lost"


async def test_a_keeper_watching_less_often_than_its_lease_renews_it_in_time(
    db_path: Path,
) -> None:
    """A watch interval past a third of the lease (2 s here) does not delay the renewals: the
    run outlives the lease without its own worker's reaper taking it."""
    async with Engine(db_path) as eng:
        svc = eng.service
        eng.worker(watch_interval=60.0)
        session = await svc.create_session(title="long watch")
        run = await svc.create_run(session.id, "nap", agent="echo", input={"sleep": 3})
        done = await wait_status(svc, run.id, *TERMINAL)
        assert done.status is RunStatus.COMPLETED, done.error
        assert done.attempt == 1


@pytest.mark.slow
async def test_a_frozen_worker_process_that_comes_back_does_not_repeat_work(
    db_path: Path, tmp_path: Path, worker_process: Callable[..., WorkerProcess]
) -> None:
    """SIGSTOP past the lease: the run is reaped and retried elsewhere. SIGCONT: the frozen
    execution finds the run no longer its own and stops without writing or repeating work."""
    log, gate = tmp_path / "log", tmp_path / "gate"
    async with Engine(db_path) as eng:
        svc = eng.service
        proc = worker_process(lease_seconds=1.0)
        session = await svc.create_session(title="frozen")
        run = await svc.create_run(
            session.id,
            "work",
            agent="engine_worklog",
            input={"log": str(log), "gate": str(gate), "block": "step"},
            max_attempts=2,
        )
        await wait_step(svc, run.id, "think")
        await _freeze(proc, db_path)
        try:
            gate.touch()
            eng.worker()
            done = await wait_status(svc, run.id, *TERMINAL)
            assert done.status is RunStatus.COMPLETED and done.attempt == 2
            steps = await svc.list_steps(run.id)
        finally:
            proc.proc.send_signal(signal.SIGCONT)
        # The process is back and works: it executes a new run (after its stale agent woke).
        await eng.stop_workers()
        probe_session = await svc.create_session(title="probe")
        probe = await svc.create_run(probe_session.id, "probe", agent="echo")
        probed = await wait_status(svc, probe.id, *TERMINAL)
        assert probed.status is RunStatus.COMPLETED  # only the process was left to run it
        assert lines_of(log) == ["before 1", "before 2", "after 1", "after 2"]
        assert await svc.list_steps(run.id) == steps
        assert await svc.get_run(run.id) == done


async def test_retries_stop_at_max_attempts(db_path: Path) -> None:
    """Each lost worker costs an attempt; the last one lost ends the run failed(worker_lost)."""
    async with Engine(db_path) as eng:
        svc, store = eng.service, eng.store
        session = await svc.create_session(title="unlucky")
        run = await svc.create_run(session.id, "doomed twice", agent="echo", max_attempts=2)
        for attempt, worker_id in ((1, "doomed-1"), (2, "doomed-2")):
            now = svc.clock.now()
            claimed = await store.claim_run(worker_id=worker_id, now=now, lease_seconds=1)
            assert claimed is not None and claimed.attempt == attempt
            await store.start_step(
                run_id=run.id,
                worker_id=worker_id,
                position=1,
                kind=StepKind.NOTE,
                name=f"attempt {attempt}",
                input=None,
                now=now,
            )
            (reaped,) = await store.reap_runs(now=now + timedelta(seconds=5))
        assert reaped.status is RunStatus.FAILED and reaped.attempt == 2
        assert reaped.error is not None and reaped.error.type == "worker_lost"
        assert "doomed-2" in reaped.error.message
        steps = await svc.list_steps(run.id)
        assert [(s.name, s.attempt, s.status) for s in steps] == [
            ("attempt 1", 1, StepStatus.FAILED),
            ("attempt 2", 2, StepStatus.FAILED),
        ]
        assert all(s.error is not None and s.error.type == "interrupted" for s in steps)
        types: list[str] = [e.type for e in await svc.list_events(run_id=run.id)]
        assert types.count("run.started") == 2
        assert types[-1] == "run.failed" and types.count("run.requeued") == 1
