"""The lease keeper and an execution's own end: a run the agent just finished or suspended is
not a lost lease, even when the keeper reads the change before the agent hears its write was
committed (on PostgreSQL the keeper reads on another connection: it may)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import pytest

from tests.support import TEST_SETTINGS
from tests.waiting import eventually
from tether.core.clock import ManualClock
from tether.core.run import Run
from tether.runtime.agent import AgentRegistry
from tether.runtime.instruments import Ending, Instruments
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
