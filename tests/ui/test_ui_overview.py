"""/ui/overview: charts of the owner's runs (inline SVG, each with its numbers) that count
exactly the runs made, never another owner's, and stay readable on a phone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.serving import cli
from tests.ui.uikit import (
    Server,
    log_in,
    new_run,
    new_session,
    screenshot_folder,
    settled,
    start_server,
)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """tether serve with keys for alice, bob and dave, whose runs no other test touches."""
    db = tmp_path_factory.mktemp("overview") / "tether.db"
    assert cli("db", "migrate", "--db", db).returncode == 0
    running = start_server(db, owners=("alice", "bob", "dave"))
    yield running
    running.stop()


def _runs(server: Server, owner: str, completed: int, failed: int) -> None:
    """completed echo runs and failed ones, each in its own session, all finished."""
    for i in range(completed + failed):
        session = new_session(server, owner, title=f"{owner} {i}")
        body = {"input": {"fail": "disk full"}} if i >= completed else {}
        run = new_run(server, owner, session["id"], goal=f"task {i}", **body)
        assert settled(server, owner, run["id"])["status"] == (
            "failed" if i >= completed else "completed"
        )


def test_the_overview_counts_the_owners_runs_only(page: Page, server: Server) -> None:
    _runs(server, "alice", completed=3, failed=1)
    _runs(server, "bob", completed=0, failed=2)
    log_in(page, server, "alice")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Overview").click()
    expect(page.get_by_role("heading", name="Overview", exact=True)).to_be_visible()
    chart = page.get_by_role("img", name="Runs per hour over the last 24h")
    expect(chart).to_have_attribute(
        "aria-label",
        "Runs per hour over the last 24h: 3 completed, 1 failed; at most 4 in one hour",
    )
    expect(page.locator("#runs-by-status [data-status='completed'] .num")).to_have_text("3")
    expect(page.locator("#runs-by-status [data-status='failed'] .num")).to_have_text("1")
    expect(page.locator("#runs-by-status tbody tr")).to_have_count(2)
    expect(page.locator("#runs-per-hour rect")).to_have_count(2)
    expect(page.locator("#durations-table [data-agent='echo'] td").nth(1)).to_have_text("4")
    expect(page.get_by_role("img", name="Run duration p50 and p95 by agent")).to_be_visible()
    expect(page.get_by_text("No model calls in this period.")).to_be_visible()

    page.get_by_role("link", name="Last 7d").click()
    expect(page.get_by_role("link", name="Last 7d")).to_have_attribute("aria-current", "page")
    expect(page.locator("#runs-by-status [data-status='completed'] .num")).to_have_text("3")

    page.context.clear_cookies()
    log_in(page, server, "bob")
    page.goto(f"{server.url}/ui/overview")
    expect(page.locator("#runs-by-status tbody tr")).to_have_count(1)
    expect(page.locator("#runs-by-status [data-status='failed'] .num")).to_have_text("2")

    page.context.clear_cookies()
    log_in(page, server, "dave")
    page.goto(f"{server.url}/ui/overview?period=forever")  # an unknown period: the default
    expect(page.get_by_text("No runs in this period.")).to_be_visible()


def test_the_overview_of_the_demo_screenshots_on_a_laptop_and_a_phone(
    page: Page, demo: Server, tmp_path: Path
) -> None:
    page.goto(f"{demo.url}/ui/overview")
    expect(page.get_by_role("heading", name="Overview", exact=True)).to_be_visible()
    charts = page.locator("svg.chart[role='img']")
    expect(charts.first).to_be_visible()
    for i in range(charts.count()):
        assert charts.nth(i).get_attribute("aria-label")
        assert charts.nth(i).get_attribute("viewBox")
    page.screenshot(path=screenshot_folder(tmp_path) / "ui-overview.png", full_page=True)

    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    expect(page.locator("#runs-per-hour")).to_be_visible()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the overview is {width} px wide on a phone"
    box = page.locator("#runs-per-hour").bounding_box()
    assert box is not None and box["width"] > 300
    page.screenshot(path=screenshot_folder(tmp_path) / "ui-overview-phone.png", full_page=True)
