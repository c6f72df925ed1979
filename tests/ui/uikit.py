"""Helpers of the browser tests: Debian's Chromium driven by Playwright, and a real
``tether serve`` on 127.0.0.1 (tests/serving.py) with the /v1 calls the tests make."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.serving import Served, serve

#: ``make screenshots`` names docs/images here, to refresh the pictures docs/ui.md shows.
SCREENSHOTS_ENV = "TETHER_SCREENSHOTS"
#: Playwright cannot download a browser here: it drives Debian's package.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def screenshot_folder(tmp_path: Path) -> Path:
    """Where a test saves its screenshots: the folder $TETHER_SCREENSHOTS names, else tmp_path
    (so that running the tests leaves the checkout as it was)."""
    named = os.environ.get(SCREENSHOTS_ENV)
    folder = Path(named).resolve() if named else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def chromium_or_skip() -> str:
    """The path of Debian's chromium; skip without it, but fail in CI (CI=true)."""
    path = shutil.which("chromium")
    if path is not None:
        return path
    message = "Chromium is missing: apt-get install -y chromium (.ci/run installs it)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@dataclass
class Server(Served):
    """A running ``tether serve`` and the API keys made for it."""

    def api(self, owner: str | None = None) -> httpx.Client:
        """An HTTP client of the /v1 API acting for owner (no key under --no-auth)."""
        headers = {"Authorization": f"Bearer {self.keys[owner]}"} if owner else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


def start_server(db: Path, *args: str, owners: tuple[str, ...] = ()) -> Server:
    """Make a key per owner with the CLI, then serve db on 127.0.0.1 until it listens."""
    return serve(Server, db, *args, owners=owners)


def created(answer: httpx.Response) -> Any:
    """The JSON of a 200/201 answer (fails the test with the problem otherwise)."""
    assert answer.status_code in (200, 201), answer.text
    return answer.json()


def log_in(page: Page, server: Server, owner: str) -> None:
    """Log in through the form with owner's key; lands on the sessions page."""
    page.goto(f"{server.url}/ui")
    page.get_by_label("API key").fill(server.keys[owner])
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Sessions", exact=True)).to_be_visible()


def new_session(server: Server, owner: str | None, **body: Any) -> dict[str, Any]:
    """A session made through the /v1 API."""
    with server.api(owner) as api:
        session: dict[str, Any] = created(api.post("/v1/sessions", json=body))
    return session


def new_run(server: Server, owner: str | None, session_id: str, **body: Any) -> dict[str, Any]:
    """A run started through the /v1 API (goal "echo this" unless given)."""
    body.setdefault("goal", "echo this")
    with server.api(owner) as api:
        run: dict[str, Any] = created(api.post(f"/v1/sessions/{session_id}/runs", json=body))
    return run


def settled(server: Server, owner: str | None, run_id: str) -> dict[str, Any]:
    """The run once it is terminal or waiting (long-poll)."""
    with server.api(owner) as api:
        run: dict[str, Any] = created(api.get(f"/v1/runs/{run_id}/wait", params={"timeout": 20}))
    assert run["status"] not in ("ready", "running"), run
    return run
