"""/ui/schedules: the owner's schedules from the main navigation, with their state, next run
and last run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

import tether
from tests.ui.uikit import Server, start_server

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def scheduled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """tether serve --no-auth over two schedules of the owner local: one paused."""
    db = tmp_path_factory.mktemp("schedules") / "tether.db"
    with tether.open(str(db), worker=False) as tt:
        report = tt.sessions.create(title="Reports")
        tt.schedules.create("0 9 * * mon-fri", session_id=report.id, goal="Daily report")
        tt.schedules.create("*/30 * * * *", goal="Tidy up", timezone="Asia/Tokyo", enabled=False)
    running = start_server(db, "--no-auth", "--workers", "0")
    yield running
    running.stop()


def test_schedules_page_lists_them(page: Page, scheduled: Server) -> None:
    page.goto(f"{scheduled.url}/ui")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Schedules").click()
    expect(page.get_by_role("heading", name="Schedules", exact=True)).to_be_visible()
    rows = page.locator("table.schedules tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("0 9 * * mon-fri")
    expect(rows.first).to_contain_text("Daily report")
    expect(rows.first.locator(".badge")).to_have_text("enabled")
    expect(rows.last).to_contain_text("a new session each time")
    expect(rows.last.locator(".badge")).to_have_text("paused")
    rows.first.get_by_role("link", name="session …").click()
    expect(page.get_by_role("heading", name="Reports")).to_be_visible()
