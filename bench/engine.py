"""Engine throughput and per-run overhead (issue: execution engine).

Runs the ``echo`` agent end to end through the embedded worker, on a SQLite file: a client
creates a run (``Service.create_run``), the worker claims it, assembles its context, runs the
agent (one step: the assistant message), and completes it; the client waits for the end
(``Service.wait_run``). Everything lives in one asyncio loop, as with ``tether serve``.

* sequential: one client, create + wait, one run after the other: in one long session (its
  context fills the token budget: ~600 earlier messages), and in a new session per run (the
  engine's fixed cost; creating the session is not timed);
* parallel: many clients creating and waiting concurrently, each in its own session (which
  grows, as above), and each run in a new session (sessions made before timing);
* raw: the store writes the same run needs, called directly in the same process and on the
  same file (create_run, claim_run, update_run(context), record_step(message), finish_run),
  to give the per-run overhead of the engine as a ratio;
* where the time goes: every store call the run makes, context assembly, and the wake-ups
  (create committed -> worker claims, finish committed -> wait_run returns), timed per phase.

    .venv/bin/python bench/engine.py
    .venv/bin/python bench/engine.py --runs 2000 --clients 8,64 --profile
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import tether.runtime.executor as executor_module

# bench/ is on sys.path when this file runs as a script.
from store_append import machine
from tether.core.message import Role
from tether.core.status import RunStatus
from tether.core.step import StepKind
from tether.runtime.service import Service
from tether.runtime.settings import RuntimeSettings
from tether.runtime.worker import Worker
from tether.store.base import Store
from tether.store.sqlite.store import SqliteStore

RAW_WORKER = "bench-host:1:raw"


def _median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def _p95_us(samples: list[float]) -> float:
    data = sorted(samples)
    return data[min(len(data) - 1, int(len(data) * 0.95))] * 1e6


class Engine:
    """A service and an embedded worker on one store, in the running loop."""

    def __init__(self, store: Store, settings: RuntimeSettings) -> None:
        self.store = store
        self.settings = settings
        self.service = Service(store, settings=settings)
        self.worker: Worker | None = None

    async def __aenter__(self) -> Engine:
        self.worker = Worker(
            self.store, self.service.agents, settings=self.settings, clock=self.service.clock
        )
        self.worker.start()
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.worker is not None
        await self.worker.stop(grace=5)

    async def one_run(self, session_id: str, i: int) -> float:
        started = time.perf_counter()
        run = await self.service.create_run(
            session_id, f"run {i}", agent="echo", input={"text": f"hello {i}"}
        )
        done = await self.service.wait_run(run.id, timeout=30)
        elapsed = time.perf_counter() - started
        if done.status is not RunStatus.COMPLETED:
            raise RuntimeError(f"run {run.id} ended {done.status.value}: {done.error}")
        return elapsed


async def raw_run(
    store: Store, service: Service, session_id: str, context: dict[str, Any], i: int
) -> float:
    """The store writes an echo run needs, without the engine."""
    started = time.perf_counter()
    clock = service.clock
    run = await service.create_run(
        session_id, f"run {i}", agent="echo", input={"text": f"hello {i}"}
    )
    claimed = await store.claim_run(worker_id=RAW_WORKER, now=clock.now(), lease_seconds=15)
    assert claimed is not None and claimed.id == run.id, "the raw run was not the one claimed"
    await store.update_run(run.id, worker_id=RAW_WORKER, now=clock.now(), context=context)
    reply = f"echo: hello {i}"
    await store.record_step(
        run_id=run.id,
        worker_id=RAW_WORKER,
        position=1,
        kind=StepKind.MESSAGE,
        name="assistant_message",
        input={"role": "assistant", "content": reply},
        now=clock.now(),
        message=(Role.ASSISTANT, reply, {}),
    )
    await store.finish_run(
        run.id,
        worker_id=RAW_WORKER,
        status=RunStatus.COMPLETED,
        now=clock.now(),
        output={"text": reply},
    )
    return time.perf_counter() - started


# -- where the time goes ----------------------------------------------------------------------


class Timeline:
    """Time spent per store method and phase, attributed to the run being measured."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.assembling = False
        self.created_at: dict[str, float] = {}
        self.finished_at: dict[str, float] = {}
        self.wake_claim: list[float] = []
        self.wake_wait: list[float] = []

    def add(self, name: str, seconds: float) -> None:
        self.spent[name] += seconds
        self.calls[name] += 1


