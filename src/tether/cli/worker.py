"""``tether worker``: a standalone worker process with a graceful SIGTERM drain."""

from __future__ import annotations

import asyncio
import logging
import signal
from dataclasses import replace

from tether.cli.app import err_console
from tether.config import import_agents, model_catalog
from tether.runtime.agent import default_registry
from tether.runtime.builtin import register
from tether.runtime.settings import RuntimeSettings
from tether.runtime.worker import Worker
from tether.store.factory import open_store


def serve_worker(
    db: str,
    *,
    concurrency: int,
    lease_seconds: float,
    grace_seconds: float,
    agents: str | None,
) -> None:
    """Run a worker on db until SIGTERM or SIGINT."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    import_agents(agents)
    registry = register(default_registry)
    settings = replace(
        RuntimeSettings(),
        concurrency=concurrency,
        lease_seconds=lease_seconds,
        shutdown_grace=grace_seconds,
    )
    models = model_catalog()
    store = open_store(db)

    async def main() -> None:
        worker = Worker(store, registry, settings=settings, models=models)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        worker.start()
        err_console.print(
            f"worker {worker.worker_id} started on {store.location} "
            f"(concurrency {concurrency}, lease {lease_seconds:g} s)",
            highlight=False,
        )
        await stop.wait()
        err_console.print(
            f"stopping: no new runs; {worker.active_runs} running may finish within "
            f"{grace_seconds:g} s",
            highlight=False,
        )
        await worker.stop(grace_seconds)
        await store.close()
        err_console.print("worker stopped", highlight=False)

    asyncio.run(main())
