"""Agent routing for the SQL stores: which agents running workers have, the ready runs no worker
can take, and the runs across an owner's sessions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from tether.core.event import EventType
from tether.core.page import Page
from tether.core.run import ErrorInfo, Run
from tether.core.status import RunStatus
from tether.store.cursors import decode_cursor, encode_cursor
from tether.store.sql.rows import error_data, opt_us, to_us
from tether.store.sql.runs import RunsPart
from tether.store.sql.sessions import like_pattern


class RoutingPart(RunsPart):
    """Workers announce their agents; runs of agents nobody has wait, then fail."""

    async def announce_worker(
        self, worker_id: str, *, agents: Sequence[str], now: datetime, expires_at: datetime
    ) -> None:
        async with self._db.write() as tx:
            await tx.run("drop_gone_workers", now=to_us(now))
            await tx.run(
                "announce_worker",
                id=worker_id,
                agents=self._j(sorted(set(agents))),
                now=to_us(now),
                expires_at=to_us(expires_at),
            )

    async def retire_worker(self, worker_id: str) -> None:
        async with self._db.write() as tx:
            await tx.run("retire_worker", id=worker_id)

    async def live_agents(self, *, now: datetime) -> set[str]:
        async with self._db.read() as tx:
            rows = await tx.all("live_agents", now=to_us(now))
        return {r["agent"] for r in rows}

    async def count_unroutable_runs(self, *, now: datetime) -> list[tuple[str, int]]:
        async with self._db.read() as tx:
            rows = await tx.all("count_unroutable_runs", now=to_us(now))
        return sorted((r["agent"], int(r["n"])) for r in rows)

    async def fail_unroutable_runs(
        self, *, now: datetime, ready_since: datetime, limit: int = 100
    ) -> list[Run]:
        failed: list[Run] = []
        found = {"now": to_us(now), "ready_since": to_us(ready_since), "limit": limit}
        async with self._db.read() as tx:  # mostly there is none: no write lock for nothing
            if not await tx.all("unroutable_runs", **found):
                return failed
        async with self._db.write() as tx:
            rows = await tx.all("unroutable_runs", **found)
            for row in rows:
                waited = (now - self._run(row).updated_at).total_seconds()
                error = ErrorInfo(
                    "agent_not_found",
                    f"no running worker has agent {row['agent']!r} (the run waited "
                    f"{waited:.0f} s for one)",
                )
                ended = await tx.one(
                    "end_run",
                    id=row["id"],
                    status=RunStatus.FAILED.value,
                    from_status=RunStatus.READY.value,
                    now=to_us(now),
                    error=self._j(error_data(error)),
                )
                if ended is None:  # taken or cancelled meanwhile
                    continue
                run = self._run(ended)
                await self._run_event(tx, EventType.RUN_FAILED, run, now)
                failed.append(run)
        return failed

    async def list_owner_runs(
        self,
        *,
        owner: str,
        now: datetime,
        status: RunStatus | None = None,
        agent: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        query: str | None = None,
        stuck: bool = False,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Run]:
        cursor_at, cursor_id = (None, None) if cursor is None else decode_cursor(cursor, int, str)
        async with self._db.read() as tx:
            rows = await tx.all(
                "owner_runs" if status is None else "owner_runs_with_status",
                owner=owner,
                now=to_us(now),
                cursor_at=cursor_at,
                cursor_id=cursor_id,
                status=None if status is None else status.value,
                agent=agent,
                since=opt_us(since),
                until=opt_us(until),
                query=like_pattern(query) if query else None,
                needle=query or None,
                stuck=stuck,
                limit=limit + 1,
            )
        runs = [self._run(r) for r in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            next_cursor = encode_cursor(to_us(runs[-1].created_at), runs[-1].id)
        return Page(runs, next_cursor)
