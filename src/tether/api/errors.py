"""Errors as application/problem+json (RFC 9457) with a stable ``code``: one table for all.

TetherError subclasses carry their own code and HTTP status (``core.errors``); FastAPI's and
Starlette's errors are mapped here. Nothing a client sends can produce a traceback in a response:
the last-resort handler logs the error and answers a problem without internals.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.routing import Match

from tether.core.errors import TetherError, Unauthorized, UsageError

log = logging.getLogger("tether.api")

PROBLEM_JSON = "application/problem+json"
#: Members every problem has; an error's details never overwrite them.
_RESERVED = frozenset({"type", "title", "status", "detail", "code", "errors"})
#: A URL or an absolute path in a message: a 5xx says what happened, not where the server keeps
#: its files or databases (the log has the whole message).
_WHERE = re.compile(r"[a-z][a-z0-9+.-]*://\S+|(?<![\w/.~])~?/[^\s:;,'\"()]+")
#: Codes of the HTTP errors raised by the framework itself.
_HTTP_CODES = {
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


def problem(
    status: int,
    code: str,
    detail: str,
    /,
    *,
    title: str | None = None,
    headers: Mapping[str, str] | None = None,
    errors: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> Response:
    """A problem+json response; errors lists what is wrong field by field. A server error's
    detail names no path nor URL. extra never replaces a member every problem has (an error's
    ``status`` detail, say)."""
    body: dict[str, Any] = {
        "type": f"urn:tether:error:{code}",
        "title": title or HTTPStatus(status).phrase,
        "status": status,
        "detail": _WHERE.sub("(…)", detail) if status >= 500 else detail,
        "code": code,
    }
    body.update({k: v for k, v in extra.items() if k not in _RESERVED})
    if errors is not None:
        body["errors"] = errors
    content = json.dumps(body, ensure_ascii=False, default=str).encode()
    return Response(content, status_code=status, headers=headers, media_type=PROBLEM_JSON)


def error_response(error: TetherError) -> Response:
    """The problem for one of tether's errors; its details become extra members."""
    headers = {"WWW-Authenticate": "Bearer"} if isinstance(error, Unauthorized) else None
    title = (type(error).__doc__ or "").strip().splitlines()[0] or None
    return problem(
        error.http_status, error.code, error.message, title=title, headers=headers, **error.details
    )


def _field(loc: Sequence[Any]) -> str:
    """A readable name for where a validation error is: body.goal, query.limit, header.x."""
    return ".".join(str(part) for part in loc) or "request"


def validation_response(errors: Sequence[Any]) -> Response:
    """422 validation_error naming every field that is wrong."""
    items = []
    for error in errors:
        loc = list(error.get("loc", ()))
        if error.get("type") == "json_invalid":
            reason = (error.get("ctx") or {}).get("error", "not valid JSON")
            where = f" at position {loc[-1]}" if len(loc) > 1 else ""
            items.append({"field": "body", "message": f"invalid JSON: {reason}{where}"})
            continue
        items.append(
            {
                "field": _field(loc),
                "message": str(error.get("msg", "invalid")),
                "type": error.get("type"),
            }
        )
    detail = "; ".join(f"{item['field']}: {item['message']}" for item in items)
    return problem(
        422,
        UsageError.code,
        detail or "the request is not valid",
        title="The request is not valid.",
        errors=items,
    )


async def _on_tether_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, TetherError)
    if exc.http_status >= 500:
        log.error("request failed: %s %s: %r", request.method, request.url.path, exc)
    return error_response(exc)


async def _on_validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    kind = request.headers.get("content-type", "")
    if kind and "json" not in kind and any(list(e.get("loc", ()))[:1] == ["body"] for e in errors):
        # e.g. `curl -d '{...}'`, which sends a form: say what the body must be
        errors.insert(
            0,
            {
                "loc": ["header", "content-type"],
                "msg": f"the body must be JSON sent as application/json, not {kind.split(';')[0]}",
                "type": "content_type",
            },
        )
    return validation_response(errors)


async def _on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 400:
        # FastAPI's answer to a body it could not parse at all (e.g. nested too deeply).
        return validation_response([{"loc": ["body"], "msg": str(exc.detail), "type": "invalid"}])
    code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
    detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
    headers = exc.headers
    if exc.status_code == 404:
        detail = f"no route {request.method} {request.url.path}"
    elif exc.status_code == 405:
        allowed = _methods(request)
        headers = {**(headers or {}), "Allow": ", ".join(allowed)}
        detail = f"{request.method} is not allowed on this path (allowed: {', '.join(allowed)})"
    return problem(exc.status_code, code, detail, headers=headers)


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _methods(request: Request) -> list[str]:
    """Every method some route of the app answers on this path (a 405's Allow header)."""
    routes = request.app.router.routes
    return [
        method
        for method in _METHODS
        if any(r.matches({**request.scope, "method": method})[0] is Match.FULL for r in routes)
    ]


async def _on_unicode_error(request: Request, exc: Exception) -> Response:
    # Text the database cannot encode, such as a lone UTF-16 surrogate escaped in JSON.
    return validation_response(
        [{"loc": ["body"], "msg": "text must be valid Unicode (no lone surrogates)"}]
    )


async def _on_overflow(request: Request, exc: Exception) -> Response:
    # A number too large for what it feeds (a float → int, a 64-bit column) that no check
    # caught first: still the caller's number, so a 422 rather than a 500.
    log.warning("numeric overflow on %s %s: %r", request.method, request.url.path, exc)
    return validation_response([{"loc": ["request"], "msg": "a number is out of range"}])


async def _on_anything_else(request: Request, exc: Exception) -> Response:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return problem(
        500, "internal_error", "an unexpected error happened on the server; it is logged"
    )


def install(app: FastAPI) -> None:
    """Register the handlers that turn every error into a problem."""
    app.add_exception_handler(TetherError, _on_tether_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(HTTPException, _on_http_error)
    app.add_exception_handler(UnicodeError, _on_unicode_error)
    app.add_exception_handler(OverflowError, _on_overflow)
    app.add_exception_handler(Exception, _on_anything_else)
