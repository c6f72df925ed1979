"""Responses: records in their ``to_data`` form (sessions with ``expires_at``), lists as pages."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from starlette.responses import JSONResponse, Response

from tether.core.clock import to_iso
from tether.core.errors import UsageError
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
