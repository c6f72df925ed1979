"""The OpenAPI spec, true to what the API answers: every error is ``application/problem+json``
(the ``Problem`` schema), and each operation declares the errors it can answer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

from tether.api.auth import SCHEME, SCHEME_NAME, acts_for_owner
from tether.api.errors import PROBLEM_JSON

PROBLEM_SCHEMA: dict[str, Any] = {
    "title": "Problem",
    "description": "An error (RFC 9457), with a stable `code`; `errors` names each field that "
    "is wrong. Errors may carry more members (such as `active_run_id`).",
    "type": "object",
    "required": ["type", "title", "status", "detail", "code"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "code": {"type": "string"},
        "errors": {"type": "array", "items": {"type": "object"}},
    },
}
#: Errors any operation may answer, and those of authenticated operations or with a body.
_ANY = {
    421: "The Host is not one this server answers for (`host_not_allowed`).",
    422: "The request is not valid (`validation_error`, naming each field).",
    503: "The database is unavailable or busy right now; retry shortly.",
}
_AUTHENTICATED = {
    401: "A valid API key is required (`unauthorized`).",
    404: "No such object, or another owner's (`not_found`).",
    409: "The object's state does not allow this (a closed session, a busy one…).",
}
_WITH_BODY = {413: "The request body is larger than the server's limit (`payload_too_large`)."}


def install(app: FastAPI, routes: Sequence[BaseRoute]) -> None:
    """Make app.openapi() declare the API key (on the operations of routes, the API's routes on
    app) and the problems, in place, on the spec FastAPI builds."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        spec = build()
        declare_security(spec, routes)
        declare_problems(spec)
        return spec

    app.openapi = openapi  # type: ignore[method-assign]


def declare_security(spec: dict[str, Any], routes: Sequence[BaseRoute]) -> None:
    """Declare the API key on every operation acting for a key's owner (idempotent)."""
    paths = spec.get("paths", {})
    secured = [
        operation
        for route in routes
        if isinstance(route, APIRoute) and route.include_in_schema and acts_for_owner(route)
        for method in route.methods or ()
        if (operation := paths.get(route.path_format, {}).get(method.lower())) is not None
    ]
    if not secured:
        return
    spec.setdefault("components", {}).setdefault("securitySchemes", {})[SCHEME_NAME] = SCHEME
    for operation in secured:
        operation["security"] = [{SCHEME_NAME: []}]


def declare_problems(spec: dict[str, Any]) -> None:
    """Declare Problem answers on every operation of spec (idempotent)."""
    schemas = spec.setdefault("components", {}).setdefault("schemas", {})
    schemas["Problem"] = PROBLEM_SCHEMA
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    problem = {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for item in spec.get("paths", {}).values():
        for operation in item.values():
            errors = dict(_ANY)
            if operation.get("security"):
                errors.update(_AUTHENTICATED)
            if "requestBody" in operation:
                errors.update(_WITH_BODY)
            responses = operation.setdefault("responses", {})
            for status, description in errors.items():
                responses[str(status)] = {"description": description, "content": problem}
