"""The lease keeper and an execution's own end: a run the agent just finished or suspended is
not a lost lease, even when the keeper reads the change before the agent hears its write was
committed (on PostgreSQL the keeper reads on another connection: it may); a renewal the
database fails is tried again after a watch, not at once."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, cast

import pytest

from tests.support import TEST_SETTINGS
from tests.waiting import eventually
from tether.core.clock import ManualClock
from tether.core.errors import StoreError
from tether.core.run import Run
from tether.runtime.agent import AgentRegistry, agent
from tether.runtime.instruments import Ending, Instruments
from tether.runtime.run_context import RunContext
from tether.runtime.service import Service
from tether.runtime.worker import Worker
from tether.store.base import Store


class LateAnswers:
    """The real store, whose writes that end an execution (finish, suspend) answer only once
    a read of the run (the lease keeper's) has seen what they committed."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._read = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def get_run(self, *args: Any, **kwargs: Any) -> Run | None:
        run = await self._store.get_run(*args, **kwargs)
        self._read.set()
        return run

    async def finish_run(self, *args: Any, **kwargs: Any) -> Run:
        return await self._late(await self._store.finish_run(*args, **kwargs))

    async def suspend_run(self, *args: Any, **kwargs: Any) -> Run:
        return await self._late(await self._store.suspend_run(*args, **kwargs))

    async def _late(self, written: Run) -> Run:
        self._read.clear()
        await self._read.wait()
        return written


class Endings(Instruments):
    """How each execution ended, as the instruments are told."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @contextmanager
    def execution(self, run: Run, ending: Ending) -> Iterator[None]:
        try:
            yield
        finally:
            self.seen.append(ending.status)


@pytest.mark.parametrize(
    ("given", "outcome"), [({"text": "hi"}, "completed"), ({"wait": "ok?"}, "waiting")]
)
async def test_a_run_the_agent_ended_itself_is_not_a_lost_lease(
    store: Store, agents: AgentRegistry, clock: ManualClock, given: dict[str, Any], outcome: str
) -> None:
    endings = Endings()
    late = cast(Store, LateAnswers(store))
    worker = Worker(late, agents, clock=clock, settings=TEST_SETTINGS, instruments=endings)
    service = Service(store, agents=agents, clock=clock, settings=TEST_SETTINGS)
    worker.start()
    try:
        session = await service.create_session()
        run = await service.create_run(session.id, "go", agent="echo", input=given)
        seen = await eventually(lambda: endings.seen, what="the execution to end")
        assert seen == [outcome]
        assert (await service.get_run(run.id)).status.value == outcome
    finally:
        await worker.stop(grace=2.0)


class DownForRenewals:
    """The real store, whose lease renewals fail (the database is down) and are timed."""

    def __init__(self, store: Store, enough: int) -> None:
        self._store = store
        self._enough = enough
        self.tried: list[float] = []
        self.tried_enough = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def renew_lease(self, *args: Any, **kwargs: Any) -> Run | None:
        self.tried.append(asyncio.get_running_loop().time())
        if len(self.tried) >= self._enough:
            self.tried_enough.set()
        raise StoreError("the database is down")


async def test_a_failed_renewal_is_tried_again_after_a_watch_not_at_once(
    store: Store, agents: AgentRegistry, clock: ManualClock
) -> None:
    down = DownForRenewals(store, enough=3)
    settings = replace(TEST_SETTINGS, lease_seconds=0.6, watch_interval=0.1)

    @agent("until-renewals-failed", registry=agents)
    async def until_renewals_failed(ctx: RunContext) -> str:
        await down.tried_enough.wait()
        return "done"

    worker = Worker(cast(Store, down), agents, clock=clock, settings=settings)
    service = Service(store, agents=agents, clock=clock, settings=settings)
    worker.start()
    try:
        session = await service.create_session()
        run = await service.create_run(session.id, "go", agent="until-renewals-failed")

        async def ended() -> bool:
            return (await service.get_run(run.id)).status.value == "completed"

        await eventually(ended, what="the run to complete")
        gaps = [later - first for first, later in itertools.pairwise(down.tried)]
        assert gaps and min(gaps) >= settings.watch_interval / 2
    finally:
        await worker.stop(grace=2.0)
