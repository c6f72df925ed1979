"""The service opens its SQLite database at the settings' durability: at ``full``, an append
answers after a flush of the WAL (``tether serve --durability full``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tether.api import create_app
from tether.api.settings import ApiSettings
from tether.core.errors import UsageError
from tether.store.factory import open_store
from tether.store.sqlite import flush
from tether.store.sqlite.database import SqliteDatabase


def test_an_append_at_full_answers_after_a_flush(tmp_path: Path) -> None:
    app = create_app(
        ApiSettings(db=str(tmp_path / "t.db"), durability="full", auth=False, workers=0)
    )
    with TestClient(app, base_url="http://127.0.0.1") as http:
        database = app.state.service.store.database
        assert isinstance(database, SqliteDatabase) and database.durability == "full"
        session = http.post("/v1/sessions", json={"title": "full"}).json()["id"]
        before = database.flushes
        added = http.post(f"/v1/sessions/{session}/messages", json={"role": "user", "content": "x"})
        assert added.status_code == 201, added.text
        assert database.flushes > before


def test_a_bad_durability_is_refused_for_postgresql_too() -> None:
    # PostgreSQL ignores the setting (its synchronous_commit decides), but not a typo in it:
    # refused before any connection is tried.
    with pytest.raises(UsageError, match="not 'fsync'"):
        open_store("postgresql://nobody@127.0.0.1:1/none", durability="fsync")


def test_after_a_failed_flush_writes_and_health_answer_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(fd: int) -> None:
        raise OSError(5, "Input/output error")

    app = create_app(
        ApiSettings(db=str(tmp_path / "t.db"), durability="full", auth=False, workers=0)
    )
    with TestClient(app, base_url="http://127.0.0.1") as http:
        assert http.get("/healthz").status_code == 200
        session = http.post("/v1/sessions", json={"title": "full"}).json()["id"]
        monkeypatch.setattr(flush, "fdatasync", failing)
        url = f"/v1/sessions/{session}/messages"
        lost = http.post(url, json={"role": "user", "content": "x"})
        assert lost.status_code == 500 and "could not flush" in lost.json()["detail"]
        assert str(tmp_path) not in lost.text  # (the path is for the log)
        refused = http.post(url, json={"role": "user", "content": "y"})
        assert refused.status_code == 503, refused.text
        assert refused.json()["code"] == "store_unavailable"
        health = http.get("/healthz")
        assert health.status_code == 503 and "could not flush" in health.json()["detail"]
