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


def record(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> JSONResponse:
    """One record as JSON."""
    return JSONResponse(data_of(value), status_code=status, headers=headers)


def page(items: Iterable[Any], next_cursor: str | None = None) -> JSONResponse:
    """A list as ``{"data": [...], "next_cursor": str|null}``."""
    return JSONResponse({"data": data_of(list(items)), "next_cursor": next_cursor})


#: JSONResponse's own encoding (starlette's JSONResponse.render), made once; and the string
#: encoding it uses for every str (ensure_ascii=False: only quotes, backslashes and control
#: characters are escaped).
_encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
_string = encode_basestring


def message_page(messages: Iterable[Message], next_cursor: str | None = None) -> Response:
    """``page(messages, next_cursor)``, byte for byte, for messages as the store reads them
    (metadata and item as JSON values): each message written straight as JSON text, its keys
    in Message's order, instead of to_data's walk of every field and then json's walk of the
    result (a page of 1000 messages spends most of its time here). Messages appended together
    share their time: one ISO string serves each run of them."""
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
    body = f'{{"data":[{",".join(parts)}],"next_cursor":{encode(next_cursor)}}}'
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
