"""PostgresStore: the Store protocol on PostgreSQL, for several nodes sharing one database."""

from __future__ import annotations

import asyncio
import functools
import inspect
import random
from collections.abc import Awaitable, Callable
from typing import Any

from tether.store.postgres.database import ConcurrentUpdate, PostgresDatabase
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


for _name, _method in inspect.getmembers(SqlStore, inspect.iscoroutinefunction):
    if not _name.startswith("_") and _name not in ("close", "schema_version"):
        setattr(PostgresStore, _name, _retried(_method))
