"""PostgresStore: the Store protocol on PostgreSQL, for several nodes sharing one database."""

from __future__ import annotations

import asyncio
import functools
import inspect
import random
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from tether.core.event import EventType, run_event
from tether.core.run import ErrorInfo, Run
from tether.core.status import RUN_TERMINAL, RunStatus, check_transition
from tether.store.base import UNSET, Unset
from tether.store.postgres.database import ConcurrentUpdate, PostgresDatabase
from tether.store.sql.common import event_topics
from tether.store.sql.rows import error_data, to_us
from tether.store.sql.store import SqlStore

#: How often an operation that lost a race with a concurrent transaction is run again.
ATTEMPTS = 8


def _retried(method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """Run method again when a concurrent transaction got in its way (a deadlock, a racing
    claim refused by the one-active-run index): each operation is one transaction, rolled back
    whole, so running it again is safe and answers from the state that won."""

    @functools.wraps(method)
    async def call(*args: Any, **kwargs: Any) -> Any:
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return await method(*args, **kwargs)
            except ConcurrentUpdate:
                if attempt == ATTEMPTS:
                    raise
                await asyncio.sleep(random.uniform(0, 0.002 * 2**attempt))
        raise AssertionError("unreachable")

    return call


class PostgresStore(SqlStore):
    """tether's store on PostgreSQL (``postgresql://`` URLs)."""

    database: PostgresDatabase

    def __init__(self, url: str, *, migrate: bool = True) -> None:
        self.database = PostgresDatabase(url, migrate=migrate)
        super().__init__(self.database)

    async def claim_run(
        self,
        *,
        worker_id: str,
        now: datetime,
        lease_seconds: float,
        agents: Sequence[str] | None = None,
    ) -> Run | None:
        run, _ = await self._claim(worker_id, now, lease_seconds, agents, look=True)
        return run

    async def claim_next(
        self,
        *,
        worker_id: str,
        now: datetime,
        lease_seconds: float,
        agents: Sequence[str] | None = None,
        look: bool = True,
    ) -> tuple[Run | None, bool]:
        return await self._claim(worker_id, now, lease_seconds, agents, look=look)

    async def _claim(
        self,
        worker_id: str,
        now: datetime,
        lease_seconds: float,
        agents: Sequence[str] | None,
        *,
        look: bool,
    ) -> tuple[Run | None, bool]:
        # Workers wake on every run event of every node and most wake-ups find nothing to
        # claim: look first (one read) before taking (one statement, with the run.started
        # event). A run that becomes claimable after the look announces itself with a new
        # wake-up. The claim says whether another run waits, so the next claim need not look.
        named = None if agents is None else self.database.dump_json(sorted(agents))
        if look:
            async with self.database.read() as reader:
                if await reader.one("claimable", now=to_us(now), agents=named) is None:
                    return None, False
        lease_expires_at = to_us(now + timedelta(seconds=lease_seconds))
        rows = await self.database.commit_one(
            "claim_run",
            worker_id=worker_id,
            lease_expires_at=lease_expires_at,
            now=to_us(now),
            agents=named,
            source=self.database.source,
        )
        if not rows:
            return None, False
        row = rows[0]
        run = self._run(row)
        if row["started"]:
            self._appended(EventType.RUN_STARTED, run)
        return run, bool(row["more"])

    async def finish_run(
        self,
        run_id: str,
        *,
        worker_id: str,
        status: RunStatus,
        now: datetime,
        output: Any | Unset = UNSET,
        error: ErrorInfo | None = None,
    ) -> Run:
        # One statement with its event, when the run has no open steps; otherwise (or when
        # the run is no longer this worker's: SqlStore says why) as every SQL store does.
        check_transition(RunStatus.RUNNING, status)
        if status in RUN_TERMINAL:
            type_ = run_event(status)
            rows = await self.database.commit_one(
                "finish_run_told",
                id=run_id,
                worker_id=worker_id,
                status=status.value,
                type=type_.value,
                now=to_us(now),
                set_output=output is not UNSET,
                output=None if output is UNSET else self._j(output),
                error=self._j(error_data(error)),
                source=self.database.source,
            )
            if rows:
                run = self._run(rows[0])
                self._appended(type_, run)
                return run
        return await super().finish_run(
            run_id, worker_id=worker_id, status=status, now=now, output=output, error=error
        )

    def _appended(self, type_: EventType, run: Run) -> None:
        """What follows the commit of a run event the server appended: its topics published
        here (other nodes heard its notification), the observers told."""
        self.database.changes.publish(event_topics(type_, run.owner, run.session_id, run.id))
        if self._observers:
            self._tell(type_, {"run": run})


for _name, _method in inspect.getmembers(PostgresStore, inspect.iscoroutinefunction):
    if not _name.startswith("_") and _name not in ("close", "schema_version"):
        setattr(PostgresStore, _name, _retried(_method))
