"""The Run record: one concrete task execution inside a session."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, TypedDict, Unpack

from tether.core.errors import UsageError
from tether.core.serde import to_data
from tether.core.status import RUN_ACTIVE, RUN_TERMINAL, RunStatus
from tether.core.usage import ZERO_USAGE, Usage


class IfBusy(StrEnum):
    """What a new run does when its session already has an active run."""

    REJECT = "reject"  #: refuse with session_busy (default)
    ENQUEUE = "enqueue"  #: wait as ready; runs in submission order
    INTERRUPT = "interrupt"  #: cancel the active run, then start


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """How a new run is made, besides its session and goal: one value that the facades, both
    clients, the HTTP route and the LangGraph launcher hand down to ``Service.create_run``, which
    checks every field.

    To add a run option: a field here and its twin in RunOptionFields; then the HTTP body
    (``api/schemas.py`` RunCreate), the check and the Run field in ``Service.create_run``, and the
    store's column. Tests keep RunOptionFields and RunCreate in step with this class."""

    #: The agent that executes the run (None: the runtime's default agent, ``echo``).
    agent: str | None = None
    input: dict[str, Any] | None = None
    #: What the run does when its session already has an unfinished run.
    if_busy: IfBusy | str = IfBusy.REJECT
    timeout_seconds: float | None = None
    #: How long the run may wait for a person before it ends timed_out.
    wait_timeout_seconds: float | None = None
    #: A retried create with the same key returns the run created the first time.
    idempotency_key: str | None = None
    max_attempts: int = 1
    metadata: dict[str, Any] | None = None
    #: Start no earlier than this many seconds from now.
    after_seconds: float | None = None
    #: An http(s) URL the run is sent to (signed) once it ends.
    webhook: str | None = None

    @classmethod
    def of(cls, options: RunOptions | None = None, **fields: Unpack[RunOptionFields]) -> RunOptions:
        """options (or the defaults) with fields set: how every create_run reads its arguments."""
        base = cls() if options is None else options
        if not isinstance(base, RunOptions):
            raise UsageError(f"options must be a RunOptions, not {type(base).__name__}")
        return replace(base, **fields) if fields else base


class RunOptionFields(TypedDict, total=False):
    """The fields of RunOptions as keyword arguments: ``s.runs.create(goal, agent=…)``."""

    agent: str | None
    input: dict[str, Any] | None
    if_busy: IfBusy | str
    timeout_seconds: float | None
    wait_timeout_seconds: float | None
    idempotency_key: str | None
    max_attempts: int
    metadata: dict[str, Any] | None
    after_seconds: float | None
    webhook: str | None


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """Why a run or step failed."""

    type: str
    message: str
    #: The step the error happened in, when known.
    step_id: str | None = None

    @classmethod
    def of(cls, exc: BaseException, step_id: str | None = None) -> ErrorInfo:
        """The error of exc. A NUL character in its message (a parser quoting binary input,
        say), which no store keeps, becomes U+FFFD: the error is always recordable."""
        message = (str(exc) or type(exc).__name__).replace("\x00", "\ufffd")
        return cls(type=type(exc).__name__, message=message, step_id=step_id)


@dataclass(frozen=True, slots=True)
class Run:
    """One task in a session, with its own status, times, steps, memory and error."""

    id: str
    session_id: str
    owner: str
    #: 1, 2, 3 … within the session.
    seq: int
    agent: str
    goal: str
    status: RunStatus
    created_at: datetime
    updated_at: datetime
    input: dict[str, Any] = field(default_factory=dict)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    error: ErrorInfo | None = None
    output: Any = None
    usage: Usage = ZERO_USAGE
    #: 1 for the first execution; the reaper's retries count up.
    attempt: int = 1
    max_attempts: int = 1
    metadata: dict[str, Any] = field(default_factory=dict)
    timeout_seconds: float | None = None
    #: How long the run may wait for a person before it ends timed_out.
    wait_timeout_seconds: float | None = None
    idempotency_key: str | None = None
    #: What a waiting run waits for: {"kind": "input"|"approval", "prompt": …, "step_id": …}.
    waiting_for: dict[str, Any] | None = None
    #: The assembled context the run started from.
    context: dict[str, Any] | None = None
    #: Worker holding the run's lease while it executes.
    worker_id: str | None = None
    lease_expires_at: datetime | None = None
    #: Runs the worker may start at or after this moment (delayed start).
    not_before: datetime | None = None
    #: The W3C trace context (``traceparent``) of the span that created the run, when tracing
    #: was on: every execution of the run continues that trace.
    traceparent: str | None = None

    @property
    def is_terminal(self) -> bool:
        return self.status in RUN_TERMINAL

    @property
    def is_active(self) -> bool:
        return self.status in RUN_ACTIVE

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()

    def summary(self) -> RunSummary:
        """What a run event says about the run."""
        return RunSummary(
            id=self.id,
            session_id=self.session_id,
            seq=self.seq,
            agent=self.agent,
            goal=self.goal,
            status=self.status,
            attempt=self.attempt,
            created_at=self.created_at,
            started_at=self.started_at,
            ended_at=self.ended_at,
            worker_id=self.worker_id,
            error=self.error,
            output=self.output,
            usage=self.usage,
            waiting_for=self.waiting_for,
        )


@dataclass(frozen=True, slots=True)
class HeldLease:
    """A run its caller executes, as its caller holds it: the run (running), the secret every
    write of it must give (the holder), and how long it stays held without a heartbeat."""

    run: Run
    holder: str
    lease_seconds: float


class Activity(StrEnum):
    """What a session's runs are doing, as a search can filter on it."""

    IDLE = "idle"  #: nothing unfinished, and the newest run (if any) did not fail
    BUSY = "busy"  #: a run is running, or ready with none waiting
    WAITING = "waiting"  #: a run waits for a person
    ERROR = "error"  #: nothing unfinished, and the newest run failed or timed out


@dataclass(frozen=True, slots=True)
class RunActivity:
    """A session's runs that tell what it is doing (read without their contexts)."""

    running: Run | None = None
    waiting: Run | None = None
    #: The next ready run (the lowest seq).
    ready: Run | None = None
    #: The newest run.
    last: Run | None = None

    @property
    def activity(self) -> Activity:
        if self.running is not None:
            return Activity.BUSY
        if self.waiting is not None:
            return Activity.WAITING
        if self.ready is not None:
            return Activity.BUSY
        if self.last is not None and self.last.status in (RunStatus.FAILED, RunStatus.TIMED_OUT):
            return Activity.ERROR
        return Activity.IDLE


@dataclass(frozen=True, slots=True)
class RunSummary:
    """A run as its events carry it (``event.data["run"]``): who it is, where it stands and
    how it ended. Not its input, metadata or the context it started from: read the run for
    those. In an event's data, fields without a value (None, no usage) are left out."""

    id: str
    session_id: str
    seq: int
    agent: str
    goal: str
    status: RunStatus
    attempt: int = 1
    created_at: datetime | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    #: The worker holding the run, while it executes.
    worker_id: str | None = None
    error: ErrorInfo | None = None
    output: Any = None
    usage: Usage = ZERO_USAGE
    waiting_for: dict[str, Any] | None = None

    @property
    def is_terminal(self) -> bool:
        return self.status in RUN_TERMINAL

    def data(self) -> dict[str, Any]:
        """The summary as event data: JSON-ready, without the fields that have no value."""
        out: dict[str, Any] = to_data(self)
        if self.usage.is_zero():
            del out["usage"]
        return {name: value for name, value in out.items() if value is not None}
