"""Helpers of the PostgreSQL tests: running a coroutine, services on stores, log checks."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import psycopg

from tether.core.event import Event
from tether.runtime.service import Service
from tether.runtime.settings import RuntimeSettings
from tether.store.base import Store
from tether.store.factory import open_store

T = TypeVar("T")

FAST = RuntimeSettings(
    poll_interval=0.05, watch_interval=0.05, reap_interval=0.1, lease_seconds=2.0
)


def run(coro: Coroutine[Any, Any, T], timeout: float = 120.0) -> T:
    """Run coro on a fresh loop, failing instead of hanging."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


def service(store: Store, settings: RuntimeSettings = FAST) -> Service:
    return Service(store, settings=settings, owner="alice")


async def with_stores(url: str, count: int, body: Callable[..., Awaitable[T]]) -> T:
    """Call body with count stores on url (each its own pool: a node each); close them all."""
    stores = [open_store(url) for _ in range(count)]
    try:
        return await body(*stores)
    finally:
        for store in stores:
            await store.close()


def sql(url: str, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    """Rows of one statement on its own connection (autocommit)."""
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement, params or None)
        return cur.fetchall() if cur.description else []


def waits_on_a_lock(url: str) -> bool:
    """Whether a connection to url's database is waiting for a lock (a row, an index entry)."""
    rows = sql(
        url,
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE datname = current_database() AND wait_event_type = 'Lock'",
    )
    return bool(rows[0][0])


_ENDS = frozenset({"run.completed", "run.failed", "run.cancelled", "run.timed_out"})


def check_runs_in_log(events: list[Event]) -> dict[str, list[str]]:
    """Check, from one session's event log in id order, that its runs started one at a time,
    in seq order, each once; returns run id → event types."""
    by_run: dict[str, list[str]] = defaultdict(list)
    active: str | None = None
    last_seq = 0
    for event in events:
        if event.run_id is None or not event.type.startswith("run."):
            continue
        by_run[event.run_id].append(event.type)
        if event.type == "run.started":
            assert active is None, f"run {event.run_id} started while {active} was active"
            seq = event.data["run"]["seq"]
            assert seq > last_seq, f"run seq {seq} started after seq {last_seq}"
            active, last_seq = event.run_id, seq
        elif event.type in _ENDS and active == event.run_id:
            active = None
    return by_run
