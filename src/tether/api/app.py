"""create_app: the FastAPI application of ``tether serve``.

The lifespan opens the store (unless one is given), starts the embedded worker (unless
``workers=0``) and, on shutdown, stops it: running runs get the grace period to finish, then are
handed back to the queue. ``app.state.draining`` ends SSE streams and long-polls promptly when
the server is asked to stop.

With ``metrics`` set, the app serves GET /metrics and counts what its store, worker and streams
do; with tracing on (``tether.telemetry.enable_tracing``), every request is a server span.
Neither imports anything when off.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from fastapi import FastAPI

from tether.api import errors, openapi, routing
from tether.api.auth import LOCAL_OWNER, Authenticate
from tether.api.body_limit import BodyLimit
from tether.api.empty_query import EmptyQuery
from tether.api.hosts import CheckHost
from tether.api.langgraph import routers as langgraph_routers
from tether.api.native_telemetry import without_native_tracing
from tether.api.routes import (
    assistants,
    events,
    health,
    held_runs,
    memory,
    runs,
    schedules,
    sessions,
    webhooks,
)
from tether.api.settings import ApiSettings
from tether.api.utf8 import Utf8Only
from tether.core.clock import Clock
from tether.core.hosts import AllowedHosts
from tether.runtime import retention
from tether.runtime.agent import AgentRegistry
from tether.runtime.api_keys import ApiKeys
from tether.runtime.executor import ModelResolver
from tether.runtime.instruments import Chain, installed
from tether.runtime.service import Service
from tether.runtime.settings import RuntimeSettings
from tether.runtime.ui_sessions import UiSessions
from tether.runtime.worker import Worker
from tether.store.base import Store
from tether.store.factory import open_store
from tether.telemetry import create_metrics, tracing_enabled
from tether.ui import UiSettings
from tether.ui import install as install_ui
from tether.version import __version__

if TYPE_CHECKING:
    from tether.api.metrics import Exposition
    from tether.telemetry.metrics import Metrics

DESCRIPTION = """\
Durable Sessions and Runs for AI agents. A **session** is the long conversation (messages,
project, session memory, tool history); a **run** is one task inside it with its own status,
times, steps and error. Send `Authorization: Bearer <api key>` (`tether keys create`).
Errors are `application/problem+json` with a stable `code`; lists are
`{"data": [...], "next_cursor": str|null}`.
"""

#: The API's routers, in the order their routes are matched.
ROUTERS = (
    health.router,
    sessions.router,
    runs.router,
    held_runs.router,
    events.router,
    memory.router,
    assistants.router,
    schedules.router,
    webhooks.router,
    *langgraph_routers,
)


def create_app(
    settings: ApiSettings | None = None,
    *,
    store: Store | None = None,
    runtime: RuntimeSettings | None = None,
    agents: AgentRegistry | None = None,
    clock: Clock | None = None,
    models: ModelResolver | None = None,
) -> FastAPI:
    """The HTTP service. A given store is used as is and left open (its owner closes it)."""
    settings = settings or ApiSettings()
    hosts = AllowedHosts.of(settings.allowed_hosts)
    base = runtime or RuntimeSettings()
    runtime = replace(
        base,
        concurrency=max(1, settings.workers),
        shutdown_grace=settings.shutdown_grace,
        unroutable_after=settings.unroutable_after,
        redactor=settings.redactor,
        workspace_roots=(
            base.workspace_roots if settings.workspace_roots is None else settings.workspace_roots
        ),
        webhook_allow=base.webhook_allow + settings.webhook_allow,
    )
    metrics = create_metrics() if settings.metrics else None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = store is None
        opened = store or open_store(settings.db, durability=settings.durability, group_commit=True)
        used, instruments = opened, None
        if metrics is not None:
            used, instruments = metrics.watch(opened), Chain(installed(), metrics)
        service = Service(
            used,
            agents=agents,
            clock=clock,
            settings=runtime,
            models=models,
            instruments=instruments,
        )
        app.state.service = service
        app.state.keys = ApiKeys(used, clock=service.clock)
        app.state.ui_sessions = UiSessions(used, clock=service.clock)
        worker = None
        if settings.workers > 0:
            worker = Worker(
                used,
                service.agents,
                clock=service.clock,
                settings=runtime,
                models=models,
                instruments=instruments,
            )
            worker.start()
            if metrics is not None:
                metrics.watch_worker(runtime.concurrency, lambda: worker.active_runs)
        if metrics is not None:
            app.state.exposition = _exposition(metrics, service, settings.metrics_token)
        pruning = _start_pruning(settings, used, service.clock)
        try:
            yield
        finally:
            app.state.draining.set()
            if pruning is not None:
                pruning.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pruning
            if worker is not None:
                await worker.stop(settings.shutdown_grace)
            if owned:
                await opened.close()

    app = FastAPI(
        title="tether",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # the UI serves /docs itself, without third-party scripts
        redoc_url=None,
        **without_native_tracing(),
    )
    app.state.settings = settings
    app.state.draining = threading.Event()
    served = routing.add_routes(app, ROUTERS)
    errors.install(app)
    openapi.install(app, served)
    app.add_middleware(Utf8Only)
    app.add_middleware(EmptyQuery)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    ui = UiSettings(
        auth=settings.auth,
        hosts=hosts,
        local_owner=LOCAL_OWNER,
        docs=settings.docs,
        heartbeat_seconds=settings.heartbeat_seconds,
    )
    install_ui(app, ui)  # its pages authenticate with UI sessions, not API keys
    app.add_middleware(Authenticate, required=settings.auth, routes=served)
    if metrics is not None:
        from tether.api import metrics as metrics_api

        app.include_router(metrics_api.router)
        app.add_middleware(metrics_api.CountStreams, metrics=metrics)
    app.add_middleware(CheckHost, hosts=hosts)  # nothing answers another host
    if tracing_enabled():
        from tether.api.tracing import ServerSpans
        from tether.telemetry import tracing

        tracer = tracing.current()
        if tracer is not None:
            app.add_middleware(ServerSpans, tracer=tracer.tracer)  # outermost: sees every request
    return app


def _start_pruning(settings: ApiSettings, store: Store, clock: Clock) -> asyncio.Task[None] | None:
    """The periodic pruning the settings ask for, running in the background (or None)."""
    if settings.prune_closed_after is None and settings.prune_expired_after is None:
        return None
    return asyncio.get_running_loop().create_task(
        retention.prune_periodically(
            store,
            clock,
            every=settings.prune_interval,
            closed_older_than=settings.prune_closed_after,
            expired_older_than=settings.prune_expired_after,
        ),
        name="tether pruning",
    )


def _exposition(metrics: Metrics, service: Service, token: str | None) -> Exposition:
    from tether.api.metrics import Exposition

    return Exposition(metrics, service.store, service.clock, service.agents, token)
