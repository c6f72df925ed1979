"""The overview's aggregates on both backends: counts by hour and status, nearest-rank
p50/p95 durations by agent, tokens by day and model, failing tools; one owner's runs only,
within the period only."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.support import WORKER, Factory
from tether.core.clock import ManualClock
from tether.core.errors import UsageError
from tether.core.stats import AgentDurations, ModelTokens, ToolFailures
from tether.core.status import RunStatus, StepStatus
from tether.core.step import StepKind
from tether.core.usage import Usage
from tether.runtime.service import Service
from tether.store.base import Store

#: agent, seconds it runs, how it ends, model calls (model, in, out), tool calls (tool, ok)
Played = tuple[str, int, RunStatus, list[tuple[str, int, int]], list[tuple[str, bool]]]
RUNS: list[Played] = [
    ("echo", 1, RunStatus.COMPLETED, [("m1", 10, 5), ("m2", 7, 3)], [("read_file", True)]),
    ("echo", 2, RunStatus.COMPLETED, [("m1", 20, 10)], [("read_file", False)]),
    ("echo", 10, RunStatus.COMPLETED, [], [("run_command", False), ("write_file", True)]),
    ("echo", 4, RunStatus.FAILED, [], [("run_command", False)]),
    ("coder", 3, RunStatus.COMPLETED, [], []),
]


async def _play(make: Factory, clock: ManualClock, runs: list[Played]) -> None:
    """Each run in a session of its own: claimed, its steps recorded, finished after its time."""
    for agent, seconds, status, models, tools in runs:
        session = await make.session()
        run = await make.held(session.id, agent=agent)
        steps: list[tuple[StepKind, str, StepStatus, Usage | None]] = [
            (StepKind.MODEL_CALL, m, StepStatus.COMPLETED, Usage(i, o, 1)) for m, i, o in models
        ]
        steps += [
            (StepKind.TOOL_CALL, t, StepStatus.COMPLETED if ok else StepStatus.FAILED, None)
            for t, ok in tools
        ]
        for position, (kind, name, step_status, usage) in enumerate(steps, 1):
            await make.store.record_step(
                run_id=run.id,
                worker_id=WORKER,
                position=position,
                kind=kind,
                name=name,
                input=None,
                now=clock.now(),
                status=step_status,
                usage=usage,
            )
        clock.advance(seconds)
        await make.store.finish_run(run.id, worker_id=WORKER, status=status, now=clock.now())


async def test_run_stats_count_the_owners_runs_of_the_period(
    store: Store, service: Service, make: Factory, clock: ManualClock
) -> None:
    clock.advance(10 * 3600 + 60)  # 2026-01-01 10:01 UTC
    await _play(make, clock, [("echo", 600, RunStatus.COMPLETED, [("m1", 1000, 1)], [])])
    clock.advance(3 * 86400)  # three days later: the first run is only in the 7-day view
    await _play(make, clock, RUNS)
    bob = Factory(store, clock, owner="bob")
    await _play(
        bob, clock, [("echo", 99, RunStatus.FAILED, [("m1", 500, 5)], [("read_file", False)])]
    )

    day = await service.run_stats(hours=24)
    assert day.since == datetime(2026, 1, 3, 11, tzinfo=UTC)
    assert day.until == datetime(2026, 1, 4, 11, tzinfo=UTC)
    counts: dict[RunStatus, int] = {}
    for slot in day.by_hour:
        assert day.since <= slot.start < day.until
        counts[slot.status] = counts.get(slot.status, 0) + slot.runs
    assert counts == {RunStatus.COMPLETED: 4, RunStatus.FAILED: 1}
    assert [s.start for s in day.by_hour] == [datetime(2026, 1, 4, 10, tzinfo=UTC)] * 2
    # echo took 1, 2, 4 and 10 s: nearest rank p50 = the 2nd of 4, p95 = the 4th.
    assert day.durations == [
        AgentDurations("coder", 1, 3.0, 3.0),
        AgentDurations("echo", 4, 2.0, 10.0),
    ]
    midnight = datetime(2026, 1, 4, tzinfo=UTC)
    assert day.tokens == [ModelTokens(midnight, "m1", 30, 15), ModelTokens(midnight, "m2", 7, 3)]
    assert day.failing_tools == [ToolFailures("run_command", 2, 2), ToolFailures("read_file", 2, 1)]

    week = await service.run_stats(hours=7 * 24)
    assert sum(s.runs for s in week.by_hour) == 6
    assert week.durations[1] == AgentDurations("echo", 5, 4.0, 600.0)
    assert ModelTokens(datetime(2026, 1, 1, tzinfo=UTC), "m1", 1000, 1) in week.tokens

    empty = await service.for_owner("carol").run_stats(hours=24)
    assert (empty.by_hour, empty.durations, empty.tokens, empty.failing_tools) == ([], [], [], [])


@pytest.mark.parametrize("hours", [0, 31 * 24 + 1])
async def test_run_stats_refuse_a_period_out_of_range(service: Service, hours: int) -> None:
    with pytest.raises(UsageError, match="hours must be between"):
        await service.run_stats(hours=hours)
