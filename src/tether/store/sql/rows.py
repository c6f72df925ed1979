"""Row ↔ record mapping shared by the SQL backends (times as epoch microseconds)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from json import JSONDecoder
from json import loads as _loads
from json.encoder import encode_basestring as _string
from typing import Any

from tether.core.clock import to_iso
from tether.core.event import Event, EventType
from tether.core.memory import MemoryItem, MemoryScope
from tether.core.message import Message, Role
from tether.core.run import ErrorInfo, Run, RunSummary
from tether.core.session import Session
from tether.core.status import RunStatus, SessionStatus, StepStatus
from tether.core.step import Step, StepKind
from tether.core.usage import ZERO_USAGE, Usage
from tether.store.sql.database import Row

LoadJson = Callable[[Any], Any]

#: Separates the labels of a user-memory namespace in its stored form.
NAMESPACE_SEP = "\x1f"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_fromtimestamp = datetime.fromtimestamp
#: Above every seq (messages, runs, steps): the open end of a "before this seq" read.
MAX_SEQ = 2**62
#: Below this many microseconds (the year 2112), value / 1e6 is within a tenth of a
#: microsecond of the exact time, so fromtimestamp (which rounds to the nearest) is exact.
_FLOAT_EXACT = 2**52
#: What an INTEGER column holds; a cursor part outside this range is forged.


def to_us(moment: datetime) -> int:
    """Epoch microseconds of an aware datetime."""
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_us(value: int) -> datetime:
    """The aware datetime of epoch microseconds."""
    if 0 <= value < _FLOAT_EXACT:
        return _fromtimestamp(value / 1e6, UTC)  # a third cheaper than adding a timedelta
    return _EPOCH + timedelta(0, 0, value)  # positional: a third cheaper than microseconds=


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
    tokens = (row["input_tokens"], row["output_tokens"], row["model_requests"])
    return ZERO_USAGE if tokens == (0, 0, 0) else Usage(*tokens)


#: Statuses by their stored text (a dict lookup instead of an Enum call per row).
_SESSION_STATUS = {s.value: s for s in SessionStatus}


def session_from_row(row: Row, load: LoadJson) -> Session:
    return new_session(
        id=row["id"],
        owner=row["owner"],
        title=row["title"],
        status=_SESSION_STATUS[row["status"]],
        created_at=from_us(row["created_at"]),
        updated_at=from_us(row["updated_at"]),
        last_activity_at=from_us(row["last_activity_at"]),
        ttl_seconds=row["ttl_seconds"],
        metadata=load(row["metadata"]) or {},
        project=load(row["context"]) or {},
        closed_at=opt_dt(row["closed_at"]),
        run_count=row["run_count"] - row["deleted_runs"],
        usage=_usage(row),
        external_key=row["external_key"],
        app=row["app"],
    )


#: The columns of a session listing (list_sessions_first, list_sessions_after) and of a
#: search (search_sessions), which sessions_from_values decodes: a session's, its run count
#: net of deleted runs.
SESSION_COLUMNS = (
    "id, owner, title, status, created_at, updated_at, last_activity_at, ttl_seconds, metadata,"
    " context, closed_at, run_count - deleted_runs AS run_count, input_tokens, output_tokens,"
    " model_requests, external_key, app"
)
#: The fields a session is decoded into, in Session's order.
_SESSION_FIELDS = (
    "id",
    "owner",
    "title",
    "status",
    "created_at",
    "updated_at",
    "last_activity_at",
    "ttl_seconds",
    "metadata",
    "project",
    "closed_at",
    "run_count",
    "usage",
    "external_key",
    "app",
)
if tuple(f.name for f in dataclasses.fields(Session)) != _SESSION_FIELDS:
    raise TypeError("sessions_from_values must decode every field of Session, in order")


class _SessionSlots:
    """Session's slots without its frozen __setattr__ (as _MessageSlots for messages)."""

    __slots__ = _SESSION_FIELDS


