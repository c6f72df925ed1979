"""Events: the append-only log every state change writes in its own transaction."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

#: Event types, each written by exactly one kind of state change.
EVENT_TYPES = frozenset(
    {
        "session.created",
        "session.updated",
        "session.closed",
        "session.expired",
        "message.added",
        "message.removed",
        "messages.cleared",
        "run.created",
        "run.started",
        "run.waiting",
        "run.resumed",
        "run.completed",
        "run.failed",
        "run.timed_out",
        "run.cancelled",
        "run.requeued",
        "step.started",
        "step.completed",
        "step.failed",
        "step.in_doubt",
        "memory.set",
        "memory.deleted",
        "memory.promoted",
    }
)


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of the event log; ``id`` increases in commit order within a session."""

    id: int
    type: str
    owner: str
    created_at: datetime
    session_id: str | None = None
    run_id: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
