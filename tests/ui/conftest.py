"""Fixtures of the browser tests (local to tests/ui): one Chromium for the folder, a page per
test, and two real servers: one with API keys (alice, bob, and carol with 10,000 sessions) and
one under --no-auth holding the demo scenario, which the screenshots show."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.serving import cli
from tests.ui.uikit import CHROMIUM_ARGS, Server, chromium_or_skip, start_server

#: Sessions of the owner whose list must stay fast.
MANY = 10_000


@pytest.fixture
def loop() -> None:
    """No event loop of our own here: Playwright's sync API runs one on this thread."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless (skipped without it, failed in CI). One per module, so
    Playwright's loop is gone from this thread before the tests that follow run theirs."""
    path = chromium_or_skip()
    expect.set_options(timeout=15_000)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=path, headless=True, args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser context (no cookies) on a laptop-sized screen, in Paris time."""
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, timezone_id="Europe/Paris", locale="en-GB"
    )
    yield context.new_page()
    context.close()


async def _seed_many(db: Path, owner: str) -> None:
    from tether.runtime.service import Service
    from tether.store.factory import open_store

    store = open_store(str(db))
    try:
        svc = Service(store, owner=owner)
        for i in range(MANY):
            await svc.create_session(title=f"bulk session {i:05d}", metadata={"batch": i // 100})
    finally:
        await store.close()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """tether serve with API keys: carol has MANY sessions, dave none at all."""
    db = tmp_path_factory.mktemp("ui") / "tether.db"
    assert cli("db", "migrate", "--db", db).returncode == 0
    with ThreadPoolExecutor(1) as pool:  # Playwright's loop may be running on this thread
        pool.submit(asyncio.run, _seed_many(db, "carol")).result()
    running = start_server(db, owners=("alice", "bob", "carol", "dave"))
    yield running
    running.stop()


async def _seed_variety(db: Path) -> None:
    """Sessions of every kind beside the demo's: a failed run, one waiting for a person, one
    closed, one expired (made 40 days ago, as a clock set back can)."""
    from tether.core.clock import ManualClock
    from tether.runtime.service import Service
    from tether.store.factory import open_store

    store = open_store(str(db))
    try:
        now = datetime.now(UTC)
        svc = Service(store, clock=ManualClock(now - timedelta(days=40)))
        await svc.create_session(title="Weekly dependency audit", metadata={"team": "infra"})
        svc = Service(store, clock=ManualClock(now - timedelta(hours=5)))
        notes = await svc.create_session(title="Draft the release notes for 0.2")
        await svc.add_message(notes.id, "user", "List what changed since 0.1.")
        await svc.close_session(notes.id)
        svc = Service(store, clock=ManualClock(now - timedelta(minutes=30)))
        ci = await svc.create_session(title="Upgrade the CI pipeline", ttl_seconds=7 * 86400)
        await svc.create_run(ci.id, "Bump the runners", input={"fail": "runner image not found"})
        svc = Service(store, clock=ManualClock(now - timedelta(minutes=3)))
        triage = await svc.create_session(title="Triage issue #42", ttl_seconds=None)
        await svc.create_run(triage.id, "Label the issue", input={"wait": "Which label?"})
    finally:
        await store.close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """tether serve --no-auth over the demo scenario's database (owner "local") and a few
    other sessions; a module of its own each, since tests change it."""
    folder = tmp_path_factory.mktemp("demo")
    played = cli("demo", "--db", folder / "tether.db", "--workspace", folder / "calc")
    assert played.returncode == 0, played.stderr
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, _seed_variety(folder / "tether.db")).result()
    running = start_server(folder / "tether.db", "--no-auth")
    yield running
    running.stop()
