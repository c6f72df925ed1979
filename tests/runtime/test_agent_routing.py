"""Agent routing end to end: a worker without a run's agent leaves the run ready (visible as
stuck) for workers that have it, and the run fails with agent_not_found only once it waited the
configured grace period."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace

import pytest

from tests.support import TEST_SETTINGS
from tests.waiting import eventually
from tether.core.clock import ManualClock
from tether.core.status import RunStatus
from tether.runtime.agent import AgentRegistry
from tether.runtime.builtin.echo import echo
from tether.runtime.service import Service
from tether.runtime.worker import Worker

GRACE = 600.0


@pytest.fixture
def echo_worker(
    service: Service, clock: ManualClock, loop: asyncio.AbstractEventLoop
) -> Iterator[Worker]:
    """A worker that has the echo agent only, failing unroutable runs after GRACE seconds."""
    only_echo = AgentRegistry()
    only_echo.register("echo", echo)
    worker = Worker(
        service.store,
        only_echo,
        clock=clock,
        settings=replace(TEST_SETTINGS, unroutable_after=GRACE),
        worker_id="echo-only",
    )

    async def start() -> None:
        worker.start()  # it announces its agents from its own task: wait for that
        await eventually(service.live_agents, what="the worker's announcement")

    loop.run_until_complete(start())
    yield worker
    loop.run_until_complete(worker.stop(grace=2.0))


async def _status(service: Service, run_id: str) -> RunStatus:
    return (await service.get_run(run_id)).status


async def test_a_worker_with_echo_only_leaves_a_coder_run_ready_until_the_grace_period_ends(
    service: Service, clock: ManualClock, echo_worker: Worker
) -> None:
    coder = await service.create_run((await service.create_session()).id, "fix", agent="coder")
    later = await service.create_run((await service.create_session()).id, "hi", agent="echo")
    # The worker took the newer echo run and passed over the older coder run.
    done = await service.wait_run(later.id, timeout=30)
    assert done.status is RunStatus.COMPLETED
    assert await _status(service, coder.id) is RunStatus.READY
    assert await service.live_agents() == {"echo"}
    stuck = await service.list_all_runs(stuck=True)
    assert [r.id for r in stuck.data] == [coder.id]

    clock.advance(GRACE + 1)
    failed = await service.wait_run(coder.id, timeout=30)
    assert failed.status is RunStatus.FAILED
    assert failed.error is not None and failed.error.type == "agent_not_found"
    assert "'coder'" in failed.error.message
    assert (await service.list_all_runs(stuck=True)).data == []


async def test_a_stopped_worker_no_longer_counts(service: Service, echo_worker: Worker) -> None:
    assert await service.live_agents() == {"echo"}
    await echo_worker.stop(grace=1.0)
    assert await service.live_agents() == set()
