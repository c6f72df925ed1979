"""An application embedding the API can override its dependencies, as with any FastAPI app:
the routes resolve them through the app that serves them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from fastapi.testclient import TestClient

from tether.api import create_app
from tether.api.auth import service
from tether.api.settings import ApiSettings
from tether.runtime.service import Service
from tether.store.factory import open_store


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