def sessions_from_values(rows: Iterable[Iterable[Any]]) -> list[Session]:
    """The sessions of the values of rows of SESSION_COLUMNS, in column order (metadata and
    context as their JSON text: decoded as both backends' load_json would), in one loop as
    messages_from_values decodes messages; what session_from_row makes of the same rows. A
    session's times that are equal (all three for a session nothing has happened to yet)
    share one datetime."""
    sessions: list[Session] = []
    append = sessions.append
    statuses, loads, new, slots, zero = (
        _SESSION_STATUS,
        _loads,
        object.__new__,
        _SessionSlots,
        ZERO_USAGE,
    )
    at, utc, exact = _fromtimestamp, UTC, _FLOAT_EXACT
    for (
        id_,
        owner,
        title,
        status,
        created_at,
        updated_at,
        last_activity_at,
        ttl_seconds,
        metadata,
        context,
        closed_at,
        run_count,
        input_tokens,
        output_tokens,
        model_requests,
        external_key,
        app,
    ) in rows:
        session: Any = new(slots)
        session.id = id_
        session.owner = owner
        session.title = title
        session.status = statuses[status]
        created = at(created_at / 1e6, utc) if 0 <= created_at < exact else from_us(created_at)
        updated = created if updated_at == created_at else from_us(updated_at)
        session.created_at = created
        session.updated_at = updated
        session.last_activity_at = (
            updated
            if last_activity_at == updated_at
            else created
            if last_activity_at == created_at
            else from_us(last_activity_at)
        )
        session.ttl_seconds = ttl_seconds
        session.metadata = {} if metadata == "{}" else loads(metadata) or {}
        session.project = {} if context == "{}" else loads(context) or {}
        session.closed_at = None if closed_at is None else from_us(closed_at)
        session.run_count = run_count
        session.usage = (
            zero
            if input_tokens == output_tokens == model_requests == 0
            else Usage(input_tokens, output_tokens, model_requests)
        )
        session.external_key = external_key
        session.app = app
        session.__class__ = Session
        append(session)
    return sessions


def new_session(
    id: str,
    owner: str,
    title: str | None,
    status: SessionStatus,
    created_at: datetime,
    updated_at: datetime,
    last_activity_at: datetime,
    ttl_seconds: int | None,
    metadata: dict[str, Any],
    project: dict[str, Any],
    closed_at: datetime | None,
    run_count: int,
    usage: Usage,
    external_key: str | None,
    app: str | None,
) -> Session:
    """``Session(...)`` (every field given, in order), made as sessions_from_values makes
    sessions: for the client, which reads them by the thousand."""
    session: Any = _new(_SessionSlots)
    session.id = id
    session.owner = owner
    session.title = title
    session.status = status
    session.created_at = created_at
    session.updated_at = updated_at
    session.last_activity_at = last_activity_at
    session.ttl_seconds = ttl_seconds
    session.metadata = metadata
    session.project = project
    session.closed_at = closed_at
    session.run_count = run_count
    session.usage = usage
    session.external_key = external_key
    session.app = app
    session.__class__ = Session
    made: Session = session
    return made


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


