"""Retention: prune old closed and expired sessions, erase everything of one owner.

Both delete session by session, each in its own short transaction (the session with its runs,
steps, messages, memory and events), so no batch holds the write lock for long and other
writers go on in between.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tether.core.clock import Clock
from tether.core.errors import NotFound, StoreError
from tether.store.base import Store

log = logging.getLogger("tether.retention")

#: Told how many sessions are done so far, after each batch.
Progress = Callable[[int], None]


@dataclass(slots=True)
class RetentionReport:
    """What a prune or an erasure did (or, dry, would do): rows per table before and after."""

    sessions: int = 0
    before: dict[str, int] = field(default_factory=dict)
    after: dict[str, int] = field(default_factory=dict)
    #: Rows deleted outside sessions (erasure: memory, events, UI sessions, API keys).
    other: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False

    def to_data(self) -> dict[str, object]:
        return {
            "sessions": self.sessions,
            "dry_run": self.dry_run,
            "before": self.before,
            "after": self.after,
            "other": self.other,
        }


async def prune(
    store: Store,
    clock: Clock,
    *,
    closed_older_than: float | None,
    expired_older_than: float | None,
    batch: int = 100,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> RetentionReport:
    """Delete sessions closed more than closed_older_than seconds ago, and sessions expired more
    than expired_older_than seconds ago (None: keep that kind), batch at a time. Expiry is
    persisted first, so a session past its TTL counts from its expiry."""
    now = clock.now()
    report = RetentionReport(dry_run=dry_run, before=await store.count_rows())
    if not dry_run:
        await store.expire_sessions(now=now, limit=1_000_000)

    def ago(seconds: float | None) -> datetime | None:
        return None if seconds is None else now - timedelta(seconds=seconds)

    last = ""
    while found := await store.prunable_sessions(
        closed_before=ago(closed_older_than),
        expired_before=ago(expired_older_than),
        after_id=last,
        limit=batch,
    ):
        if not dry_run:
            await _delete(store, found)
        last = found[-1]
        report.sessions += len(found)
        if progress:
            progress(report.sessions)
    report.after = report.before if dry_run else await store.count_rows()
    return report


async def erase_owner(
    store: Store, owner: str, *, batch: int = 100, progress: Progress | None = None
) -> RetentionReport:
    """Delete every session of owner (with everything in it), then owner's user and app memory,
    the events left, UI sessions and API keys."""
    report = RetentionReport(before=await store.count_rows())
    while ids := await store.owner_session_ids(owner, limit=batch):
        await _delete(store, ids)
        report.sessions += len(ids)
        if progress:
            progress(report.sessions)
    report.other = await store.erase_owner_data(owner)
    report.after = await store.count_rows()
    return report


async def _delete(store: Store, session_ids: list[str]) -> None:
    for session_id in session_ids:
        try:
            await store.delete_session(session_id, owner=None)
        except NotFound:  # deleted meanwhile
            continue


async def prune_periodically(
    store: Store,
    clock: Clock,
    *,
    every: float,
    closed_older_than: float | None,
    expired_older_than: float | None,
) -> None:
    """Prune every `every` seconds until cancelled (a server's retention setting); a failed
    round is logged and tried again at the next one."""
    while True:
        try:
            report = await prune(
                store,
                clock,
                closed_older_than=closed_older_than,
                expired_older_than=expired_older_than,
            )
            if report.sessions:
                log.info("pruned %d old session(s)", report.sessions)
        except StoreError as exc:
            log.warning("pruning failed, trying again later: %s", exc)
        await asyncio.sleep(every)
