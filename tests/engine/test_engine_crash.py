"""A worker process dies (SIGKILL) or is asked to stop (SIGTERM) in the middle of runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.engine.engine_agents import lines_of
from tests.engine.engine_helpers import Engine, WorkerProcess, wait_status, wait_step
from tests.waiting import eventually
from tether.core.status import RunStatus, SessionStatus, StepStatus
from tether.core.step import Step

pytestmark = pytest.mark.slow

BLOCKING_STEP = {"tool": "hang", "step": "think"}


async def _start_and_kill(
    eng: Engine,
    start_worker: Callable[..., WorkerProcess],
    tmp_path: Path,
    block: str,
    max_attempts: int,
) -> dict[str, Any]:
    """A run claimed by a worker process, killed with SIGKILL while blocked in its third step;
    what was recorded just before the kill."""
    svc = eng.service
    session = await svc.create_session(title="crash")
    proc = start_worker(lease_seconds=1.0)
    log, gate = tmp_path / "log.txt", tmp_path / "gate"
    run = await svc.create_run(
        session.id,
        "work through a crash",
        agent="engine_worklog",
        input={"log": str(log), "gate": str(gate), "block": block},
        max_attempts=max_attempts,
    )
    blocked = await wait_step(svc, run.id, BLOCKING_STEP[block])
    held = await svc.get_run(run.id)
    assert held.status is RunStatus.RUNNING and proc.holds(held)
    snapshot = {
        "session": session,
        "run": held,
        "blocked": blocked,
        "steps": await svc.list_steps(run.id),
        "messages": (await svc.list_messages(session.id)).data,
        "log": log,
        "gate": gate,
        "proc": proc,
    }
    proc.kill()
    assert proc.proc.returncode == -9
    return snapshot


def _unchanged(before: list[Step], after: list[Step]) -> dict[str, Step]:
    """Every step finished before the kill is still there, exactly as it was."""
    by_id = {s.id: s for s in after}
    for old in before:
        assert old.id in by_id, f"step {old.name} recorded before the kill was lost"
        if old.status is not StepStatus.RUNNING:
            assert by_id[old.id] == old
    return by_id


@pytest.mark.parametrize("block", ["tool", "step"])
async def test_sigkill_mid_run_is_reaped_as_worker_lost(
    db_path: Path,
    tmp_path: Path,
    worker_process: Callable[..., WorkerProcess],
    block: str,
) -> None:
    async with Engine(db_path) as eng:
        svc = eng.service
        before = await _start_and_kill(eng, worker_process, tmp_path, block, max_attempts=1)
        run_id = before["run"].id
        eng.worker()  # another worker: its reaper finds the expired lease

        ended = await wait_status(svc, run_id, RunStatus.FAILED, RunStatus.COMPLETED)
        assert ended.status is RunStatus.FAILED
        assert ended.error is not None and ended.error.type == "worker_lost"
        assert before["run"].worker_id in ended.error.message
        assert ended.ended_at is not None and ended.worker_id is None
        assert ended.attempt == 1
        assert ended.output == {"progress": "halfway"}, "partial output is kept"

        steps = await svc.list_steps(run_id)
        by_id = _unchanged(before["steps"], steps)
        assert len(steps) == len(before["steps"]), "nothing ran after the kill"
        blocked = by_id[before["blocked"].id]
        expected = StepStatus.IN_DOUBT if block == "tool" else StepStatus.FAILED
        assert blocked.status is expected
        assert blocked.error is not None and blocked.error.type == "interrupted"
        assert blocked.ended_at is not None
        assert [s.status for s in steps if s.id != blocked.id] == [StepStatus.COMPLETED] * 3

        messages = (await svc.list_messages(before["session"].id)).data
        assert messages == before["messages"]
        assert [m.content for m in messages] == ["halfway there"]
        assert lines_of(before["log"]) == ["before 1", "before 2"] + (
            ["hang"] if block == "tool" else []
        )

        session = await svc.get_session(before["session"].id)
        assert session.status is SessionStatus.ACTIVE, "a run's outcome never ends its session"
        types: list[str] = [e.type for e in await eng.events(session.id) if e.run_id == run_id]
        assert types[-1] == "run.failed"
        assert f"step.{expected.value}" in types
        assert "run.requeued" not in types


@pytest.mark.parametrize("block", ["tool", "step"])
async def test_sigkill_with_retries_completes_without_repeating_tool_calls(
    db_path: Path,
    tmp_path: Path,
    worker_process: Callable[..., WorkerProcess],
    block: str,
) -> None:
    async with Engine(db_path) as eng:
        svc = eng.service
        before = await _start_and_kill(eng, worker_process, tmp_path, block, max_attempts=2)
        run_id = before["run"].id
        before["gate"].touch()  # a re-executed blocking step may go on now
        eng.worker()

        done = await wait_status(svc, run_id, RunStatus.COMPLETED, RunStatus.FAILED)
        assert done.status is RunStatus.COMPLETED, done.error
        assert done.attempt == 2 and done.error is None
        in_doubt = done.output["in_doubt"]
        if block == "tool":
            assert "hang" in in_doubt and "never recorded" in in_doubt
        else:
            assert in_doubt is None
        assert done.output == {"done": True, "in_doubt": in_doubt, "attempt": 2}

        # The side effects prove it: each tool call happened exactly once.
        assert lines_of(before["log"]) == [
            "before 1",
            "before 2",
            *(["hang"] if block == "tool" else []),
            "after 1",
            "after 2",
        ]

        steps = await svc.list_steps(run_id)
        by_id = _unchanged(before["steps"], steps)
        blocked = by_id[before["blocked"].id]
        assert blocked.attempt == 1
        assert blocked.error is not None and blocked.error.type == "interrupted"
        retried = [s for s in steps if s.attempt == 2]
        assert all(s.status is StepStatus.COMPLETED for s in retried)
        appends = [s.input["arguments"]["line"] for s in steps if s.name == "append"]
        assert appends == ["before 1", "before 2", "after 1", "after 2"], "no call repeated"
        if block == "tool":
            assert blocked.status is StepStatus.IN_DOUBT
            assert [s.name for s in retried] == [
                "hang was in doubt",
                "append",
                "append",
                "assistant_message",
            ]
        else:
            assert blocked.status is StepStatus.FAILED
            assert [s.name for s in retried] == ["think", "append", "append", "assistant_message"]
            assert retried[0].position == blocked.position, "re-executed at its position"
        assert [s.seq for s in steps] == list(range(1, len(steps) + 1))

        messages = (await svc.list_messages(before["session"].id)).data
        assert messages[: len(before["messages"])] == before["messages"]
        assert [m.content for m in messages] == ["halfway there", "all done"]

        types: list[str] = [
            e.type for e in await eng.events(before["session"].id) if e.run_id == run_id
        ]
        assert types.count("run.started") == 2
        assert types.index("run.requeued") < len(types) - 1
        assert types[-1] == "run.completed"


async def test_sigterm_drains_finishes_short_runs_and_hands_back_long_ones(
    db_path: Path, tmp_path: Path, worker_process: Callable[..., WorkerProcess]
) -> None:
    async with Engine(db_path) as eng:
        svc = eng.service
        proc = worker_process(concurrency=2, grace_seconds=2.0)
        runs = {}
        for name in ("short", "long"):
            session = await svc.create_session(title=name)
            runs[name] = await svc.create_run(
                session.id,
                f"a {name} run",
                agent="engine_worklog",
                input={
                    "log": str(tmp_path / f"{name}.log"),
                    "gate": str(tmp_path / f"{name}.gate"),
                    "block": "step",
                },
            )
        for run in runs.values():
            await wait_step(svc, run.id, "think")
            assert proc.holds(await svc.get_run(run.id))
        long_before = await svc.list_steps(runs["long"].id)

        proc.terminate()
        await eventually(lambda: "stopping: no new runs" in proc.output(), what="the drain")
        # The worker no longer claims: a run submitted now waits for another worker.
        late_session = await svc.create_session(title="late")
        late = await svc.create_run(late_session.id, "submitted during the drain", agent="echo")
        (tmp_path / "short.gate").touch()  # the short run may finish within the grace period

        assert await proc.exited(timeout=15) == 0
        short = await svc.get_run(runs["short"].id)
        assert short.status is RunStatus.COMPLETED, short.error
        assert short.output["done"] is True
        assert (await svc.get_run(late.id)).status is RunStatus.READY

        handed_back = await svc.get_run(runs["long"].id)
        assert handed_back.status is RunStatus.READY
        assert handed_back.worker_id is None and handed_back.error is None
        assert handed_back.attempt == 1, "a handed-back run is not a failed attempt"
        events = await svc.list_events(run_id=handed_back.id)
        requeued = [e for e in events if e.type == "run.requeued"]
        assert len(requeued) == 1 and requeued[0].data["reason"] == "worker_shutdown"
        steps = await svc.list_steps(handed_back.id)
        by_id = _unchanged(long_before, steps)
        think = next(s for s in steps if s.name == "think")
        assert by_id[think.id].status is StepStatus.FAILED
        assert think.error is not None and think.error.type == "interrupted"

        # Another worker completes it later, replaying what it recorded.
        (tmp_path / "long.gate").touch()
        eng.worker()
        done = await wait_status(svc, handed_back.id, RunStatus.COMPLETED, RunStatus.FAILED)
        assert done.status is RunStatus.COMPLETED, done.error
        assert lines_of(tmp_path / "long.log") == ["before 1", "before 2", "after 1", "after 2"]
        steps = await svc.list_steps(done.id)
        _unchanged(long_before, steps)
        assert [s.name for s in steps].count("think") == 2  # interrupted, then executed again
        assert [m.content for m in (await svc.list_messages(done.session_id)).data] == [
            "halfway there",
            "all done",
        ]
        assert (await wait_status(svc, late.id, RunStatus.COMPLETED)).output == {
            "text": "echo: submitted during the drain"
        }
