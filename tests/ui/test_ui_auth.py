"""Logging in to the UI: a server-side UI session in an http-only cookie (never the key), owners
kept apart, CSRF refused, unknown and other owners' ids answered by a friendly 404 page."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.ui.uikit import Server, log_in, new_run, new_session, settled

pytestmark = pytest.mark.browser


def test_login_shows_only_the_owners_sessions(page: Page, server: Server) -> None:
    mine = new_session(server, "alice", title="alice: fix the flaky test")
    theirs = new_session(server, "bob", title="bob: secret plans")

    page.goto(f"{server.url}/ui/sessions/{mine['id']}")
    expect(page).to_have_url(re.compile(r"/ui/login\?next="))
    page.get_by_label("API key").fill("tk_not-a-real-key")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("not valid")

    page.get_by_label("API key").fill(server.keys["alice"])
    page.get_by_role("button", name="Log in").click()
    # Back where the browser was going, then to the list.
    expect(page.get_by_role("heading", name="alice: fix the flaky test")).to_be_visible()
    page.get_by_role("link", name="Sessions", exact=True).first.click()
    expect(page.get_by_role("link", name="alice: fix the flaky test")).to_be_visible()
    expect(page.get_by_text("bob: secret plans")).to_have_count(0)
    expect(page.locator(".owner")).to_have_text("alice")

    cookie = next(c for c in page.context.cookies() if c["name"] == "tether_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/ui"
    assert server.keys["alice"] not in cookie["value"]
    assert cookie["secure"]  # a browser keeps a Secure cookie from loopback, even over http
    assert page.evaluate("document.cookie") == ""

    # Another owner's session is a 404 page, exactly like one that does not exist.
    answer = page.goto(f"{server.url}/ui/sessions/{theirs['id']}")
    assert answer is not None and answer.status == 404
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    expect(page.get_by_text("bob: secret plans")).to_have_count(0)
    answer = page.goto(f"{server.url}/ui/runs/01234567-89ab-7def-8123-456789abcdef")
    assert answer is not None and answer.status == 404
    answer = page.goto(f"{server.url}/ui/no/such/page")
    assert answer is not None and answer.status == 404
    page.get_by_role("link", name="Go to your sessions").click()
    expect(page.get_by_role("heading", name="Sessions", exact=True)).to_be_visible()

    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    page.goto(f"{server.url}/ui")
    expect(page).to_have_url(re.compile(r"/ui/login"))


def test_forms_from_elsewhere_are_refused(page: Page, server: Server) -> None:
    session = new_session(server, "alice", title="csrf target")
    log_in(page, server, "alice")
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "tether_session")
    close = f"{server.url}/ui/sessions/{session['id']}/close"
    with httpx.Client(cookies={"tether_session": token}) as browser_like:
        # The cookie alone is not enough: the page's token is missing.
        assert browser_like.post(close, data={}).status_code == 403
        csrf = re.search(
            r'name="csrf" value="([0-9a-f]+)"', browser_like.get(f"{server.url}/ui").text
        )
        assert csrf is not None
        foreign = browser_like.post(
            close, data={"csrf": token[1]}, headers={"Origin": "https://evil.example"}
        )
        assert foreign.status_code == 403 and "refused" in foreign.text
        assert browser_like.post(close, json={"csrf": token[1]}).status_code == 403
        # The cookie opens /ui only: the /v1 API still wants the Authorization header.
        assert browser_like.get(f"{server.url}/v1/sessions").status_code == 401
    with server.api("alice") as api:
        assert api.get(f"/v1/sessions/{session['id']}").json()["status"] == "active"


def test_streams_and_pages_without_a_key(server: Server) -> None:
    session = new_session(server, "alice")
    run = settled(server, "alice", new_run(server, "alice", session["id"])["id"])
    with httpx.Client(base_url=server.url) as anonymous:
        page = anonymous.get(f"/ui/runs/{run['id']}")
        assert page.status_code == 303
        assert page.headers["location"] == f"/ui/login?next=%2Fui%2Fruns%2F{run['id']}"
        stream = anonymous.get(f"/ui/runs/{run['id']}/events")
        assert stream.status_code == 401
        assert stream.headers["content-type"] == "application/problem+json"
        assert anonymous.get("/ui/static/ui.css").status_code == 200
        login = anonymous.get("/ui/login")
        assert login.status_code == 200
        assert "default-src 'self'" in login.headers["content-security-policy"]
