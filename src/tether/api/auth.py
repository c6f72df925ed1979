"""Bearer API keys: every routed request outside the public paths acts for the key's owner.

Authentication runs as ASGI middleware, before the body is read or validated, so a request
without a valid key learns nothing but 401. Paths no route serves fall through to the 404 problem.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.routing import Match, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from tether.api.errors import error_response
from tether.core.errors import Unauthorized
from tether.runtime.api_keys import ApiKeys
from tether.runtime.service import Service

#: Reachable without a key: health for probes, the spec and its interactive docs.
PUBLIC_PATHS = frozenset({"/healthz", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})
#: The owner every request acts for when the server runs with --no-auth.
LOCAL_OWNER = "local"
_OWNER_KEY = "tether.owner"


class Authenticate:
    """ASGI middleware: resolve ``Authorization: Bearer KEY`` to an owner, or answer 401."""

    def __init__(self, app: ASGIApp, *, required: bool, router: Router) -> None:
        self.app = app
        #: False = no authentication: every request acts for the local owner.
        self.required = required
        self.router = router

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS or not self._routed(scope):
            await self.app(scope, receive, send)
            return
        if not self.required:
            scope[_OWNER_KEY] = LOCAL_OWNER
            await self.app(scope, receive, send)
            return
        keys: ApiKeys = scope["app"].state.keys
        secret = _bearer(scope)
        owner = None if secret is None else await keys.owner_of(secret)
        if owner is None:
            error = Unauthorized(
                "a valid API key is required: send Authorization: Bearer <key>"
                if secret is None
                else "the API key is not valid (unknown or revoked)"
            )
            await error_response(error)(scope, receive, send)
            return
        scope[_OWNER_KEY] = owner
        await self.app(scope, receive, send)

    def _routed(self, scope: Scope) -> bool:
        return any(route.matches(scope)[0] is not Match.NONE for route in self.router.routes)


def _bearer(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, secret = value.decode("latin-1").partition(" ")
            secret = secret.strip()
            return secret if scheme.lower() == "bearer" and secret else None
    return None


#: Declares the scheme in the OpenAPI spec; the middleware above does the checking.
_bearer_scheme = HTTPBearer(auto_error=False, description="An API key: `tether keys create`.")


async def service(
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer_scheme)],
) -> Service:
    """The service acting for the request's owner."""
    base: Service = request.app.state.service
    return base.for_owner(request.scope[_OWNER_KEY])


#: Route parameter: ``svc: Owned`` is the service acting for the caller.
Owned = Annotated[Service, Depends(service)]
