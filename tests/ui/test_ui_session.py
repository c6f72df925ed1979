"""The sessions list and a session's page: runs in order with their statuses, the conversation,
closing, and read-only sessions whose forms are disabled."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from playwright.sync_api import Dialog, Page, expect

from tests.ui.uikit import Server, log_in, new_run, new_session, settled
from tests.waiting import eventually_sync
from tether.store.cursors import encode_cursor

pytestmark = pytest.mark.browser


def test_a_session_shows_its_runs_in_order(page: Page, server: Server) -> None:
    session = new_session(
        server, "alice", title="seed scenario", project={"workspace": "./calc"}, ttl_seconds=3600
    )
    sid = session["id"]
    first = settled(server, "alice", new_run(server, "alice", sid, goal="Analyse")["id"])
    second = settled(
        server, "alice", new_run(server, "alice", sid, goal="Fix", input={"fail": "no"})["id"]
    )
    third = new_run(server, "alice", sid, goal="Verify", input={"sleep": 60})
    with server.api("alice") as api:
        assert api.post(f"/v1/runs/{third['id']}/cancel").status_code == 200
        api.post(f"/v1/sessions/{sid}/messages", json={"role": "user", "content": "hello"})
        api.put(f"/v1/sessions/{sid}/memory/python", json={"value": "3.9"})
    assert (first["status"], second["status"]) == ("completed", "failed")

    log_in(page, server, "alice")
    row = page.locator("tr", has=page.get_by_role("link", name="seed scenario"))
    expect(row.locator(".badge")).to_have_text("active")
    expect(row.locator("td").nth(2)).to_have_text("3")
    expect(row.locator("td").nth(4)).to_have_text(re.compile(r"^(59 min|1 h)"))
    row.get_by_role("link", name="seed scenario").click()

    expect(page.get_by_role("heading", name="seed scenario")).to_be_visible()
    runs = page.locator("#runs .tl-item")
    expect(runs).to_have_count(3)
    expect(runs.locator(".tl-title")).to_have_text(["Run 1", "Run 2", "Run 3"])
    expect(runs.locator(".badge")).to_have_text(["completed", "failed", "cancelled"])
    expect(runs.nth(1).locator(".tl-error")).to_have_text("ValueError: no")
    expect(page.locator("#session-header")).to_contain_text("1 h")  # the TTL
    expect(page.locator("#session-project")).to_contain_text('"workspace": "./calc"')
    expect(page.locator("#conversation")).to_contain_text("hello")
    expect(page.locator("#conversation")).to_contain_text("echo: Analyse")
    expect(page.locator("#memory tr", has_text="python")).to_contain_text("3.9")

    # Times are shown in the browser's time zone.
    expect(page.locator("#tz")).to_have_text("Europe/Paris")
    created = page.locator("#session-header time").first
    expect(created).not_to_contain_text("UTC")

    runs.nth(1).get_by_role("link", name="Run 2").click()
    expect(page.get_by_role("heading", name="Run 2")).to_be_visible()
    expect(page.locator("#run-error")).to_contain_text("ValueError: no")


def test_add_a_message_then_close_the_session(page: Page, server: Server) -> None:
    session = new_session(server, "alice", title="to be closed")
    log_in(page, server, "alice")
    page.goto(f"{server.url}/ui/sessions/{session['id']}")
    expect(page.get_by_text("No runs yet.")).to_be_visible()
    expect(page.get_by_text("No messages yet.")).to_be_visible()

    page.get_by_label("Message").fill("Please keep changes minimal.")
    page.get_by_role("button", name="Add message").click()
    expect(page.locator("#conversation .msg")).to_have_text(re.compile("keep changes minimal"))

    questions: list[str] = []

    def answer(dialog: Dialog, accept: bool) -> None:
        questions.append(dialog.message)
        if accept:
            dialog.accept()
        else:
            dialog.dismiss()

    page.once("dialog", lambda dialog: answer(dialog, False))
    page.get_by_role("button", name="Close session").click()
    expect(page.locator("#session-title .badge")).to_have_text("active")
    page.once("dialog", lambda dialog: answer(dialog, True))
    page.get_by_role("button", name="Close session").click()
    expect(page.locator("#session-title .badge")).to_have_text("closed")
    assert len(questions) == 2 and "Close this session?" in questions[0]
    form = page.locator("#start-run")
    expect(form.get_by_role("button", name="Start run")).to_be_disabled()
    expect(form.get_by_label("Goal")).to_be_disabled()
    expect(form.get_by_label("Agent")).to_be_disabled()
    expect(form).to_contain_text("This session is closed: it is read-only")
    expect(page.get_by_role("button", name="Add message")).to_be_disabled()
    expect(page.get_by_role("button", name="Close session")).to_have_count(0)


def test_an_expired_session_is_read_only_too(page: Page, server: Server) -> None:
    session = new_session(server, "alice", title="short-lived", ttl_seconds=1)
    log_in(page, server, "alice")
    with server.api("alice") as api:  # expiry is exact on read: wait until a read shows it
        eventually_sync(
            lambda: api.get(f"/v1/sessions/{session['id']}").json()["status"] == "expired",
            what="the session to expire",
        )
    page.goto(f"{server.url}/ui/sessions/{session['id']}")
    expect(page.locator("#session-title .badge")).to_have_text("expired")
    expect(page.get_by_role("button", name="Start run")).to_be_disabled()
    expect(page.locator("#start-run")).to_contain_text("expired after 1 s without activity")
    expect(page.get_by_text("Expired", exact=True)).to_be_visible()  # when, not "in now"


def test_delayed_runs_and_namespaced_user_memory_are_shown(page: Page, server: Server) -> None:
    session = new_session(server, "alice", title="later")
    run = new_run(server, "alice", session["id"], goal="in ten minutes", after_seconds=600)
    with server.api("alice") as api:
        stored = api.put(
            "/v1/users/me/memory/theme", params={"namespace": "prefs"}, json={"value": "dark"}
        )
        assert stored.status_code == 200, stored.text
    log_in(page, server, "alice")
    page.goto(f"{server.url}/ui/sessions/{session['id']}")
    expect(page.locator("main")).to_contain_text(re.compile(r"starts in (9|10) m"))
    expect(page.locator("main")).to_contain_text("prefs/theme")
    page.goto(f"{server.url}/ui/runs/{run['id']}")
    expect(page.locator("main")).to_contain_text("created with a delay")


def test_start_run_errors_keep_the_form(page: Page, server: Server) -> None:
    session = new_session(server, "alice", title="bad input")
    log_in(page, server, "alice")
    page.goto(f"{server.url}/ui/sessions/{session['id']}")
    page.get_by_label("Goal").fill("try it")
    page.get_by_label("Input").fill("[1, 2")
    page.get_by_role("button", name="Start run").click()
    expect(page.get_by_role("alert")).to_contain_text("input is not valid JSON")
    expect(page.get_by_label("Goal")).to_have_value("try it")
    expect(page.get_by_label("Input")).to_have_value("[1, 2")


def test_ten_thousand_sessions_page_by_page(page: Page, server: Server) -> None:
    log_in(page, server, "carol")
    rows = page.locator("table.sessions tbody tr")
    expect(rows).to_have_count(25)
    expect(rows.first).to_contain_text("bulk session 09999")
    page.get_by_role("link", name="Next page").click()
    expect(rows.first).to_contain_text("bulk session 09974")
    page.get_by_role("link", name="← First page").click()
    expect(rows.first).to_contain_text("bulk session 09999")
    page.goto(f"{server.url}/ui?cursor={encode_cursor(0, '')}")  # past every session
    expect(page.get_by_text("No more sessions.")).to_be_visible()
    page.get_by_role("link", name="← First page").click()
    expect(rows).to_have_count(25)

    page.get_by_label("Search").fill("session 00042")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("bulk session 00042")
    page.get_by_label("Status").select_option("closed")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_text("No sessions match these filters.")).to_be_visible()
    page.get_by_role("link", name="Clear filters").click()
    expect(rows).to_have_count(25)


def test_a_new_owner_starts_from_the_empty_state(page: Page, server: Server) -> None:
    log_in(page, server, "dave")
    expect(page.get_by_text("No sessions for owner dave yet.")).to_be_visible()
    expect(page.locator(".owner-hint")).to_contain_text("tether keys create --owner local")
    page.get_by_text("New session", exact=True).click()
    page.get_by_label("Title").fill("my first session")
    page.get_by_role("button", name="Create session").click()
    expect(page.get_by_role("heading", name="my first session")).to_be_visible()
    expect(page.get_by_text("No runs yet.")).to_be_visible()
    expect(page.get_by_text("No tool calls yet.")).to_be_visible()
    page.get_by_role("link", name="Sessions", exact=True).first.click()
    expect(page.locator("table.sessions tbody tr")).to_have_count(1)
    # the list's brief dates carry their year too
    expect(page.locator("table.sessions tbody tr time")).to_contain_text(
        str(datetime.now(UTC).year)
    )


def _resume(server: Server, owner: str, run_id: str, text: str) -> None:
    with server.api(owner) as api:
        resumed = api.post(f"/v1/runs/{run_id}/resume", json={"input": text})
        assert resumed.status_code == 200, resumed.text


def test_the_session_page_follows_its_active_run(page: Page, server: Server) -> None:
    session = new_session(server, "alice", title="follow along")
    log_in(page, server, "alice")
    run = new_run(server, "alice", session["id"], goal="slowly", input={"wait": "go on?"})
    assert settled(server, "alice", run["id"])["status"] == "waiting"
    page.goto(f"{server.url}/ui/sessions/{session['id']}")
    page.evaluate("window.notReloaded = true")
    badge = page.locator("#runs .tl-item .badge")
    expect(badge).to_have_text("waiting")
    expect(page.locator("#live")).to_contain_text("Live")
    _resume(server, "alice", run["id"], "now")
    expect(badge).to_have_text("completed")
    expect(page.locator("#conversation")).to_contain_text("echo: slowly now")
    assert page.evaluate("window.notReloaded === true")
    assert settled(server, "alice", run["id"])["status"] == "completed"


def test_a_refused_run_leaves_the_session_page_live(page: Page, server: Server) -> None:
    session = new_session(server, "alice", title="busy page")
    # Busy until resumed: the run waits for a person (no timing involved).
    busy = new_run(server, "alice", session["id"], goal="nap", input={"wait": "wake me"})
    assert settled(server, "alice", busy["id"])["status"] == "waiting"
    log_in(page, server, "alice")
    page.goto(f"{server.url}/ui/sessions/{session['id']}")
    page.get_by_label("Goal").fill("another one")
    page.get_by_role("button", name="Start run").click()
    expect(page.get_by_role("alert")).to_contain_text("busy")
    assert page.url == f"{server.url}/ui/sessions/{session['id']}"
    _resume(server, "alice", busy["id"], "up")
    expect(page.locator("#runs .tl-item .badge").first).to_have_text("completed")
    assert settled(server, "alice", busy["id"])["status"] == "completed"


def test_a_long_title_wraps_on_a_phone(page: Page, server: Server) -> None:
    title = "Phone " + "verylongwordwithoutspaces" * 4
    session = new_session(server, "alice", title=title)
    log_in(page, server, "alice")
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"{server.url}/ui/sessions/{session['id']}")
    expect(page.get_by_role("heading", name=title)).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0


def test_keys_items_and_app_memory_show_and_keys_are_searchable(page: Page, server: Server) -> None:
    session = new_session(
        server, "alice", title="keyed session", external_key="ui/user_123", app="ui-shop"
    )
    sid = session["id"]
    new_session(server, "alice", title="unkeyed neighbour")
    call = {"type": "function_call", "call_id": "call_7", "name": "get_weather", "arguments": "{}"}
    with server.api("alice") as api:
        added = api.post(
            f"/v1/sessions/{sid}/messages/batch",
            json={
                "messages": [
                    {"content": "what is the weather?"},
                    {"item": call},
                    {
                        "item": {
                            "type": "function_call_output",
                            "call_id": "call_7",
                            "output": "sunny",
                        }
                    },
                    {"content": "to be popped"},
                ]
            },
        )
        assert added.status_code == 201, added.text
        assert api.post(f"/v1/sessions/{sid}/messages/pop").status_code == 200
        api.put("/v1/apps/ui-shop/memory/currency", json={"value": "EUR"})

    log_in(page, server, "alice")
    page.get_by_label("Search").fill("ui/user_1")
    page.get_by_role("button", name="Filter").click()
    rows = page.locator("table.sessions tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first.locator(".session-key")).to_have_text("key ui/user_123")
    expect(rows.first.locator(".session-app")).to_have_text("app ui-shop")
    rows.first.get_by_role("link", name="keyed session").click()

    expect(page.locator("#session-key")).to_have_text("ui/user_123")
    expect(page.locator("#session-app")).to_have_text("ui-shop")
    messages = page.locator("#conversation .msg")
    expect(messages).to_have_count(3)  # the popped one is no longer in the conversation
    expect(messages.nth(1).locator(".item-label")).to_have_text(
        "function_call · get_weather · call call_7"
    )
    expect(messages.nth(2)).to_contain_text("sunny")
    messages.nth(1).get_by_text("Item as added").click()
    expect(messages.nth(1).locator(".msg-raw pre")).to_contain_text('"call_id": "call_7"')
    expect(page.locator("#app-memory tr", has_text="currency")).to_contain_text("EUR")