def run_summary_from_row(row: Row, load: LoadJson) -> RunSummary:
    """A run's summary from a row of run_summaries_backward (a run without its input,
    metadata and context: cheaper to read and decode than the whole run)."""
    return RunSummary(
        id=row["id"],
        session_id=row["session_id"],
        seq=row["seq"],
        agent=row["agent"],
        goal=row["goal"],
        status=RunStatus(row["status"]),
        attempt=row["attempt"],
        created_at=from_us(row["created_at"]),
        started_at=opt_dt(row["started_at"]),
        ended_at=opt_dt(row["ended_at"]),
        worker_id=row["worker_id"],
        error=_error(load, row["error"]),
        output=load(row["output"]),
        usage=_usage(row),
        waiting_for=load(row["waiting_for"]),
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


_ROLES = {role.value: role for role in Role}
#: The columns message_from_row decodes, in this order: every query whose single rows it
#: decodes selects exactly these (``SELECT <MESSAGE_COLUMNS>``).
MESSAGE_COLUMNS = (
    "id, session_id, seq, role, content, run_id, metadata, created_at, item, removed_at"
)
#: The columns of a conversation read (messages_forward, messages_backward), which
#: messages_from_values decodes: a message's but its session's id (the read's own parameter),
#: with what most messages lack in one column, ``extras``: NULL for empty metadata, no item and
#: not removed; the metadata's JSON text when only it is there and an object (a stored text
#: that is an array, by import or an older version, could not be told from the third form);
#: else the JSON array of the metadata's text, the item's text (or null) and removed_at. Each
#: column a row carries costs its decoding (about 60 ns in ``sqlite3``, even a NULL): these are
#: what a read of thousands of messages spends most of its time on.
CONVERSATION_COLUMNS = (
    "id, seq, role, content, created_at, run_id, CASE WHEN item IS NULL AND removed_at IS NULL"
    " AND substr(metadata, 1, 1) = '{' THEN NULLIF(metadata, '{}')"
    " ELSE json_array(metadata, item, removed_at) END AS extras"
)


#: The fields a message is decoded into, in Message's order.
_DECODED = (
    "id",
    "session_id",
    "seq",
    "role",
    "content",
    "created_at",
    "run_id",
    "metadata",
    "item",
    "removed_at",
)
if tuple(f.name for f in dataclasses.fields(Message)) != _DECODED:
    raise TypeError("messages_from_values must decode every field of Message, in order")


class _MessageSlots:
    """Message's slots without its frozen __setattr__: a message is decoded into one (plain
    attribute stores, several times cheaper than a frozen dataclass's __init__ or its slots'
    setters, for reads of thousands of messages) and then becomes a Message by __class__
    assignment, which Python allows between classes of the same slot layout."""

    __slots__ = _DECODED


_new = object.__new__


_decode = JSONDecoder().raw_decode


def from_json(text: str) -> Any:
    """json.loads(text), several times cheaper for the short texts of metadata (json.loads
    spends about 1 µs on its own before and after the C scanner's work): the scanner's document
    when it is the whole text (as every text tether writes is), else what json.loads makes of
    it (surrounding whitespace, or its error)."""
    try:
        value, end = _decode(text)
    except ValueError:
        return _loads(text)
    return value if end == len(text) else _loads(text)


def message_from_row(row: Row) -> Message:
    """A message from a row of MESSAGE_COLUMNS (a dict from PostgreSQL, a tuple-like from
    SQLite: both give their values in column order)."""
    return message_from_values(row.values() if isinstance(row, dict) else row)


def message_from_values(values: Iterable[Any]) -> Message:
    """A message from the values of a row of MESSAGE_COLUMNS, in column order."""
    id_, session_id, seq, role, content, run_id, metadata, created_at, item, removed_at = values
    return new_message(
        id_,
        session_id,
        seq,
        _ROLES[role],
        content,
        from_us(created_at),
        run_id,
        from_json(metadata) or {},
        None if item is None else from_json(item),
        None if removed_at is None else from_us(removed_at),
    )


def conversation_from_rows(session_id: str, rows: Iterable[Row]) -> list[Message]:
    """The messages of rows of CONVERSATION_COLUMNS, as message_from_row takes rows."""
    return messages_from_values(
        session_id, (row.values() if isinstance(row, dict) else row for row in rows)
    )


def messages_from_values(session_id: str, rows: Iterable[Iterable[Any]]) -> list[Message]:
    """The messages of one session from the values of rows of CONVERSATION_COLUMNS, in
    column order (decoded as both backends' load_json would). One loop makes them all, as
    new_message does, calling nothing per row but what a row needs. Messages appended
    together share their time (one add_many, a framework's turn): one datetime serves each
    run of equal times, as their append returned them."""
    messages: list[Message] = []
    append = messages.append
    roles, load, new, slots = _ROLES, from_json, _new, _MessageSlots
    at, utc, exact = _fromtimestamp, UTC, _FLOAT_EXACT
    last: int | None = None
    created: datetime | None = None
    for id_, seq, role, content, created_at, run_id, extras in rows:
        message: Any = new(slots)
        message.id = id_
        message.session_id = session_id
        message.seq = seq
        message.role = roles[role]
        message.content = content
        if created_at != last:  # (from_us, inlined)
            created = at(created_at / 1e6, utc) if 0 <= created_at < exact else from_us(created_at)
            last = created_at
        message.created_at = created
        message.run_id = run_id
        if extras is None:
            message.metadata = {}
            message.item = None
            message.removed_at = None
        elif extras[0] != "[":  # metadata (a JSON object) alone
            message.metadata = load(extras) or {}
            message.item = None
            message.removed_at = None
        else:
            metadata, item, removed_at = load(extras)
            message.metadata = {} if metadata == "{}" else load(metadata) or {}
            message.item = None if item is None else load(item)
            message.removed_at = None if removed_at is None else from_us(removed_at)
        message.__class__ = Message
        append(message)
    return messages


def new_message(
    id: str,
    session_id: str,
    seq: int,
    role: Role,
    content: str,
    created_at: datetime,
    run_id: str | None,
    metadata: dict[str, Any],
    item: dict[str, Any] | None,
    removed_at: datetime | None,
) -> Message:
    """``Message(...)`` (every field given, in order), made as _MessageSlots describes: for
    the stores, which make and read messages by the thousand."""
    message: Any = _new(_MessageSlots)
    message.id = id
    message.session_id = session_id
    message.seq = seq
    message.role = role
    message.content = content
    message.created_at = created_at
    message.run_id = run_id
    message.metadata = metadata
    message.item = item
    message.removed_at = removed_at
    message.__class__ = Message
    made: Message = message
    return made


#: A message as insert_messages writes it: (id, seq, role, content, metadata's JSON text, item's
#: JSON text or None).
MessageRow = tuple[str, int, str, str, str, str | None]


def message_event_refs(rows: Iterable[MessageRow]) -> list[str]:
    """The JSON texts of the message.added events' data of messages of one session, each
    naming its message by its seq: the events_read view (schema 15, SQLite) reads each back as
    the full copy message_event_texts would have written, from the message's row."""
    return [message_event_ref(row[1]) for row in rows]


def message_event_texts(
    rows: Iterable[MessageRow], session_id: str, run_id: str | None, created_at: str
) -> list[str]:
    """The JSON texts of the message.added events' data of messages of one session, run and
    time (created_at: its ISO text), one per row: ``{"message": serde.to_data(message)}``
    encoded as the stores encode JSON (compact, non-ASCII kept). Built from the JSON texts of
    the metadata and item columns instead of encoding them again, with what the messages share
    encoded once (an append writes one per message); the ids are tether's (new_id: hex digits
    and dashes, nothing to escape)."""
    run = "null" if run_id is None else _string(run_id)
    session = f'","session_id":{_string(session_id)},"seq":'
    at = f',"created_at":"{created_at}","run_id":{run},"metadata":'
    return [
        f'{{"message":{{"id":"{id_}{session}{seq},"role":"{role}","content":{_string(content)}'
        f'{at}{metadata},"item":{"null" if item is None else item},"removed_at":null}}}}'
        for id_, seq, role, content, metadata, item in rows
    ]


def stored_scope_id(scope: MemoryScope, scope_id: str, owner: str | None) -> str:
    """The scope_id column of an item: an app's items are stored under their owner too, so
    that two owners' apps of the same name share nothing (owners are printable: the separator
    never occurs in one)."""
    if scope is not MemoryScope.APP:
        return scope_id
    if owner is None:
        raise ValueError("app memory is always read and written for an owner")
    return f"{owner}{NAMESPACE_SEP}{scope_id}"


def memory_from_row(row: Row, load: LoadJson) -> MemoryItem:
    scope = MemoryScope(row["scope"])
    scope_id = row["scope_id"]
    if scope is MemoryScope.APP:
        scope_id = scope_id.split(NAMESPACE_SEP, 1)[1]
    return MemoryItem(
        scope=scope,
        scope_id=scope_id,
        key=row["key"],
        value=load(row["value"]),
        created_at=from_us(row["created_at"]),
        updated_at=from_us(row["updated_at"]),
        source_run_id=row["source_run_id"],
        namespace=split_namespace(row["namespace"]),
    )


def memory_by_scope(
    rows: Iterable[Row], load: LoadJson, app: bool
) -> dict[MemoryScope, list[MemoryItem]]:
    """The items of rows of memory_of_run by scope (each scope's rows in list_memory's order),
    every scope a key ([] when it has none; the app's only with app)."""
    found: dict[MemoryScope, list[MemoryItem]] = {
        MemoryScope.RUN: [],
        MemoryScope.SESSION: [],
        MemoryScope.USER: [],
    }
    if app:
        found[MemoryScope.APP] = []
    for row in rows:
        item = memory_from_row(row, load)
        found[item.scope].append(item)
    return found


#: How the data of a message.added event stored by reference begins (message_event_refs).
MESSAGE_REF = '{"message_seq":'


def event_from_row(row: Row, load: LoadJson) -> Event:
    """An event from a row of events_of_session or events_of_run: one stored by reference
    (SQLite, schema 15) gets the data of its message's columns there, as it was appended."""
    data, created_at = row["data"], from_us(row["created_at"])
    if isinstance(data, str) and data.startswith(MESSAGE_REF) and row["message_id"] is not None:
        data = {"message": _message_data(row, load, created_at)}
    else:
        data = load(data) or {}
    return Event(
        id=row["id"],
        type=EventType(row["type"]),
        owner=row["owner"],
        created_at=created_at,
        session_id=row["session_id"],
        run_id=row["run_id"],
        data=data,
    )


def _message_data(row: Row, load: LoadJson, event_at: datetime) -> dict[str, Any]:
    """``serde.to_data(message)`` of the message a row names (as message_event_texts encodes
    it, then decoded), removed_at null as it was when the message was added; its time is its
    event's (event_at) unless the row says otherwise."""
    item, at = row["message_item"], row["message_created_at"]
    return {
        "id": row["message_id"],
        "session_id": row["session_id"],
        "seq": row["message_seq"],
        "role": row["message_role"],
        "content": row["message_content"],
        "created_at": to_iso(event_at if at == row["created_at"] else from_us(at)),
        "run_id": row["message_run_id"],
        "metadata": load(row["message_metadata"]),
        "item": None if item is None else load(item),
        "removed_at": None,
    }


def message_event_ref(seq: int) -> str:
    """The data of one message.added event by reference (message_event_refs' text for the
    message of seq)."""
    return f'{{"message_seq":{seq}}}'
