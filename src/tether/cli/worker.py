"""``tether worker``: a standalone worker process with a graceful SIGTERM drain; with a metrics
port, it serves its own GET /metrics."""

from __future__ import annotations

import asyncio
import logging
import signal
from dataclasses import dataclass, replace

from tether import telemetry
from tether.cli.roots import announce
from tether.config import import_agents, model_catalog
from tether.core.redaction import DEFAULT_REDACTOR, Redactor
from tether.runtime.agent import default_registry
from tether.runtime.builtin import register
from tether.runtime.instruments import Chain, installed
from tether.runtime.settings import RuntimeSettings
from tether.runtime.worker import Worker
from tether.store.factory import open_store

log = logging.getLogger("tether.worker")
#: The defaults of the runtime settings.
_RUNTIME = RuntimeSettings()


@dataclass(frozen=True, slots=True)
class MetricsEndpoint:
    """Where a worker serves GET /metrics, and the token scrapers must send."""

    host: str
    port: int
    token: str | None


def serve_worker(
    db: str,
    *,
    concurrency: int,
    lease_seconds: float,
    grace_seconds: float,
    agents: str | None,
    unroutable_after: float | None = _RUNTIME.unroutable_after,
    redactor: Redactor = DEFAULT_REDACTOR,
    workspace_roots: tuple[str, ...] | None = None,
    webhook_allow: tuple[str, ...] = (),
    metrics: MetricsEndpoint | None = None,
    durability: str = "normal",
) -> None:
    """Run a worker on db until SIGTERM or SIGINT."""
    import_agents(agents)
    registry = register(default_registry)
    settings = replace(
        RuntimeSettings(),
        concurrency=concurrency,
        lease_seconds=lease_seconds,
        shutdown_grace=grace_seconds,
        unroutable_after=unroutable_after,
        redactor=redactor,
        workspace_roots=workspace_roots,
        webhook_allow=webhook_allow,
    )
    models = model_catalog()
    store = open_store(db, durability=durability, group_commit=True)
    used, instruments, counted, endpoint = store, None, None, None
    if metrics is not None:
        from tether.api.metrics import Exposition
        from tether.api.server import MetricsServer
        from tether.core.clock import SystemClock

        counted = telemetry.create_metrics()
        used, instruments = counted.watch(store), Chain(installed(), counted)
        exposition = Exposition(counted, used, SystemClock(), registry, metrics.token)
        endpoint = MetricsServer(exposition, host=metrics.host, port=metrics.port)

    async def main() -> None:
        worker = Worker(used, registry, settings=settings, models=models, instruments=instruments)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        worker.start()
        log.info(
            "worker %s started on %s (concurrency %d, lease %g s)",
            worker.worker_id,
            store.location,
            concurrency,
            lease_seconds,
        )
        announce(log, workspace_roots)
        if counted is not None and endpoint is not None:
            counted.watch_worker(concurrency, lambda: worker.active_runs)
            await endpoint.start()
            log.info("metrics on %s", endpoint.url)
        await stop.wait()
        log.info(
            "stopping: no new runs; %d running may finish within %g s",
            worker.active_runs,
            grace_seconds,
        )
        await worker.stop(grace_seconds)
        if endpoint is not None:
            await endpoint.stop()
        await store.close()
        log.info("worker stopped")

    try:
        asyncio.run(main())
    finally:
        telemetry.disable_tracing()  # the spans that ended are exported before the exit
