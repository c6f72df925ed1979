"""A worker whose lease was taken from it (reaped elsewhere) stops its stale execution."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from conftest import Engine, eventually, wait_status, wait_step

from tether.core.status import RUN_TERMINAL, RunStatus, StepStatus
from tether.store.sqlite.store import SqliteStore

TERMINAL = tuple(RUN_TERMINAL)


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
        assert (await svc.get_run(run.id)).worker_id == eng.workers[0].worker_id
        await eventually(observed.exists, timeout=1.0, what="the stale agent to be cancelled")

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
