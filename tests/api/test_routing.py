"""The app's routes match a request as FastAPI's own routes would: ServedRoute only answers
"no match" sooner (tether.api.routing)."""

from __future__ import annotations

import re

from fastapi.routing import APIRoute
from starlette.types import Scope

from tether.api import create_app
from tether.api.routing import ServedRoute

#: A path parameter of a route's path ({name} or {name:path}).
_PARAMETER = re.compile(r"\{[^}]+\}")


def test_every_route_matches_each_request_as_fastapi_would() -> None:
    routes = [route for route in create_app().routes if isinstance(route, ServedRoute)]
    assert len(routes) > 100
    paths = {_PARAMETER.sub("x", route.path) for route in routes}
    paths |= {"/", "/v1", "/v1/sessions/", "/v1/sessions/a/b/c/d/e", "/healthz/x", "/ui/x"}
    scopes: list[Scope] = [
        {"type": "http", "method": method, "path": path, "root_path": root, "headers": []}
        for path in sorted(paths)
        for method in ("GET", "POST", "DELETE")
        for root in ("", "/mounted")
    ]
    scopes += [{**scope, "path": "/mounted" + scope["path"]} for scope in scopes]
    matched = 0
    for route in routes:
        for scope in scopes:
            served = route.matches(dict(scope))
            assert served == APIRoute.matches(route, dict(scope)), (route.path, scope)
            matched += served[0].value > 0
    assert matched > len(routes)  # (each route matched its own path at least)
