"""Schedules for the SQL stores: their records, and the claim of a due tick that creates its run
in the same transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tether.core.run import IfBusy, Run
from tether.core.schedule import Schedule
from tether.core.session import Session
from tether.store.sql.database import Row
from tether.store.sql.rows import from_us, opt_dt, opt_us, to_us
from tether.store.sql.runs import RunsPart


class SchedulesPart(RunsPart):
    """Create, read, change and delete schedules; fire their ticks exactly once."""

    def _schedule(self, row: Row) -> Schedule:
        load = self._db.load_json
        return Schedule(
            id=row["id"],
            owner=row["owner"],
            cron=row["cron"],
            timezone=row["timezone"],
            agent=row["agent"],
            goal=row["goal"],
            input=load(row["input"]),
            session_id=row["session_id"],
            metadata=load(row["metadata"]),
            created_at=from_us(row["created_at"]),
            updated_at=from_us(row["updated_at"]),
            end_at=opt_dt(row["end_at"]),
            enabled=bool(row["enabled"]),
            next_run_at=opt_dt(row["next_run_at"]),
            last_run_id=row["last_run_id"],
        )

    def _schedule_params(self, schedule: Schedule) -> dict[str, Any]:
        return {
            "id": schedule.id,
            "owner": schedule.owner,
            "cron": schedule.cron,
            "timezone": schedule.timezone,
            "agent": schedule.agent,
            "goal": schedule.goal,
            "input": self._j(schedule.input),
            "metadata": self._j(schedule.metadata),
            "end_at": opt_us(schedule.end_at),
            "enabled": int(schedule.enabled),
            "next_run_at": opt_us(schedule.next_run_at),
            "updated_at": to_us(schedule.updated_at),
        }

    async def create_schedule(self, schedule: Schedule) -> Schedule:
        async with self._db.write() as tx:
            row = await tx.one(
                "insert_schedule",
                **self._schedule_params(schedule),
                session_id=schedule.session_id,
                created_at=to_us(schedule.created_at),
            )
        assert row is not None
        return self._schedule(row)

    async def get_schedule(self, schedule_id: str, *, owner: str | None) -> Schedule | None:
        async with self._db.read() as tx:
            row = await tx.one("schedule_by_id", id=schedule_id, owner=owner)
        return None if row is None else self._schedule(row)

    async def list_schedules(
        self,
        *,
        owner: str,
        session_id: str | None = None,
        agent: str | None = None,
        enabled: bool | None = None,
        after_id: str = "",
        limit: int = 50,
    ) -> list[Schedule]:
        async with self._db.read() as tx:
            rows = await tx.all(
                "list_schedules",
                owner=owner,
                after_id=after_id,
                session_id=session_id,
                agent=agent,
                enabled=None if enabled is None else int(enabled),
                limit=limit,
            )
        return [self._schedule(r) for r in rows]

    async def update_schedule(self, schedule: Schedule) -> Schedule | None:
        async with self._db.write() as tx:
            row = await tx.one("update_schedule", **self._schedule_params(schedule))
        return None if row is None else self._schedule(row)

    async def delete_schedule(self, schedule_id: str, *, owner: str) -> bool:
        async with self._db.write() as tx:
            return await tx.run("delete_schedule", id=schedule_id, owner=owner) > 0

    async def due_schedules(self, *, now: datetime, limit: int = 100) -> list[Schedule]:
        async with self._db.read() as tx:
            rows = await tx.all("due_schedules", now=to_us(now), limit=limit)
        return [self._schedule(r) for r in rows]

    async def fire_schedule(
        self,
        schedule: Schedule,
        *,
        next_run_at: datetime | None,
        run: Run,
        session: Session | None,
        now: datetime,
    ) -> Run | None:
        assert schedule.next_run_at is not None
        async with self._db.write() as tx:
            row = await tx.one(
                "claim_schedule_tick",
                id=schedule.id,
                due=to_us(schedule.next_run_at),
                next_run_at=opt_us(next_run_at),
                run_id=run.id,
                enabled=1,
            )
            if row is None:
                return None
            if session is not None:
                await self._insert_session(tx, session)
            created, _ = await self._create_run_in(
                tx, run, owner=schedule.owner, if_busy=IfBusy.ENQUEUE, now=now
            )
        return created

    async def skip_schedule_tick(
        self, schedule: Schedule, *, next_run_at: datetime | None, enabled: bool
    ) -> bool:
        assert schedule.next_run_at is not None
        async with self._db.write() as tx:
            row = await tx.one(
                "claim_schedule_tick",
                id=schedule.id,
                due=to_us(schedule.next_run_at),
                next_run_at=opt_us(next_run_at),
                run_id=None,
                enabled=int(enabled),
            )
        return row is not None
