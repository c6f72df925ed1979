"""What telemetry costs the engine: the CPU time of a run with metrics, tracing or both on, as a
ratio of the same engine with telemetry off, measured in the same run.

Each mode executes the same runs end to end through the embedded worker on a SQLite file (the
``echo`` agent, a new session per run, one client creating a run and waiting for its end). Metrics
count what the store commits and time every store operation; tracing records the spans of each
run (create_run, invoke_agent) through the SDK's batch processor into an exporter that drops
them, so the export itself (network) is not measured. The figure is the process's CPU time per
run (user + system): a run waits on wake-ups too, and wall time on a shared machine says more
about the neighbours than about tether. Modes take turns (each going first in its round), several
rounds; the best round of each counts.

    .venv/bin/python bench/telemetry.py
    .venv/bin/python bench/telemetry.py --runs 1000 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from rich.console import Console
from rich.table import Table

from tether import telemetry
from tether.core.status import RunStatus
from tether.runtime.instruments import Chain, Instruments, installed
from tether.runtime.service import Service
from tether.runtime.settings import RuntimeSettings
from tether.runtime.worker import Worker
from tether.store.base import Store
from tether.store.sqlite.store import SqliteStore

MODES = ("off", "metrics", "tracing", "both")
SETTINGS = RuntimeSettings(poll_interval=0.5, watch_interval=0.25)


class Dropped(SpanExporter):
    """Exports nothing: the cost measured is tether's and the SDK's, not a network's."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


async def cpu_per_run(mode: str, folder: Path, runs: int) -> float:
    """Microseconds of this process's CPU time per run."""
    store = SqliteStore(folder / f"{mode}-{time.monotonic_ns()}.db")
    provider = None
    if mode in ("tracing", "both"):
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(Dropped()))
        telemetry.enable_tracing(provider)
    instruments: Instruments | None = None
    used: Store = store
    if mode in ("metrics", "both"):
        metrics = telemetry.create_metrics()
        used, instruments = metrics.watch(store), Chain(installed(), metrics)
    service = Service(used, settings=SETTINGS, instruments=instruments)
    worker = Worker(used, service.agents, settings=SETTINGS, instruments=instruments)
    worker.start()
    try:
        sessions = [await service.create_session(title=f"s{i}") for i in range(runs + 20)]
        for session in sessions[:20]:  # warm up
            await _one(service, session.id)
        start = time.process_time()
        for session in sessions[20:]:
            await _one(service, session.id)
        return (time.process_time() - start) / runs * 1e6
    finally:
        await worker.stop(grace=5)
        await store.close()
        telemetry.disable_tracing()
        if provider is not None:
            provider.shutdown()


async def _one(service: Service, session_id: str) -> None:
    run = await service.create_run(session_id, "hello")
    done = await service.wait_run(run.id, timeout=30)
    assert done.status is RunStatus.COMPLETED, done


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=500, help="timed runs per mode and round")
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    best = dict.fromkeys(MODES, float("inf"))
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(options.rounds):
            for mode in MODES[round_ % 4 :] + MODES[: round_ % 4]:  # each goes first in turn
                cost = await cpu_per_run(mode, Path(tmp), options.runs)
                best[mode] = min(best[mode], cost)
    table = Table(title=f"CPU per run, best of {options.rounds} rounds of {options.runs} runs")
    for column in ("telemetry", "µs CPU per run", "vs off"):
        table.add_column(column, justify="right")
    for mode in MODES:
        table.add_row(mode, f"{best[mode]:.0f}", f"{best[mode] / best['off']:.2f}")
    Console().print(table)


if __name__ == "__main__":
    asyncio.run(main())
