"""Responses: records in their ``to_data`` form (sessions with ``expires_at``), lists as pages."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from json.encoder import encode_basestring
from typing import Any

from starlette.responses import JSONResponse, Response

from tether.core.clock import to_iso
from tether.core.errors import UsageError
from tether.core.message import Message
from tether.core.serde import to_data
from tether.core.session import Session
from tether.store.cursors import decode_cursor, encode_cursor


def data_of(value: Any) -> Any:
    """The wire form of a record (or a list of them)."""
    if isinstance(value, Session):
        out: dict[str, Any] = to_data(value)
        out["expires_at"] = to_iso(value.expires_at)
        return out
    if isinstance(value, list):
        return [data_of(v) for v in value]
    return to_data(value)


def record(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """One record as JSON: the bytes ``JSONResponse(data_of(value))`` writes, a message or a
    session written straight as JSON text (as message_page and session_page write them)."""
    if isinstance(value, Message):
        text = _message_texts((value,))[0]
    elif isinstance(value, Session):
        text = _session_texts((value,))[0]
    else:
        text = _encode(data_of(value))
    return Response(text.encode("utf-8"), status, headers, media_type="application/json")


def page(items: Iterable[Any], next_cursor: str | None = None) -> JSONResponse:
    """A list as ``{"data": [...], "next_cursor": str|null}``."""
    return JSONResponse({"data": data_of(list(items)), "next_cursor": next_cursor})


#: The string encoding JSONResponse uses for every str (ensure_ascii=False: only quotes,
#: backslashes and control characters are escaped).
_string = encode_basestring
_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
#: The C encoder json.dumps makes on each call with JSONResponse's arguments (starlette's
#: JSONResponse.render), made once: the same text, without a JSONEncoder built per value. It
#: skips the check for circular references: the values it writes are what json.loads read.
_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)  # (typeshed omits it)
_c_encoder = _make_encoder and _make_encoder(
    None, _encoder.default, _string, None, ":", ",", False, False, False
)


def _encode(value: Any) -> str:
    """value as JSONResponse writes it."""
    if _c_encoder is None:  # (a Python without the json accelerator)
        return _encoder.encode(value)
    return "".join(_c_encoder(value, 0))


def message_page(messages: Iterable[Message], next_cursor: str | None = None) -> Response:
    """``page(messages, next_cursor)``, byte for byte, for messages as the store reads them
    (metadata and item as JSON values): each message written straight as JSON text, its keys
    in Message's order, instead of to_data's walk of every field and then json's walk of the
    result (a page of 1000 messages spends most of its time here). Messages appended together
    share their time: one ISO string serves each run of them."""
    return _page_response(_message_texts(messages), next_cursor)


def _message_texts(messages: Iterable[Message]) -> list[str]:
    """Each message as JSON text."""
    parts: list[str] = []
    append, string, encode = parts.append, _string, _encode
    created = ""
    last: datetime | None = None
    for m in messages:
        if m.created_at is not last:
            last = m.created_at
            created = f'"{to_iso(last)}"'  # (digits, -, :, ., T and Z: nothing to escape)
        run_id, metadata, item, removed = m.run_id, m.metadata, m.item, m.removed_at
        gone = "null" if removed is None else f'"{to_iso(removed)}"'
        append(
            f'{{"id":{string(m.id)},"session_id":{string(m.session_id)},"seq":{m.seq!r},'
            f'"role":{string(m.role._value_)},"content":{string(m.content)},'
            f'"created_at":{created},"run_id":{"null" if run_id is None else string(run_id)},'
            f'"metadata":{"{}" if metadata == {} else encode(metadata)},'
            f'"item":{"null" if item is None else encode(item)},'
            f'"removed_at":{gone}}}'
        )
    return parts


def session_page(sessions: Iterable[Session], next_cursor: str | None = None) -> Response:
    """``page(sessions, next_cursor)``, byte for byte, for sessions as the store reads them
    (metadata and project as JSON values), written as message_page writes messages: keys in
    Session's order, then the project's former name (context) and expires_at. A time a
    session's fields share (all three for a session nothing has happened to yet) is written
    once."""
    return _page_response(_session_texts(sessions), next_cursor)


def _session_texts(sessions: Iterable[Session]) -> list[str]:
    """Each session as JSON text."""
    parts: list[str] = []
    append, string, encode = parts.append, _string, _encode
    for s in sessions:
        title, ttl, usage = s.title, s.ttl_seconds, s.usage
        key, app, metadata, project = s.external_key, s.app, s.metadata, s.project
        created, updated, active = s.created_at, s.updated_at, s.last_activity_at
        created_at = to_iso(created)  # (times: digits, -, :, ., T and Z: nothing to escape)
        updated_at = created_at if updated is created else to_iso(updated)
        if active is updated:
            active_at = updated_at
        else:
            active_at = created_at if active is created else to_iso(active)
        expires, ended = s.expires_at, s.closed_at
        expires_at = "null" if expires is None else f'"{to_iso(expires)}"'
        closed_at = "null" if ended is None else f'"{to_iso(ended)}"'
        inputs, outputs = usage.input_tokens, usage.output_tokens
        project_json = "{}" if project == {} else encode(project)
        append(
            f'{{"id":{string(s.id)},"owner":{string(s.owner)},'
            f'"title":{"null" if title is None else string(title)},'
            f'"status":"{s.status._value_}","created_at":"{created_at}",'
            f'"updated_at":"{updated_at}","last_activity_at":"{active_at}",'
            f'"ttl_seconds":{"null" if ttl is None else repr(ttl)},'
            f'"metadata":{"{}" if metadata == {} else encode(metadata)},'
            f'"project":{project_json},'
            f'"closed_at":{closed_at},"run_count":{s.run_count!r},'
            f'"usage":{{"input_tokens":{inputs!r},'
            f'"output_tokens":{outputs!r},'
            f'"requests":{usage.requests!r},'
            f'"total_tokens":{inputs + outputs!r}}},'
            f'"external_key":{"null" if key is None else string(key)},'
            f'"app":{"null" if app is None else string(app)},'
            f'"context":{project_json},"expires_at":{expires_at}}}'
        )
    return parts


def _page_response(records: list[str], next_cursor: str | None) -> Response:
    """A page of records already written as JSON: ``{"data": [...], "next_cursor": ...}``."""
    body = f'{{"data":[{",".join(records)}],"next_cursor":{_encode(next_cursor)}}}'
    return Response(body.encode("utf-8"), media_type="application/json")


def listing(items: Iterable[Any], status: int = 200) -> JSONResponse:
    """A whole list (not a page) as ``{"data": [...]}``."""
    return JSONResponse({"data": data_of(list(items))}, status_code=status)


def slice_page(items: list[Any], limit: int, cursor: str | None) -> JSONResponse:
    """A page of a list the service returns whole; the cursor is the offset of the next page."""
    offset = 0 if cursor is None else decode_cursor(cursor, int)[0]
    if offset < 0:
        raise UsageError(f"invalid cursor {cursor!r}")
    chunk = items[offset : offset + limit]
    more = offset + limit < len(items)
    return page(chunk, encode_cursor(offset + limit) if more else None)


def no_content() -> Response:
    return Response(status_code=204)
