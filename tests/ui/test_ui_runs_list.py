"""/ui/runs: every run of the owner across sessions, newest first, with filters and pages; a
ready run no running worker can take carries a badge there, on its session and on its page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

import tether
from tests.ui.uikit import Server, new_run, new_session, screenshot_folder, start_server
from tether.core.status import RunStatus
from tether.store.cursors import encode_cursor

pytestmark = pytest.mark.browser

#: More than one page of runs (the page shows 50).
ECHOES = 52


@pytest.fixture(scope="module")
def no_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """tether serve --no-auth --workers 0 over runs made beforehand by an embedded worker: a
    failed one and ECHOES completed ones in two sessions. Runs created through this server
    wait, since no worker runs."""
    db = tmp_path_factory.mktemp("runs") / "tether.db"
    with tether.open(str(db)) as tt:
        deploy = tt.sessions.create(title="Deploy the site")
        broke = deploy.runs.create("Push the release", input={"fail": "disk full"}).wait(30)
        assert broke.status is RunStatus.FAILED
        chat = tt.sessions.create(title="Chat")
        for i in range(ECHOES):
            done = chat.runs.create(f"say {i}").wait(30)
            assert done.status is RunStatus.COMPLETED
    running = start_server(db, "--no-auth", "--workers", "0")
    yield running
    running.stop()


def test_runs_page_filters_pages_stuck_badges_and_screenshots(
    page: Page, no_worker: Server, tmp_path: Path
) -> None:
    session = new_session(no_worker, None, title="Fix the tests")
    stuck = new_run(no_worker, None, session["id"], goal="Fix the failing tests", agent="coder")
    page.goto(f"{no_worker.url}/ui")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Runs").click()
    expect(page.get_by_role("heading", name="Runs", exact=True)).to_be_visible()
    rows = page.locator("table.runs tbody tr")
    expect(rows).to_have_count(50)
    expect(rows.first).to_contain_text("Fix the failing tests")
    expect(rows.first.locator(".badge")).to_have_text(["ready", "no worker for coder"])
    page.screenshot(path=screenshot_folder(tmp_path) / "ui-runs.png", full_page=True)

    page.get_by_role("link", name="Next page →").click()
    expect(rows).to_have_count(ECHOES + 2 - 50)
    expect(rows.last).to_contain_text("Push the release")
    expect(page.get_by_role("link", name="Next page →")).to_have_count(0)  # the last page
    page.get_by_role("link", name="← First page").click()
    expect(rows).to_have_count(50)

    page.goto(f"{no_worker.url}/ui/runs")
    page.get_by_label("Status").select_option("failed")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("disk full")

    page.goto(f"{no_worker.url}/ui/runs")
    page.get_by_label("Search").fill("say 7")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(1)

    page.goto(f"{no_worker.url}/ui/runs")
    page.get_by_label("Stuck only").check()
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(1)
    rows.first.get_by_role("link", name="Fix the failing tests").click()
    expect(page.locator("#run-title")).to_contain_text("no worker for coder")
    expect(page.locator("#stuck-note")).to_contain_text("No running worker has the agent coder")

    page.goto(f"{no_worker.url}/ui/sessions/{session['id']}")
    expect(page.locator(f"[data-run-id='{stuck['id']}'] .badge-stuck")).to_be_visible()

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{no_worker.url}/ui/runs")
    expect(rows.first).to_be_visible()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the runs page is {width} px wide on a phone"
    page.screenshot(path=screenshot_folder(tmp_path) / "ui-runs-phone.png")


def test_an_empty_or_exhausted_filter_says_so(page: Page, no_worker: Server) -> None:
    page.goto(f"{no_worker.url}/ui/runs?q=nothing-matches-this")
    expect(page.get_by_text("No runs match these filters.")).to_be_visible()
    page.goto(f"{no_worker.url}/ui/runs?status=bogus&period=forever")  # ignored, not an error
    expect(page.locator("table.runs tbody tr").first).to_be_visible()
    page.goto(f"{no_worker.url}/ui/runs?cursor={encode_cursor(0, '')}")  # before every run
    expect(page.get_by_text("No more runs.")).to_be_visible()
    page.get_by_role("link", name="← First page").click()
    expect(page.locator("table.runs tbody tr").first).to_be_visible()
