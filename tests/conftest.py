"""Shared fixtures: an event loop per test, a manual clock, the store, the service, factories
and an embedded worker.

``async def`` tests run on the test's ``loop`` (a small runner hook below instead of a plugin),
so fixtures can set up async resources on the very loop the test body uses.

``backend`` is the only backend-specific fixture: it hands out URLs of fresh, empty databases,
and ``store`` opens one with ``open_store``. It is parametrized over SQLite and PostgreSQL, so
everything under ``tests/contract/`` (and every test built on ``store``) runs on both; the
PostgreSQL databases are clones of a migrated template (tests/pg.py).
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pg import Databases, template_databases
from tests.support import OWNER, TEST_SETTINGS, Backend, Factory
from tether.core.clock import ManualClock
from tether.runtime import builtin
from tether.runtime.agent import AgentRegistry
from tether.runtime.service import Service
from tether.runtime.worker import Worker
from tether.store.base import Store

#: An async test that runs longer than this fails instead of hanging the suite.
ASYNC_TEST_TIMEOUT = 60.0


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run ``async def`` tests to completion on the test's own loop."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    loop = pyfuncitem.funcargs["loop"]
    assert isinstance(loop, asyncio.AbstractEventLoop)
    kwargs = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    loop.run_until_complete(asyncio.wait_for(pyfuncitem.obj(**kwargs), ASYNC_TEST_TIMEOUT))
    return True


@pytest.fixture(autouse=True)
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A fresh event loop per test; whatever is left on it is cancelled at the end."""
    loop = asyncio.new_event_loop()
    yield loop
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


@pytest.fixture
def clock() -> ManualClock:
    """Time that moves only when a test says so."""
    return ManualClock()


@pytest.fixture(scope="session")
def pg_databases() -> Iterator[Databases]:
    """The PostgreSQL test server and its migrated template (see tests/pg.py): skipped with the
    reason when no server answers, failed instead under CI=true."""
    yield from template_databases()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """The backend under test: every test built on ``store`` runs on both."""
    if request.param == "sqlite":
        counter = itertools.count(1)
        return Backend(
            "sqlite",
            new_url=lambda: str(tmp_path / f"tether-{next(counter)}.db"),
            scratch_url=lambda: ":memory:",
        )
    if request.param == "postgres":
        databases: Databases = request.getfixturevalue("pg_databases")
        request.addfinalizer(databases.drop_made)
        return Backend("postgres", new_url=databases.new_url, scratch_url=databases.scratch())
    raise AssertionError(f"unknown backend {request.param}")  # pragma: no cover


@pytest.fixture
def db_url(backend: Backend) -> str:
    """The URL of the database the ``store`` fixture opens."""
    return backend.new_url()


@pytest.fixture
def store(backend: Backend, db_url: str, loop: asyncio.AbstractEventLoop) -> Iterator[Store]:
    """A migrated store on a fresh database, closed after the test."""
    opened = backend.open(db_url)
    yield opened
    loop.run_until_complete(opened.close())


@pytest.fixture
def agents() -> AgentRegistry:
    """A fresh registry with the built-in agents (the global default registry is not touched)."""
    return builtin.register(AgentRegistry())


@pytest.fixture
def service(store: Store, agents: AgentRegistry, clock: ManualClock) -> Service:
    """The library API for owner alice, on the test store and clock."""
    return Service(store, agents=agents, clock=clock, settings=TEST_SETTINGS, owner=OWNER)


@pytest.fixture
def make(store: Store, clock: ManualClock) -> Factory:
    """Record factories writing through the store."""
    return Factory(store, clock)


@pytest.fixture
def worker(service: Service, loop: asyncio.AbstractEventLoop) -> Iterator[Worker]:
    """An embedded worker executing the service's runs on the test loop."""
    started = Worker(
        service.store,
        service.agents,
        clock=service.clock,
        settings=service.settings,
        worker_id="test-worker",
    )

    async def start() -> None:
        started.start()

    loop.run_until_complete(start())
    yield started
    loop.run_until_complete(started.stop(grace=2.0))
