"""Events: the append-only log every state change writes in its own transaction."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

from tether.core.message import Message
from tether.core.run import RunSummary
from tether.core.serde import from_data
from tether.core.session import Session
from tether.core.status import RUN_TERMINAL, STEP_TRANSITIONS, RunStatus, StepStatus
from tether.core.step import Step

T = TypeVar("T")


class EventType(StrEnum):
    """What an event records; each is written by exactly one kind of state change."""

    SESSION_CREATED = "session.created"  #: payload: session
    SESSION_UPDATED = "session.updated"  #: payload: session, changed (the fields set)
    SESSION_CLOSED = "session.closed"  #: payload: session
    SESSION_EXPIRED = "session.expired"  #: payload: session
    MESSAGE_ADDED = "message.added"  #: payload: message
    MESSAGE_REMOVED = "message.removed"  #: payload: message_id, seq (the newest one, popped)
    #: payload: after_seq, through_seq, removed (the messages in that range still there)
    MESSAGES_CLEARED = "messages.cleared"
    RUN_CREATED = "run.created"  #: payload: run, if_busy
    RUN_STARTED = "run.started"  #: payload: run
    RUN_WAITING = "run.waiting"  #: payload: run (its waiting_for says what for)
    RUN_RESUMED = "run.resumed"  #: payload: run, input
    RUN_COMPLETED = "run.completed"  #: payload: run
    RUN_FAILED = "run.failed"  #: payload: run
    RUN_TIMED_OUT = "run.timed_out"  #: payload: run
    RUN_CANCELLED = "run.cancelled"  #: payload: run, reason
    RUN_REQUEUED = "run.requeued"  #: payload: run, reason
    #: payload: url, attempt, status_code, error, outcome (delivered, retrying, failed),
    #: next_attempt_at: one attempt to deliver an ended run's webhook
    RUN_WEBHOOK = "run.webhook"
    STEP_STARTED = "step.started"  #: payload: step
    STEP_COMPLETED = "step.completed"  #: payload: step
    STEP_FAILED = "step.failed"  #: payload: step
    STEP_IN_DOUBT = "step.in_doubt"  #: payload: step
    #: payload: step_id, index (0, 1, 2 … within the step), text: a piece of the answer a
    #: model streams while its model_call step runs (the whole answer is the step's output)
    MODEL_CHUNK = "step.model_chunk"
    MEMORY_SET = "memory.set"  #: payload: item
    MEMORY_DELETED = "memory.deleted"  #: payload: scope, scope_id, key (and namespace)
    MEMORY_PROMOTED = "memory.promoted"  #: payload: item, from_key, source_run_id


def run_event(status: RunStatus) -> EventType:
    """The event a run's move to status writes (ValueError for ready and running, which have
    their own: run.requeued, run.started, run.resumed)."""
    return EventType(f"run.{status.value}")


def step_event(status: StepStatus) -> EventType:
    """The event a step writes when it reaches status."""
    return EventType(f"step.{status.value}")


#: The events after which a run's stream ends: one per terminal run status.
TERMINAL_RUN_EVENTS: frozenset[EventType] = frozenset(run_event(s) for s in RUN_TERMINAL)
#: The events that close a step: one per final step status.
STEP_END_EVENTS: frozenset[EventType] = frozenset(
    step_event(s) for s, nxt in STEP_TRANSITIONS.items() if not nxt
)


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of the event log; ``id`` increases in commit order within a session.

    ``data`` is the payload as JSON (what the wire carries); the properties below read its
    records typed, and raise ValueError when this type of event does not carry them."""

    id: int
    type: EventType
    owner: str
    created_at: datetime
    session_id: str | None = None
    run_id: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def run(self) -> RunSummary:
        """The run as this event left it (run.* events), as run events carry it: its summary
        (read the run itself for its input, metadata and context)."""
        return _record(self, "run", RunSummary)

    @property
    def step(self) -> Step:
        """The step as this event left it (step.* events)."""
        return _record(self, "step", Step)

    @property
    def message(self) -> Message:
        """The message added (message.added)."""
        return _record(self, "message", Message)

    @property
    def session(self) -> Session:
        """The session as this event left it (session.* events)."""
        return _record(self, "session", Session)

    @property
    def changed(self) -> list[str]:
        """The fields a session.updated event set (empty for other events)."""
        return [str(name) for name in self.data.get("changed") or ()]


def _record(event: Event, key: str, cls: type[T]) -> T:
    """The record under key in event's payload, rebuilt as cls."""
    value = event.data.get(key)
    if not isinstance(value, dict):
        raise ValueError(f"a {event.type} event carries no {key}")
    return from_data(cls, value)
