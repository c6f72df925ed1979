"""Stateless runs: a run in a session made for it alone, deleted once the run has ended
(``keep=True``: kept as an ordinary session).

The session is marked temporary in the same transaction that creates it. Whoever hands out the
run's result (a ``/wait`` or stream answer) deletes it right after; the reaper deletes, at its
sweeps, every temporary session whose runs have all ended and that has been idle for a sweep
interval, so one is never left behind, even when nobody reads the result or a process dies.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from tether.core.clock import Clock
from tether.core.errors import NotFound
from tether.core.message import Role
from tether.core.run import Run, RunOptions
from tether.runtime.service import Service
from tether.store.base import Store

log = logging.getLogger("tether.stateless")

#: The title of a stateless run's session.
TITLE = "stateless run"


async def start(
    svc: Service,
    goal: str,
    *,
    options: RunOptions | None = None,
    messages: Sequence[tuple[Role | str, str, dict[str, Any] | None]] = (),
    keep: bool = False,
) -> Run:
    """Accept a run in a new session of its own; the session is deleted once the run has
    ended, unless keep. A refused run leaves no session behind."""
    session = await svc.create_session(title=TITLE, temporary=not keep)
    try:
        return await svc.create_run(session.id, goal, options=options, messages=messages)
    except BaseException:
        await discard(svc, session.id)
        raise


async def discard(svc: Service, session_id: str) -> None:
    """Delete a temporary session now (nothing if it is already gone)."""
    with contextlib.suppress(NotFound):
        await svc.delete_session(session_id)


async def sweep(store: Store, clock: Clock, *, idle_seconds: float, limit: int = 100) -> int:
    """Delete temporary sessions whose runs have all ended, idle for idle_seconds; how many."""
    ids = await store.finished_temporary_sessions(
        idle_before=clock.now() - timedelta(seconds=idle_seconds), limit=limit
    )
    for session_id in ids:
        try:
            await store.delete_session(session_id, owner=None)
        except NotFound:
            continue
        log.info("deleted the temporary session %s of a stateless run", session_id)
    return len(ids)
