"""Row ↔ record mapping shared by the SQL backends (times as epoch microseconds)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from tether.core.event import Event, EventType
from tether.core.memory import MemoryItem, MemoryScope
from tether.core.message import Message, Role
from tether.core.run import ErrorInfo, Run
from tether.core.session import Session
from tether.core.status import RunStatus, SessionStatus, StepStatus
from tether.core.step import Step, StepKind
from tether.core.usage import Usage
from tether.store.sql.database import Row

LoadJson = Callable[[Any], Any]

#: Separates the labels of a user-memory namespace in its stored form.
NAMESPACE_SEP = "\x1f"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: What an INTEGER column holds; a cursor part outside this range is forged.


def to_us(moment: datetime) -> int:
    """Epoch microseconds of an aware datetime."""
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_us(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


def opt_us(moment: datetime | None) -> int | None:
    return None if moment is None else to_us(moment)


def opt_dt(value: int | None) -> datetime | None:
    return None if value is None else from_us(value)


def join_namespace(namespace: tuple[str, ...]) -> str:
    return NAMESPACE_SEP.join(namespace)


def split_namespace(stored: str) -> tuple[str, ...]:
    return tuple(stored.split(NAMESPACE_SEP)) if stored else ()


def error_data(error: ErrorInfo | None) -> dict[str, Any] | None:
    if error is None:
        return None
    return {"type": error.type, "message": error.message, "step_id": error.step_id}


def _error(load: LoadJson, column: Any) -> ErrorInfo | None:
    data = load(column)
    if data is None:
        return None
    return ErrorInfo(type=data["type"], message=data["message"], step_id=data.get("step_id"))


def _usage(row: Row) -> Usage:
    return Usage(row["input_tokens"], row["output_tokens"], row["model_requests"])


def session_from_row(row: Row, load: LoadJson) -> Session:
    return Session(
        id=row["id"],
        owner=row["owner"],
        title=row["title"],
        status=SessionStatus(row["status"]),
        created_at=from_us(row["created_at"]),
        updated_at=from_us(row["updated_at"]),
        last_activity_at=from_us(row["last_activity_at"]),
        ttl_seconds=row["ttl_seconds"],
        metadata=load(row["metadata"]) or {},
        context=load(row["context"]) or {},
        closed_at=opt_dt(row["closed_at"]),
        run_count=row["run_count"] - row["deleted_runs"],
        usage=_usage(row),
    )


def run_from_row(row: Row, load: LoadJson) -> Run:
    return Run(
        id=row["id"],
        session_id=row["session_id"],
        owner=row["owner"],
        seq=row["seq"],
        agent=row["agent"],
        goal=row["goal"],
        status=RunStatus(row["status"]),
        created_at=from_us(row["created_at"]),
        updated_at=from_us(row["updated_at"]),
        input=load(row["input"]) or {},
        started_at=opt_dt(row["started_at"]),
        ended_at=opt_dt(row["ended_at"]),
        error=_error(load, row["error"]),
        output=load(row["output"]),
        usage=_usage(row),
        attempt=row["attempt"],
        max_attempts=row["max_attempts"],
        metadata=load(row["metadata"]) or {},
        timeout_seconds=row["timeout_seconds"],
        wait_timeout_seconds=row["wait_timeout_seconds"],
        idempotency_key=row["idempotency_key"],
        waiting_for=load(row["waiting_for"]),
        context=load(row["context"]),
        worker_id=row["worker_id"],
        lease_expires_at=opt_dt(row["lease_expires_at"]),
        not_before=opt_dt(row["not_before"]),
        traceparent=row["traceparent"],
    )


def step_from_row(row: Row, load: LoadJson) -> Step:
    return Step(
        id=row["id"],
        run_id=row["run_id"],
        session_id=row["session_id"],
        seq=row["seq"],
        position=row["position"],
        kind=StepKind(row["kind"]),
        name=row["name"],
        status=StepStatus(row["status"]),
        started_at=from_us(row["started_at"]),
        input=load(row["input"]),
        output=load(row["output"]),
        error=_error(load, row["error"]),
        ended_at=opt_dt(row["ended_at"]),
        usage=_usage(row),
        attempt=row["attempt"],
    )


def message_from_row(row: Row, load: LoadJson) -> Message:
    return Message(
        id=row["id"],
        session_id=row["session_id"],
        seq=row["seq"],
        role=Role(row["role"]),
        content=row["content"],
        created_at=from_us(row["created_at"]),
        run_id=row["run_id"],
        metadata=load(row["metadata"]) or {},
    )


def memory_from_row(row: Row, load: LoadJson) -> MemoryItem:
    return MemoryItem(
        scope=MemoryScope(row["scope"]),
        scope_id=row["scope_id"],
        key=row["key"],
        value=load(row["value"]),
        created_at=from_us(row["created_at"]),
        updated_at=from_us(row["updated_at"]),
        source_run_id=row["source_run_id"],
        namespace=split_namespace(row["namespace"]),
    )


def event_from_row(row: Row, load: LoadJson) -> Event:
    return Event(
        id=row["id"],
        type=EventType(row["type"]),
        owner=row["owner"],
        created_at=from_us(row["created_at"]),
        session_id=row["session_id"],
        run_id=row["run_id"],
        data=load(row["data"]) or {},
    )
