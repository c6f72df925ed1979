"""Session, run and step statuses, their transition tables and the one guard."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import TypeVar

from tether.core.errors import InvalidTransition


class SessionStatus(StrEnum):
    """Lifecycle of a session: only the user (close) or inactivity (expire) ends it."""

    ACTIVE = "active"  #: open for runs, messages and memory writes
    CLOSED = "closed"  #: closed by the user; read-only
    EXPIRED = "expired"  #: no activity for its TTL; read-only


class RunStatus(StrEnum):
    """Lifecycle of one run inside a session."""

    READY = "ready"  #: accepted, waiting for a worker
    RUNNING = "running"  #: executing (or resumed and about to be picked up again)
    WAITING = "waiting"  #: needs input or approval from a person
    COMPLETED = "completed"  #: finished with an output
    FAILED = "failed"  #: ended with an error
    TIMED_OUT = "timed_out"  #: exceeded its timeout or its wait timeout
    CANCELLED = "cancelled"  #: cancelled by a person, an interrupt or the session closing


class StepStatus(StrEnum):
    """Lifecycle of one step inside a run."""

    RUNNING = "running"  #: started, no result yet
    COMPLETED = "completed"  #: finished with an output
    FAILED = "failed"  #: finished with an error (or interrupted by a crash)
    IN_DOUBT = "in_doubt"  #: a tool call whose side effect may have happened unrecorded


SESSION_TRANSITIONS: Mapping[SessionStatus, frozenset[SessionStatus]] = {
    SessionStatus.ACTIVE: frozenset({SessionStatus.CLOSED, SessionStatus.EXPIRED}),
    SessionStatus.CLOSED: frozenset(),
    SessionStatus.EXPIRED: frozenset(),
}

RUN_TRANSITIONS: Mapping[RunStatus, frozenset[RunStatus]] = {
    # ready → failed: no running worker has the run's agent, for longer than the grace period.
    RunStatus.READY: frozenset({RunStatus.RUNNING, RunStatus.CANCELLED, RunStatus.FAILED}),
    RunStatus.RUNNING: frozenset(
        {
            RunStatus.COMPLETED,
            RunStatus.FAILED,
            RunStatus.TIMED_OUT,
            RunStatus.WAITING,
            RunStatus.CANCELLED,
            # Only when a worker dies (reaper retry) or drains on shutdown (release).
            RunStatus.READY,
        }
    ),
    RunStatus.WAITING: frozenset({RunStatus.RUNNING, RunStatus.CANCELLED, RunStatus.TIMED_OUT}),
    RunStatus.COMPLETED: frozenset(),
    RunStatus.FAILED: frozenset(),
    RunStatus.TIMED_OUT: frozenset(),
    RunStatus.CANCELLED: frozenset(),
}

STEP_TRANSITIONS: Mapping[StepStatus, frozenset[StepStatus]] = {
    StepStatus.RUNNING: frozenset({StepStatus.COMPLETED, StepStatus.FAILED, StepStatus.IN_DOUBT}),
    StepStatus.COMPLETED: frozenset(),
    StepStatus.FAILED: frozenset(),
    StepStatus.IN_DOUBT: frozenset(),
}

RUN_TERMINAL: frozenset[RunStatus] = frozenset(s for s, nxt in RUN_TRANSITIONS.items() if not nxt)
RUN_ACTIVE: frozenset[RunStatus] = frozenset({RunStatus.RUNNING, RunStatus.WAITING})
RUN_UNFINISHED: frozenset[RunStatus] = frozenset(RunStatus) - RUN_TERMINAL

_TABLES: dict[type[StrEnum], Mapping[StrEnum, frozenset[StrEnum]]] = {
    SessionStatus: SESSION_TRANSITIONS,  # type: ignore[dict-item]
    RunStatus: RUN_TRANSITIONS,  # type: ignore[dict-item]
    StepStatus: STEP_TRANSITIONS,  # type: ignore[dict-item]
}


S = TypeVar("S", bound=StrEnum)


def sources_of(target: S) -> frozenset[S]:
    """Every status from which target may be reached (what a guarded SQL UPDATE allows)."""
    table = _TABLES[type(target)]
    return frozenset(src for src, nxt in table.items() if target in nxt)  # type: ignore[misc]


def can_transition(current: StrEnum, target: StrEnum) -> bool:
    """True when the table allows current → target."""
    return target in _TABLES[type(current)][current]


def check_transition(current: StrEnum, target: StrEnum, *, what: str = "") -> None:
    """Raise InvalidTransition, naming both states, unless current → target is allowed."""
    if type(current) is not type(target):
        raise TypeError(f"cannot compare {type(current).__name__} with {type(target).__name__}")
    if not can_transition(current, target):
        raise InvalidTransition(what or _KIND[type(current)], str(current), str(target))


_KIND: dict[type[StrEnum], str] = {SessionStatus: "session", RunStatus: "run", StepStatus: "step"}