class TimedStore:
    """A Store proxy that times every call (used for the breakdown only)."""

    def __init__(self, store: Store, timeline: Timeline) -> None:
        self._store = store
        self._timeline = timeline
        self.changes = store.changes
        self.location = store.location

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._store, name)
        if not callable(target):
            return target
        timeline = self._timeline

        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            result = await target(*args, **kwargs)
            ended = time.perf_counter()
            if timeline.assembling:
                timeline.add("assemble_context: " + name, ended - started)
            else:
                timeline.add(name, ended - started)
            if name == "create_run":
                timeline.created_at[result[0].id] = ended
            elif name == "claim_run" and result is not None:
                created = timeline.created_at.pop(result.id, None)
                if created is not None:
                    timeline.wake_claim.append(started - created)
            elif name == "finish_run":
                timeline.finished_at[args[0] if args else kwargs["run_id"]] = ended
            return result

        return timed


@contextlib.contextmanager
def timed_assembly(timeline: Timeline) -> Any:
    original = executor_module.assemble_context  # type: ignore[attr-defined]

    async def assemble(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        timeline.assembling = True
        try:
            return await original(*args, **kwargs)
        finally:
            timeline.assembling = False
            timeline.add("assemble_context (total)", time.perf_counter() - started)

    executor_module.assemble_context = assemble  # type: ignore[attr-defined]
    try:
        yield
    finally:
        executor_module.assemble_context = original  # type: ignore[attr-defined]


SessionFor = Callable[[int], Awaitable[str]]


async def breakdown(
    store: Store,
    settings: RuntimeSettings,
    session_for: SessionFor,
    runs: int,
    label: str,
    console: Console,
) -> None:
    timeline = Timeline()
    timed = TimedStore(store, timeline)
    engine = Engine(timed, settings)
    total = 0.0
    with timed_assembly(timeline):
        async with engine:
            for i in range(runs):
                session_id = await session_for(i)
                timeline.spent.pop("create_session", None)
                timeline.calls.pop("create_session", None)
                started = time.perf_counter()
                run = await engine.service.create_run(
                    session_id, f"run {i}", agent="echo", input={"text": f"hello {i}"}
                )
                await engine.service.wait_run(run.id, timeout=30)
                ended = time.perf_counter()
                total += ended - started
                timeline.wake_wait.append(ended - timeline.finished_at[run.id])
    per_run = total / runs
    table = Table(
        title=f"Where the time goes: {label}, {per_run * 1e6:.0f} us per run "
        f"(mean of {runs}, through a timing proxy)",
        title_justify="left",
    )
    for name in ("phase", "calls/run", "us/run", "% of run"):
        table.add_column(name, justify="left" if name == "phase" else "right")
    rows: list[tuple[str, float, float]] = []
    for name, spent in timeline.spent.items():
        rows.append((name, timeline.calls[name] / runs, spent / runs))
    rows.append(
        ("wake-up: create committed -> claim_run called", 1.0, sum(timeline.wake_claim) / runs)
    )
    rows.append(
        ("wake-up: finish committed -> wait_run returns", 1.0, sum(timeline.wake_wait) / runs)
    )
    counted = sum(us for name, _, us in rows if not name.startswith("assemble_context: "))
    rows.sort(key=lambda r: -r[2])
    for name, calls, spent in rows:
        table.add_row(name, f"{calls:.1f}", f"{spent * 1e6:.1f}", f"{100 * spent / per_run:.1f}")
    rest = per_run - counted
    table.add_row(
        "everything else (loop, tasks, agent code)",
        "",
        f"{rest * 1e6:.1f}",
        f"{100 * rest / per_run:.1f}",
    )
    console.print(table)
    console.print(
        "  store reads inside assemble_context are listed as 'assemble_context: <call>' and "
        "are part of its total; the wake-ups overlap the calls made in between (wait_run's "
        "reads), so the rows add up to slightly more than 100%."
    )
    console.print()


async def profile(
    store: Store, settings: RuntimeSettings, session_for: SessionFor, runs: int, console: Console
) -> None:
    engine = Engine(store, settings)
    profiler = cProfile.Profile()
    async with engine:
        for i in range(runs):
            session_id = await session_for(i)
            profiler.enable()
            await engine.one_run(session_id, i)
            profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
    console.print(f"cProfile of {runs} sequential runs, by own time:")
    console.print(out.getvalue(), markup=False, highlight=False)


# -- main ---------------------------------------------------------------------------------------


async def parallel(
    engine: Engine, sessions: list[str], total: int, fresh: list[str] | None = None
) -> tuple[float, list[float]]:
    """Each client runs in its own session, or (fresh) takes a new session for every run."""
    latencies: list[float] = []
    counter = iter(range(total))
    unused = iter(fresh or ())

    async def client(session_id: str) -> None:
        for i in counter:
            target = session_id if fresh is None else next(unused)
            latencies.append(await engine.one_run(target, i))

    started = time.perf_counter()
    await asyncio.gather(*(client(s) for s in sessions))
    return time.perf_counter() - started, latencies


class Mode:
    """A sequential mode: where each run goes (one long session, or a new one per run)."""

    def __init__(self, name: str, service: Service, *, long: bool) -> None:
        self.name = name
        self.service = service
        self.long = long
        self.engine_session = ""
        self.raw_session = ""
        self.engine: list[float] = []
        self.raw: list[float] = []
        self.context: dict[str, Any] = {}

    async def new_session(self, title: str) -> str:
        return (await self.service.create_session(title=title)).id

    async def engine_session_for(self, i: int) -> str:
        if not self.long or not self.engine_session:
            self.engine_session = await self.new_session(f"{self.name} {i}")
        return self.engine_session

    async def raw_session_for(self, i: int) -> str:
        if not self.long or not self.raw_session:
            self.raw_session = await self.new_session(f"{self.name} raw {i}")
        return self.raw_session

    async def engine_runs(self, engine: Engine, n: int, offset: int, record: bool) -> None:
        for i in range(offset, offset + n):
            session_id = await self.engine_session_for(i)
            elapsed = await engine.one_run(session_id, i)
            if record:
                self.engine.append(elapsed)
        latest = (
            await self.service.list_runs(self.engine_session, newest_first=True, limit=1)
        ).data[0]
        assert latest.context is not None
        self.context = latest.context  # the raw writes store a context of the same size

    async def raw_runs(self, store: Store, n: int, offset: int, record: bool) -> None:
        for i in range(offset, offset + n):
            session_id = await self.raw_session_for(i)
            elapsed = await raw_run(store, self.service, session_id, self.context, i)
            if record:
                self.raw.append(elapsed)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="sequential runs per mode")
    parser.add_argument("--parallel-runs", type=int, default=3000)
    parser.add_argument("--clients", default="8,64", help="parallel clients (one session each)")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=RuntimeSettings().concurrency,
        help="runs the worker executes at once",
    )
    parser.add_argument("--durability", default="normal", choices=("normal", "full"))
    parser.add_argument(
        "--rounds", type=int, default=5, help="alternate raw and engine blocks this many times"
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=300,
        help="runs before measuring (in the long session: its context fills up)",
    )
    parser.add_argument("--breakdown-runs", type=int, default=300)
    parser.add_argument("--profile", action="store_true", help="also print a cProfile")
    parser.add_argument("--dir", help="where the database file goes (default: a temp dir)")
    args = parser.parse_args()

    console = Console(width=max(100, shutil.get_terminal_size((120, 40)).columns))
    info = machine()
    console.print(
        f"[bold]tether engine benchmark[/bold] — {info['cpus']} CPUs, {info['cpu']}, "
        f"Python {info['python']}, SQLite {info['sqlite']}, durability={args.durability}"
    )
    workdir = Path(tempfile.mkdtemp(prefix="tether-engine-", dir=args.dir))
    settings = RuntimeSettings(concurrency=args.concurrency)
    store = SqliteStore(workdir / "engine.db", durability=args.durability)
    try:
        service = Service(store, settings=settings)
        engine = Engine(store, settings)
        modes = [
            Mode("sequential, one long session", service, long=True),
            Mode("sequential, a new session per run", service, long=False),
        ]
        per_round = max(1, args.runs // args.rounds)
        for mode in modes:
            async with engine:
                await mode.engine_runs(engine, args.warmup, 0, record=False)
            await mode.raw_runs(store, args.warmup, 0, record=False)
            for r in range(args.rounds):
                offset = args.warmup + r * per_round
                await mode.raw_runs(store, per_round, offset, record=True)
                async with engine:
                    await mode.engine_runs(engine, per_round, offset, record=True)

        parallel_results: list[tuple[str, float, list[float]]] = []
        for clients in [int(c) for c in args.clients.split(",") if c]:
            sessions = [(await service.create_session(title=f"p{i}")).id for i in range(clients)]
            async with engine:
                await parallel(engine, sessions, min(args.parallel_runs, clients * 20))  # warm up
                elapsed, latencies = await parallel(engine, sessions, args.parallel_runs)
            parallel_results.append(
                (f"parallel: {clients} clients, {clients} sessions", elapsed, latencies)
            )
        for clients in [int(c) for c in args.clients.split(",") if c][-1:]:
            fresh = [
                (await service.create_session(title=f"f{i}")).id
                for i in range(args.parallel_runs + clients * 20)
            ]
            async with engine:
                warm = min(args.parallel_runs, clients * 20)
                await parallel(engine, fresh[:clients], warm, fresh[args.parallel_runs :])
                elapsed, latencies = await parallel(
                    engine, fresh[:clients], args.parallel_runs, fresh[: args.parallel_runs]
                )
            parallel_results.append(
                (f"parallel: {clients} clients, a new session per run", elapsed, latencies)
            )

        table = Table(
            title="Engine: echo runs end to end through the embedded worker "
            f"(create -> claim -> run -> one step -> complete; worker concurrency "
            f"{settings.concurrency}, durability={args.durability})",
            title_justify="left",
        )
        for name in ("mode", "runs", "runs/s", "latency median us", "latency p95 us"):
            table.add_column(name, justify="left" if name == "mode" else "right")

        def row(name: str, elapsed: float, latencies: list[float]) -> None:
            table.add_row(
                name,
                f"{len(latencies)}",
                f"{len(latencies) / elapsed:.0f}",
                f"{_median_us(latencies):.0f}",
                f"{_p95_us(latencies):.0f}",
            )

        for mode in modes:
            row(mode.name, sum(mode.engine), mode.engine)
            row("  raw store writes of the same runs, no engine", sum(mode.raw), mode.raw)
        for name, elapsed, latencies in parallel_results:
            row(name, elapsed, latencies)
        console.print(table)
        for mode in modes:
            ratio = statistics.median(mode.engine) / statistics.median(mode.raw)
            console.print(
                f"  per-run overhead, {mode.name}: {ratio:.2f}x the raw store writes "
                f"(median {_median_us(mode.engine):.0f} us vs {_median_us(mode.raw):.0f} us: "
                f"the engine adds {_median_us(mode.engine) - _median_us(mode.raw):.0f} us)"
            )
        console.print(
            "  raw store writes = create_run, claim_run, update_run(context), record_step "
            "(the reply, with its message), finish_run, called directly in the same process."
        )
        console.print()
        for mode in modes:
            session_for = mode.engine_session_for
            await breakdown(store, settings, session_for, args.breakdown_runs, mode.name, console)
        if args.profile:
            await profile(
                store, settings, modes[0].engine_session_for, args.breakdown_runs, console
            )
    finally:
        await store.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
