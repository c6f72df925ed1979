"""Gauges for the SQL stores: what the database holds right now, for every owner at once."""

from __future__ import annotations

from datetime import datetime

from tether.core.status import RunStatus
from tether.store.sql.common import SqlBase
from tether.store.sql.rows import to_us


class GaugesPart(SqlBase):
    """Counts read from the database, so any process sharing it reports the same numbers."""

    async def count_unfinished_runs(self) -> list[tuple[RunStatus, str, int]]:
        async with self._db.read() as tx:
            rows = await tx.all("count_unfinished_runs")
        return [(RunStatus(r["status"]), r["agent"], int(r["n"])) for r in rows]

    async def count_active_sessions(self, *, now: datetime) -> int:
        async with self._db.read() as tx:
            row = await tx.one("count_active_sessions", now=to_us(now))
        return 0 if row is None else int(row["n"])
