"""API keys: every routed request outside the public paths acts for the key's owner.

The key comes as ``Authorization: Bearer KEY`` or, as the LangGraph SDK sends it, ``x-api-key``.

Authentication runs as ASGI middleware, before the body is read or validated, so a request
without a valid key learns nothing but 401. It guards the API's own routes; paths no route
serves fall through to the 404 problem (the web UI authenticates its paths itself).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated

from fastapi import Depends, Request
from fastapi.dependencies.models import Dependant
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from tether.api.errors import error_response
from tether.core.errors import TetherError, Unauthorized
from tether.runtime.api_keys import ApiKeys
from tether.runtime.service import Service
from tether.runtime.sse import Alive

#: Reachable without a key: health for probes (LangGraph's /ok and /info too). The spec
#: (/openapi.json), its docs (/docs) and the metrics (/metrics, which check their own token,
#: see api/metrics.py) are not routes of the API: nothing here guards them.
PUBLIC_PATHS = frozenset({"/healthz", "/ok", "/info"})
#: The owner every request acts for when the server runs with --no-auth.
LOCAL_OWNER = "local"
_OWNER_KEY = "tether.owner"
_SECRET_KEY = "tether.api_key"
_NAMED_GROUP = re.compile(r"\(\?P<\w+>")


class Authenticate:
    """ASGI middleware: resolve ``Authorization: Bearer KEY`` (or ``x-api-key: KEY``) to an
    owner, or answer 401, on every path one of routes serves."""

    def __init__(self, app: ASGIApp, *, required: bool, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        #: False = no authentication: every request acts for the local owner.
        self.required = required
        self._served = _any_path(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS or not self._routed(scope):
            await self.app(scope, receive, send)
            return
        if not self.required:
            scope[_OWNER_KEY] = LOCAL_OWNER
            await self.app(scope, receive, send)
            return
        keys: ApiKeys = scope["app"].state.keys
        secret = _secret(scope)
        try:
            owner = None if secret is None else await keys.owner_of(secret)
        except TetherError as exc:  # e.g. the database is unavailable: 503, not a crash
            await error_response(exc)(scope, receive, send)
            return
        if owner is None:
            error = Unauthorized(
                "a valid API key is required: send Authorization: Bearer <key> (or x-api-key)"
                if secret is None
                else "the API key is not valid (unknown or revoked)"
            )
            await error_response(error)(scope, receive, send)
            return
        scope[_OWNER_KEY] = owner
        scope[_SECRET_KEY] = secret
        await self.app(scope, receive, send)

    def _routed(self, scope: Scope) -> bool:
        path: str = scope["path"]
        root = scope.get("root_path", "")
        if root and path.startswith(root + "/"):  # as the routes see it (Starlette's rule)
            path = path[len(root) :]
        return self._served.match(path) is not None


def _any_path(routes: Sequence[BaseRoute]) -> re.Pattern[str]:
    """One regex for the paths the routes serve (their own path regexes, parameters unnamed):
    a request's path is matched once, not route by route."""
    patterns = []
    for route in routes:
        regex = getattr(route, "path_regex", None)
        if not isinstance(regex, re.Pattern):
            raise TypeError(f"{route!r} has no path regex to authenticate by")
        patterns.append(f"(?:{_NAMED_GROUP.sub('(?:', regex.pattern)})")
    return re.compile("|".join(patterns))


def key_alive(request: Request) -> Alive | None:
    """What an open stream checks at each heartbeat: that the request's key is still valid
    (None under --no-auth, where there is no key)."""
    secret: str | None = request.scope.get(_SECRET_KEY)
    if secret is None:
        return None
    keys: ApiKeys = request.app.state.keys
    owner: str = request.scope[_OWNER_KEY]

    async def alive() -> bool:
        return await keys.owner_of(secret) == owner

    return alive


def _secret(scope: Scope) -> str | None:
    """The key of ``Authorization: Bearer KEY``, else of ``x-api-key: KEY``."""
    api_key: str | None = None
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, secret = value.decode("latin-1").partition(" ")
            secret = secret.strip()
            if scheme.lower() == "bearer" and secret:
                return str(secret)
        elif name == b"x-api-key":
            api_key = str(value.decode("latin-1")).strip() or None
    return api_key


async def service(request: Request) -> Service:
    """The service acting for the request's owner."""
    base: Service = request.app.state.service
    return base.for_owner(request.scope[_OWNER_KEY])


#: Route parameter: ``svc: Owned`` is the service acting for the caller.
Owned = Annotated[Service, Depends(service)]

#: The API key as the OpenAPI spec declares it (the middleware above does the checking; a
#: security dependency on every route would only parse the header again, per request).
SCHEME_NAME = "HTTPBearer"
SCHEME = {"type": "http", "description": "An API key: `tether keys create`.", "scheme": "bearer"}


def acts_for_owner(route: BaseRoute) -> bool:
    """Whether route depends on ``service`` (directly or through another dependency)."""
    dependant: Dependant | None = getattr(route, "dependant", None)
    pending = [] if dependant is None else [dependant]
    while pending:
        current = pending.pop()
        if current.call is service:
            return True
        pending.extend(current.dependencies)
    return False
