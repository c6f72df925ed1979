"""The Prometheus metrics of one tether process, in one registry.

Counters and histograms count what *this process* did: the runs it accepted, the events its
writes committed (runs finished, steps closed, tokens), the executions its worker lost, the
runs its reaper ended, how long its store operations took. Summed over every process of an
installation they give the whole (``sum without (instance)``). Gauges of what the database
holds (runs ready, running or waiting; active sessions) are read from the database at each
scrape, so every node reports the same numbers. Every metric is an aggregate over all owners:
no label carries an id, a title or anything a user wrote.

This module imports prometheus-client: it is loaded only when metrics are turned on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from tether.core.errors import TetherError
from tether.core.run import Run
from tether.core.status import RUN_TERMINAL, RunStatus, StepStatus
from tether.core.step import Step, StepKind
from tether.runtime.instruments import LOST, Ending, Instruments
from tether.store.base import Store
from tether.telemetry.timed_store import timed
from tether.version import __version__

# Counters are exposed as <name>_total only: no <name>_created series beside each.
disable_created_metrics()  # type: ignore[no-untyped-call]

#: Seconds: runs last from seconds to hours.
_RUN_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600)
#: Seconds a ready run waits for a worker.
_WAIT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800)
#: Seconds one store operation takes: a fraction of a millisecond on SQLite, more over a network.
_STORE_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
)
_TERMINAL = frozenset(s.value for s in RUN_TERMINAL)
_CLOSED_STEP = frozenset(
    s.value for s in (StepStatus.COMPLETED, StepStatus.FAILED, StepStatus.IN_DOUBT)
)
_UNFINISHED = (RunStatus.READY, RunStatus.RUNNING, RunStatus.WAITING)
#: Tool names label tool calls; a model may ask for tools that do not exist, so past this many
#: distinct names the others count together as OTHER_TOOL (series stay bounded).
MAX_TOOLS = 200
OTHER_TOOL = "(other)"


class Metrics(Instruments):
    """Counts, times and gauges of one process; ``render`` gives the exposition."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        for standard in (ProcessCollector, PlatformCollector, GCCollector):
            standard(registry=registry)
        Gauge(
            "tether_build_info",
            "The tether version of this process.",
            ["version"],
            registry=registry,
        ).labels(__version__).set(1)
        self.runs_created = Counter(
            "tether_runs_created",
            "Runs this process accepted, by agent.",
            ["agent"],
            registry=registry,
        )
        self.runs_finished = Counter(
            "tether_runs_finished",
            "Runs this process's writes ended (completed, failed, timed_out, cancelled), by agent "
            "and status.",
            ["agent", "status"],
            registry=registry,
        )
        self.run_duration = Histogram(
            "tether_run_duration_seconds",
            "From a run's first start to its end (waits for a person included), by agent and "
            "status.",
            ["agent", "status"],
            buckets=_RUN_BUCKETS,
            registry=registry,
        )
        self.queue_wait = Histogram(
            "tether_run_queue_wait_seconds",
            "From a run's creation (or the start it was delayed to) to its first start, by agent.",
            ["agent"],
            buckets=_WAIT_BUCKETS,
            registry=registry,
        )
        self.steps = Counter(
            "tether_steps",
            "Steps this process closed, by kind and outcome (completed, failed, in_doubt).",
            ["kind", "outcome"],
            registry=registry,
        )
        self.tool_calls = Counter(
            "tether_tool_calls",
            "Tool calls this process closed, by tool and outcome (completed, failed, in_doubt).",
            ["tool", "outcome"],
            registry=registry,
        )
        self.tokens = Counter(
            "tether_model_tokens",
            "Tokens of the model calls this process recorded, by model and type (input, output).",
            ["model", "type"],
            registry=registry,
        )
        self.sse_connections = Gauge(
            "tether_sse_connections",
            "Server-Sent Events streams this process is serving now.",
            registry=registry,
        )
        self.store_latency = Histogram(
            "tether_store_operation_seconds",
            "How long one store operation took in this process, by operation.",
            ["operation"],
            buckets=_STORE_BUCKETS,
            registry=registry,
        )
        self.lease_losses = Counter(
            "tether_lease_losses",
            "Executions on this process that lost their run (its lease expired and it was "
            "reaped or claimed again).",
            registry=registry,
        )
        self.reaped = Counter(
            "tether_runs_reaped",
            "Runs this process's reaper took from a lost worker or past its deadline, by the "
            "status it gave them (failed, ready for a retry, timed_out).",
            ["status"],
            registry=registry,
        )
        self.worker_slots = Gauge(
            "tether_worker_slots",
            "Runs this process's worker may execute at once.",
            registry=registry,
        )
        self.worker_slots_in_use = Gauge(
            "tether_worker_slots_in_use",
            "Runs this process's worker is executing now.",
            registry=registry,
        )
        self._database = _DatabaseGauges()
        registry.register(self._database)
        self._tools: set[str] = set()

    # -- wiring --------------------------------------------------------------------------------

    def watch(self, store: Store) -> Store:
        """Count what store commits from now on; the same store with its operations timed."""
        store.observe(self._committed)
        return timed(store, self._time_store)

    def watch_worker(self, slots: int, in_use: Callable[[], int]) -> None:
        """Report a worker's slots: how many, and how many are busy (asked at each scrape)."""
        self.worker_slots.set(slots)
        self.worker_slots_in_use.set_function(in_use)

    async def render(
        self, store: Store, *, now: datetime, agents: Iterable[str], accept: str | None
    ) -> tuple[bytes, str]:
        """The exposition (Prometheus text, or OpenMetrics when accept asks for it) and its
        content type, with the database's gauges read now."""
        await self._database.refresh(store, now=now, agents=agents)
        encode, content_type = choose_encoder(accept or "")
        return encode(self.registry), content_type

    # -- instruments ---------------------------------------------------------------------------

    @contextmanager
    def execution(self, run: Run, ending: Ending) -> Iterator[None]:
        try:
            yield
        finally:
            if ending.status == LOST:
                self.lease_losses.inc()

    def runs_reaped(self, runs: Sequence[Run]) -> None:
        for run in runs:
            self.reaped.labels(run.status.value).inc()

    # -- what the store committed --------------------------------------------------------------

    def _time_store(self, operation: str) -> Callable[[float], None]:
        observe: Callable[[float], None] = self.store_latency.labels(operation).observe
        return observe

    def _committed(self, type_: str, data: Mapping[str, Any]) -> None:
        family, _, what = type_.partition(".")
        record = data.get(family)
        if isinstance(record, Run):
            self._run_event(what, record)
        elif isinstance(record, Step) and what in _CLOSED_STEP:
            self._step_closed(what, record)

    def _run_event(self, what: str, run: Run) -> None:
        if what == "created":
            self.runs_created.labels(run.agent).inc()
        elif what == "started" and run.started_at is not None and run.started_at == run.updated_at:
            ready_at = max(run.created_at, run.not_before or run.created_at)
            wait = (run.started_at - ready_at).total_seconds()
            self.queue_wait.labels(run.agent).observe(max(0.0, wait))
        elif what in _TERMINAL:
            self.runs_finished.labels(run.agent, what).inc()
            if run.duration_seconds is not None:
                self.run_duration.labels(run.agent, what).observe(max(0.0, run.duration_seconds))

    def _step_closed(self, outcome: str, step: Step) -> None:
        self.steps.labels(step.kind.value, outcome).inc()
        if step.kind is StepKind.TOOL_CALL:
            self.tool_calls.labels(self._tool(step.name), outcome).inc()
        elif step.kind is StepKind.MODEL_CALL:
            if step.usage.input_tokens:
                self.tokens.labels(step.name, "input").inc(step.usage.input_tokens)
            if step.usage.output_tokens:
                self.tokens.labels(step.name, "output").inc(step.usage.output_tokens)

    def _tool(self, name: str) -> str:
        if name not in self._tools:
            if len(self._tools) >= MAX_TOOLS:
                return OTHER_TOOL
            self._tools.add(name)
        return name


