"""Overview aggregates for the SQL stores: an owner's runs over a period, computed in SQL."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from tether.core.status import RunStatus
from tether.store.sql.common import SqlBase
from tether.store.sql.rows import from_us, to_us

if TYPE_CHECKING:  # made by run_stats only (a read of messages makes none)
    from tether.core.stats import RunStats

_HOUR_US = 3600 * 1_000_000
_DAY_US = 24 * _HOUR_US


class StatsPart(SqlBase):
    """Four grouped reads of one owner's runs, each bounded by the runs_by_owner index."""

    async def run_stats(
        self, *, owner: str, since: datetime, until: datetime, tools: int = 10
    ) -> RunStats:
        from tether.core.stats import AgentDurations, ModelTokens, RunStats, SlotCount, ToolFailures

        window = {"owner": owner, "since": to_us(since), "until": to_us(until)}
        async with self._db.read() as tx:
            hours = await tx.all("stats_runs_by_hour", hour=_HOUR_US, **window)
            durations = await tx.all("stats_run_durations", **window)
            tokens = await tx.all("stats_tokens_by_day", day=_DAY_US, **window)
            failing = await tx.all("stats_failing_tools", limit=tools, **window)
        return RunStats(
            since=since,
            until=until,
            by_hour=[
                SlotCount(from_us(int(r["slot"]) * _HOUR_US), RunStatus(r["status"]), int(r["n"]))
                for r in hours
            ],
            durations=[
                AgentDurations(r["agent"], int(r["n"]), int(r["p50"]) / 1e6, int(r["p95"]) / 1e6)
                for r in durations
            ],
            tokens=[
                ModelTokens(
                    from_us(int(r["slot"]) * _DAY_US),
                    r["model"],
                    int(r["input_tokens"]),
                    int(r["output_tokens"]),
                )
                for r in tokens
            ],
            failing_tools=[
                ToolFailures(r["tool"], int(r["calls"]), int(r["failed"])) for r in failing
            ],
        )
