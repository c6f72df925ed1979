"""The API's routes on the app's own router, each built for that app: a request matches once.

FastAPI 0.165 keeps an included router as one route of the app: a request is matched against
the router's routes twice (once to choose the router, once inside it), each through a layer of
per-route context (in process, a tenth to a quarter of a request's CPU). The routes the API's
routers hold are complete (prefix, tags, the router's dependencies and responses are already
theirs), so an app can serve copies of them directly. A copy is built for each app, not
shared: a route's handler binds the provider of dependency overrides when it is built, and
routes built for the app's router resolve ``app.dependency_overrides`` as included ones do.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from starlette.routing import Match
from starlette.types import Scope

#: APIRoute's parameters that are not options copied from the route: set here for the app.
_NOT_COPIED = frozenset({"self", "path", "endpoint", "dependency_overrides_provider"})


class ServedRoute(APIRoute):
    """An API route on the app's own router. A request whose path its pattern does not match is
    told so at once: Starlette's answer, without FastAPI's look for the context of an included
    router first (the app's router is included nowhere: tether's middleware guards it only as
    the app's own)."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        plain = scope["type"] == "http" and not scope.get("root_path")
        if plain and self.path_regex.match(scope["path"]) is None:
            return Match.NONE, {}
        return super().matches(scope)


def add_routes(app: FastAPI, routers: Iterable[APIRouter]) -> list[APIRoute]:
    """Add copies of the routers' routes to app's router, in order; the copies."""
    options = [
        name for name in inspect.signature(APIRoute.__init__).parameters if name not in _NOT_COPIED
    ]
    added = []
    for router in routers:
        for route in router.routes:
            if not isinstance(route, APIRoute):
                raise TypeError(f"{route!r} is not an API route")
            copied = {name: getattr(route, name) for name in options if hasattr(route, name)}
            kind = ServedRoute if type(route) is APIRoute else type(route)
            app.router.add_api_route(
                route.path, route.endpoint, route_class_override=kind, **copied
            )
            built = app.router.routes[-1]
            assert isinstance(built, APIRoute)
            added.append(built)
    return added
