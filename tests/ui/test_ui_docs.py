"""The pages as a person sees them: screenshots for docs/ui.md (laptop and phone), a layout that
fits a phone, keyboard access, and the tool history's filters (on the demo scenario)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.ui.uikit import Server, screenshot_folder, settled

pytestmark = pytest.mark.browser


def _demo_session(demo: Server) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with demo.api() as api:
        sessions = api.get("/v1/sessions", params={"query": "Keep helping"}).json()["data"]
        runs = api.get(f"/v1/sessions/{sessions[0]['id']}/runs").json()["data"]
        for found in api.get("/v1/sessions").json()["data"]:  # let the seeded runs settle
            for run in api.get(f"/v1/sessions/{found['id']}/runs").json()["data"]:
                settled(demo, None, run["id"])
    return sessions[0], runs


def test_screenshots_of_the_three_pages(page: Page, demo: Server, tmp_path: Path) -> None:
    session, runs = _demo_session(demo)
    images = screenshot_folder(tmp_path)

    page.goto(f"{demo.url}/ui")
    rows = page.locator("table.sessions tbody tr")
    expect(rows).to_have_count(5)
    expect(page.locator("table.sessions .badge")).to_have_text(
        ["active", "active", "active", "closed", "expired"]
    )
    page.screenshot(path=images / "ui-sessions.png", full_page=True)

    page.goto(f"{demo.url}/ui/sessions/{session['id']}")
    expect(page.locator("#runs .tl-item .badge")).to_have_text(["completed"] * 4)
    expect(page.locator("#tool-calls tbody tr")).to_have_count(11)
    page.screenshot(path=images / "ui-session.png", full_page=True)

    page.goto(f"{demo.url}/ui/runs/{runs[0]['id']}")
    expect(page.locator("#steps .wf-row").first).to_be_visible()
    page.locator("#steps .kind-tool_call summary").first.click()
    expect(page.locator("#steps .kind-tool_call pre").first).to_contain_text("unittest")
    page.screenshot(path=images / "ui-run.png", full_page=True)

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{demo.url}/ui/sessions/{session['id']}")
    expect(page.get_by_role("heading", name=session["title"])).to_be_visible()
    page.screenshot(path=images / "ui-session-phone.png")


@pytest.mark.parametrize("width", [390, 1280])
def test_pages_fit_the_screen(page: Page, demo: Server, width: int) -> None:
    session, runs = _demo_session(demo)
    page.set_viewport_size({"width": width, "height": 800})
    for path in ("/ui", f"/ui/sessions/{session['id']}", f"/ui/runs/{runs[0]['id']}"):
        page.goto(f"{demo.url}{path}")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{path} is {overflow}px wider than a {width}px screen"


def test_keyboard_and_labels(page: Page, demo: Server) -> None:
    _demo_session(demo)
    page.goto(f"{demo.url}/ui?q=CI+pipeline")
    page.get_by_role("link", name="Upgrade the CI pipeline").click()
    # The click returns once the session page starts loading; Chromium drops keys sent to a
    # page whose body is not parsed yet, so wait for its load event before pressing Tab.
    page.wait_for_url("**/ui/sessions/*", wait_until="load")
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_be_focused()
    unlabelled = page.evaluate(
        """[...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
             .filter(el => el.labels.length === 0 && !el.getAttribute('aria-label'))
             .map(el => el.name)"""
    )
    assert unlabelled == []
    # Every action is a real button in a form, reachable with the keyboard.
    page.get_by_label("Goal").focus()
    page.keyboard.type("Summarise the session")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Run 2")).to_be_visible()


def test_tool_history_filters(page: Page, demo: Server) -> None:
    session, _ = _demo_session(demo)
    page.goto(f"{demo.url}/ui/sessions/{session['id']}")
    calls = page.locator("#tool-calls tbody tr")
    expect(calls).to_have_count(11)
    page.get_by_label("Tool", exact=True).fill("run_command")
    page.get_by_role("button", name="Filter").click()
    expect(calls).to_have_count(4)
    page.get_by_label("Run", exact=True).select_option(label="Run 2")
    page.get_by_role("button", name="Filter").click()
    expect(calls).to_have_count(2)  # the fix runs the tests before and after its change
    expect(calls.first).to_contain_text("Run 2")
    page.get_by_label("Outcome").select_option("failed")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_text("No tool calls match these filters.")).to_be_visible()
    page.locator("#tools").get_by_role("link", name="Clear").click()
    expect(calls).to_have_count(11)
    calls.first.get_by_role("link", name="Run 1").click()
    expect(page.get_by_role("heading", name="Run 1")).to_be_visible()