class _DatabaseGauges(Collector):
    """Gauges read from the database at each scrape (refresh, then collect)."""

    def __init__(self) -> None:
        self._up = False
        self._runs: dict[tuple[str, str], int] = {}
        self._agents: set[str] = set()
        self._unroutable: dict[str, int] = {}
        self._sessions = 0

    async def refresh(self, store: Store, *, now: datetime, agents: Iterable[str]) -> None:
        try:
            unfinished = await store.count_unfinished_runs()
            unroutable = await store.count_unroutable_runs(now=now)
            sessions = await store.count_active_sessions(now=now)
        except TetherError:
            self._up = False
            return
        self._runs = {(status.value, agent): n for status, agent, n in unfinished}
        self._unroutable = dict(unroutable)
        self._agents = set(agents) | {agent for _, agent in self._runs}
        self._sessions = sessions
        self._up = True

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "tether_database_up",
            "1 when this scrape could read the gauges below from the database, else 0.",
            value=1 if self._up else 0,
        )
        if not self._up:
            return
        runs = GaugeMetricFamily(
            "tether_runs_current",
            "Runs ready, running or waiting now, by status and agent, of every owner (read "
            "from the database: every node reports the same).",
            labels=["status", "agent"],
        )
        for agent in sorted(self._agents):
            for status in _UNFINISHED:
                runs.add_metric([status.value, agent], self._runs.get((status.value, agent), 0))
        yield runs
        unroutable = GaugeMetricFamily(
            "tether_runs_unroutable",
            "Ready runs, by agent, that no running worker can take (no worker has the agent); "
            "they fail with agent_not_found once they waited the grace period.",
            labels=["agent"],
        )
        for agent in sorted(self._agents | set(self._unroutable)):
            unroutable.add_metric([agent], self._unroutable.get(agent, 0))
        yield unroutable
        yield GaugeMetricFamily(
            "tether_sessions_active",
            "Sessions active now, of every owner (read from the database).",
            value=self._sessions,
        )
