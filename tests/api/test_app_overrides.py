"""An application embedding the API can override its dependencies, as with any FastAPI app:
the routes resolve them through the app that serves them."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import HTTPException, Request
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from tether.api import create_app
from tether.api.app import ROUTERS
from tether.api.auth import acts_for_owner, service
from tether.api.settings import ApiSettings
from tether.runtime.service import Service
from tether.store.factory import open_store

#: A path parameter of a route's path ({name} or {name:path}).
_PARAMETER = re.compile(r"\{[^}]+\}")


def test_a_dependency_override_reaches_the_routes(tmp_path: Path) -> None:
    app = create_app(ApiSettings(db=str(tmp_path / "served.db"), auth=False, workers=0))

    async def other() -> AsyncIterator[Service]:
        store = open_store(str(tmp_path / "other.db"))
        try:
            svc = Service(store)
            await svc.create_session(title="from the override")
            yield svc
        finally:
            await store.close()

    app.dependency_overrides[service] = other
    with TestClient(app, base_url="http://127.0.0.1") as client:
        listed = client.get("/v1/sessions")
    assert listed.status_code == 200, listed.text
    assert [s["title"] for s in listed.json()["data"]] == ["from the override"]


def test_every_route_of_the_api_resolves_the_apps_overrides(tmp_path: Path) -> None:
    """Each route acting for an owner is reached by its own path and method, and resolves the
    service through the app's overrides; another app's routes are not affected."""
    app = create_app(ApiSettings(auth=False, workers=0))
    reached: list[tuple[str, str]] = []

    async def refusing(request: Request) -> Service:
        route = request.scope["route"]
        assert isinstance(route, APIRoute)
        reached.append((request.method, route.path))
        raise HTTPException(status_code=418)

    app.dependency_overrides[service] = refusing
    expected = [
        (method, route.path)
        for route in _api_routes()
        if acts_for_owner(route)
        for method in sorted(route.methods or ())
    ]
    assert len(expected) > 100
    with TestClient(app, base_url="http://127.0.0.1") as client:
        for method, path in expected:
            answer = client.request(method, _PARAMETER.sub("x", path))
            assert answer.status_code == 418, (method, path, answer.text)
    assert reached == expected
    other = create_app(ApiSettings(db=str(tmp_path / "other.db"), auth=False, workers=0))
    with TestClient(other, base_url="http://127.0.0.1") as client:
        assert client.get("/v1/sessions").status_code == 200


def test_the_spec_lists_every_route_of_the_api() -> None:
    spec = create_app().openapi()
    listed = {(method.lower(), path) for path, item in spec["paths"].items() for method in item}
    wanted = {
        (method.lower(), route.path_format)
        for route in _api_routes()
        if route.include_in_schema
        for method in route.methods or ()
    }
    assert len(wanted) > 40 and listed == wanted


def _api_routes() -> list[APIRoute]:
    """The API's routes as its routers declare them."""
    routes = [route for router in ROUTERS for route in router.routes]
    assert all(isinstance(route, APIRoute) for route in routes)
    return [route for route in routes if isinstance(route, APIRoute)]
