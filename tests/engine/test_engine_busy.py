"""Busy sessions: enqueue keeps order, reject never overlaps, interrupt cancels then starts;
idempotency keys never make a second run."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest

from tests.engine.engine_agents import lines_of
from tests.engine.engine_helpers import (
    Engine,
    active_overlaps,
    in_threads,
    wait_status,
    wait_step,
)
from tests.waiting import WAIT, eventually
from tether.core.errors import SessionBusy
from tether.core.run import Run
from tether.core.status import RUN_TERMINAL, RunStatus, StepStatus
from tether.runtime.service import Service

TERMINAL = tuple(RUN_TERMINAL)


async def _all_runs(svc: Service, session_id: str) -> list[Run]:
    return (await svc.list_runs(session_id, limit=1000)).data


async def _assert_executed_in_order(eng: Engine, session_id: str, log: Path, count: int) -> None:
    """Every run of the session completed, one after the other, in seq order."""
    svc = eng.service
    runs = await _all_runs(svc, session_id)
    for run in runs:
        await wait_status(svc, run.id, *TERMINAL, timeout=30)
    runs = await _all_runs(svc, session_id)
    assert [r.seq for r in runs] == list(range(1, count + 1))
    assert {r.status for r in runs} == {RunStatus.COMPLETED}
    expected_log = [line for n in range(1, count + 1) for line in (f"start {n}", f"end {n}")]
    assert lines_of(log) == expected_log
    for previous, current in itertools.pairwise(runs):
        assert previous.ended_at is not None and current.started_at is not None
        assert current.started_at >= previous.ended_at, f"run {current.seq} overlapped"
    assert active_overlaps(await eng.events(session_id)) == []


async def test_enqueue_keeps_submission_order_of_50_concurrent_submissions(
    db_path: Path, tmp_path: Path
) -> None:
    log = tmp_path / "order.log"
    async with Engine(db_path) as eng:
        svc = eng.service
        session = await svc.create_session(title="queue")
        for _ in range(3):
            eng.worker()
        submitted = await asyncio.gather(
            *(
                svc.create_run(
                    session.id,
                    f"task {i}",
                    agent="engine_ordered",
                    input={"log": str(log), "i": i},
                    if_busy="enqueue",
                )
                for i in range(50)
            )
        )
        assert [r.input["i"] for r in sorted(submitted, key=lambda r: r.seq)] == list(range(50))
        assert [r.seq for r in submitted] == list(range(1, 51))
        await _assert_executed_in_order(eng, session.id, log, 50)


async def test_enqueue_from_concurrent_connections_runs_strictly_in_order(
    db_path: Path, tmp_path: Path
) -> None:
    """Five threads, each on its own connection, submit ten runs each at the same moment,
    while three workers (two on their own connections) execute them."""
    log = tmp_path / "order.log"
    async with Engine(db_path) as eng:
        session = await eng.service.create_session(title="queue")
        eng.worker()
        eng.worker(own_store=True)
        eng.worker(own_store=True)

        def submitter(t: int) -> Any:
            async def job(svc: Service) -> list[Run]:
                return [
                    await svc.create_run(
                        session.id,
                        f"thread {t} task {i}",
                        agent="engine_ordered",
                        input={"log": str(log), "thread": t, "i": i},
                        if_busy="enqueue",
                    )
                    for i in range(10)
                ]

            return job

        per_thread = await in_threads(db_path, [submitter(t) for t in range(5)])
        for runs in per_thread:
            seqs = [r.seq for r in runs]
            assert seqs == sorted(seqs), "a thread's submissions keep their order"
        assert sorted(r.seq for runs in per_thread for r in runs) == list(range(1, 51))
        await _assert_executed_in_order(eng, session.id, log, 50)


async def test_reject_never_lets_two_runs_of_a_session_be_active(db_path: Path) -> None:
    """Eight threads keep submitting to two sessions with if_busy=reject while three workers
    execute; on the event log, no run of a session starts while another one is active."""
    async with Engine(db_path) as eng:
        svc = eng.service
        sessions = [await svc.create_session(title=f"s{i}") for i in range(2)]
        eng.worker()
        eng.worker(own_store=True)
        eng.worker(own_store=True)
        per_thread_accepted = 3

        def submitter(t: int) -> Any:
            session_id = sessions[t % 2].id

            async def job(svc: Service) -> dict[str, Any]:
                accepted: list[Run] = []
                rejected: list[SessionBusy] = []
                while len(accepted) < per_thread_accepted:
                    try:
                        accepted.append(
                            await svc.create_run(
                                session_id,
                                f"thread {t}",
                                agent="echo",
                                input={"sleep": 0.02, "steps": 1},
                            )
                        )
                    except SessionBusy as busy:
                        rejected.append(busy)
                        await svc.wait_run(busy.active_run_id, timeout=WAIT)
                return {"session_id": session_id, "accepted": accepted, "rejected": rejected}

            return job

        results = await in_threads(db_path, [submitter(t) for t in range(8)])

        rejections = [b for r in results for b in r["rejected"]]
        assert rejections, "the sessions were busy at some point"
        for result in results:
            ids = {r.id for r in await _all_runs(svc, result["session_id"])}
            for busy in result["rejected"]:
                assert busy.active_run_id in ids
                assert "is busy" in busy.message and busy.active_run_id in busy.message
                assert busy.code == "session_busy"
        for session in sessions:
            runs = await _all_runs(svc, session.id)
            assert len(runs) == 4 * per_thread_accepted
            for run in runs:
                await wait_status(svc, run.id, *TERMINAL)
            events = await eng.events(session.id)
            assert active_overlaps(events) == []
            assert sum(e.type == "run.started" for e in events) == len(runs)
            assert sum(e.type == "run.completed" for e in events) == len(runs)
            runs = await _all_runs(svc, session.id)
            assert {r.status for r in runs} == {RunStatus.COMPLETED}
            spans = sorted((r.started_at, r.ended_at) for r in runs)
            for (_, end), (start, _) in itertools.pairwise(spans):
                assert end is not None and start is not None and start >= end


@pytest.mark.parametrize("state", ["running", "waiting"])
async def test_interrupt_cancels_the_active_run_then_starts_the_new_one(
    db_path: Path, tmp_path: Path, state: str
) -> None:
    async with Engine(db_path) as eng:
        svc = eng.service
        session = await svc.create_session(title="interrupt")
        eng.worker()
        observed = tmp_path / "observed"
        if state == "running":
            first = await svc.create_run(
                session.id,
                "long analysis",
                agent="engine_cancellable",
                input={"gate": str(tmp_path / "never"), "observed": str(observed)},
            )
            await wait_step(svc, first.id, "blocked")
        else:
            first = await svc.create_run(
                session.id, "ask", agent="engine_asks", input={"log": str(tmp_path / "log")}
            )
            await wait_status(svc, first.id, RunStatus.WAITING)
        steps_before = await svc.list_steps(first.id)

        with pytest.raises(SessionBusy):
            await svc.create_run(session.id, "rejected", agent="echo")
        second = await svc.create_run(
            session.id, "do this instead", agent="echo", if_busy="interrupt"
        )

        cancelled = await svc.get_run(first.id)
        assert cancelled.status is RunStatus.CANCELLED
        assert cancelled.error is not None and cancelled.error.type == "cancelled"
        assert second.id in cancelled.error.message
        steps = await svc.list_steps(first.id)
        assert [s.id for s in steps] == [s.id for s in steps_before], "steps are kept"
        assert [s.status for s in steps][:-1] == [StepStatus.COMPLETED] * (len(steps) - 1)
        assert steps[-1].status is StepStatus.FAILED
        assert steps[-1].error is not None and steps[-1].error.type == "cancelled"
        if state == "running":
            assert cancelled.output == {"partial": "half of the answer"}
            await wait_status(svc, second.id, *TERMINAL)
            assert observed.exists(), "the agent saw the cancellation"
        else:
            assert cancelled.waiting_for is None

        done = await wait_status(svc, second.id, *TERMINAL)
        assert done.status is RunStatus.COMPLETED
        assert cancelled.ended_at is not None and done.started_at is not None
        assert done.started_at >= cancelled.ended_at
        events = await eng.events(session.id)
        types: list[tuple[str, str | None]] = [(e.type, e.run_id) for e in events]
        assert types.index(("run.cancelled", first.id)) < types.index(("run.started", second.id))
        assert active_overlaps(events) == []


async def test_interrupt_also_cancels_runs_queued_behind_the_active_one(
    db_path: Path, tmp_path: Path
) -> None:
    async with Engine(db_path) as eng:
        svc = eng.service
        session = await svc.create_session(title="interrupt a queue")
        eng.worker()
        active = await svc.create_run(
            session.id,
            "long",
            agent="engine_cancellable",
            input={"gate": str(tmp_path / "never")},
        )
        await wait_step(svc, active.id, "blocked")
        queued = await svc.create_run(session.id, "queued", agent="echo", if_busy="enqueue")
        new = await svc.create_run(session.id, "now", agent="echo", if_busy="interrupt")
        assert (await svc.get_run(active.id)).status is RunStatus.CANCELLED
        assert (await svc.get_run(queued.id)).status is RunStatus.CANCELLED
        assert (await wait_status(svc, new.id, *TERMINAL)).status is RunStatus.COMPLETED


async def test_idempotency_key_returns_the_same_run(db_path: Path) -> None:
    async with Engine(db_path) as eng:
        svc = eng.service
        session = await svc.create_session(title="idempotent")
        other = await svc.create_session(title="another")
        first = await svc.create_run(
            session.id, "once", agent="echo", input={"sleep": 0.2}, idempotency_key="k-1"
        )
        # While it is ready (and the session busy), the same key answers with the same run.
        again = await svc.create_run(
            session.id, "once", agent="echo", input={"sleep": 0.2}, idempotency_key="k-1"
        )
        assert again.id == first.id and again.seq == 1
        eng.worker()
        done = await wait_status(svc, first.id, *TERMINAL)
        assert done.status is RunStatus.COMPLETED
        # And after it finished too: never a second run.
        after = await svc.create_run(
            session.id, "once", agent="echo", input={"sleep": 0.2}, idempotency_key="k-1"
        )
        assert after.id == first.id and after.status is RunStatus.COMPLETED
        # The key is per session.
        elsewhere = await svc.create_run(other.id, "once", agent="echo", idempotency_key="k-1")
        assert elsewhere.id != first.id
        assert [r.id for r in await _all_runs(svc, session.id)] == [first.id]
        created = [e for e in await eng.events(session.id) if e.type == "run.created"]
        assert len(created) == 1


async def test_idempotency_key_under_concurrent_submissions(db_path: Path) -> None:
    async with Engine(db_path) as eng:
        svc = eng.service
        session = await svc.create_session(title="idempotent")

        # From one process, concurrently …
        same = await asyncio.gather(
            *(
                svc.create_run(session.id, "once", agent="echo", idempotency_key="gathered")
                for _ in range(20)
            )
        )
        assert len({r.id for r in same}) == 1

        assert [r.idempotency_key for r in await _all_runs(svc, session.id)] == ["gathered"]

        # … and from eight connections at the same moment, with if_busy=reject: the key is
        # checked before the busy session, so every caller gets the one run, not an error.
        fresh = await svc.create_session(title="racy")

        async def job(svc: Service) -> str:
            run = await svc.create_run(fresh.id, "again", agent="echo", idempotency_key="racy")
            return run.id

        ids = await in_threads(db_path, [job] * 8)
        assert len(set(ids)) == 1
        assert [r.id for r in await _all_runs(svc, fresh.id)] == ids[:1]


async def test_a_worker_executes_at_most_its_concurrency_at_once(
    db_path: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    async with Engine(db_path) as eng:
        svc = eng.service
        worker = eng.worker(concurrency=2)
        runs = []
        for i in range(6):
            session = await svc.create_session(title=f"s{i}")
            runs.append(
                await svc.create_run(
                    session.id,
                    f"run {i}",
                    agent="engine_ordered",
                    input={"log": str(tmp_path / f"{i}.log"), "gate": str(gate)},
                )
            )

        async def running() -> list[Run]:
            found = [await svc.get_run(r.id) for r in runs]
            return [r for r in found if r.status is RunStatus.RUNNING]

        held = await eventually(lambda: _at_least(running, 2), what="two runs to start")
        assert {r.id for r in held} == {runs[0].id, runs[1].id}, "oldest first"
        assert worker.active_runs == 2
        gate.touch()
        for run in runs:
            assert (await wait_status(svc, run.id, *TERMINAL)).status is RunStatus.COMPLETED

        events = sorted(
            [e for r in runs for e in await svc.list_events(run_id=r.id)], key=lambda e: e.id
        )
        active, most = 0, 0
        for event in events:
            if event.type == "run.started":
                active += 1
                most = max(most, active)
            elif event.type == "run.completed":
                active -= 1
        assert most == 2


async def _at_least(probe: Any, n: int) -> Any:
    found = await probe()
    return found if len(found) >= n else None
