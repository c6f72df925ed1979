"""A run's page: steps and status arriving live over the run's event stream (and after a dropped
connection), cancelling, and resuming a run that waits for a person."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from tests.serving import Proxy
from tests.ui.uikit import Server, created, log_in, new_run, new_session, settled

pytestmark = pytest.mark.browser


def _mark_page(page: Page) -> None:
    """Leave a mark in the page's JavaScript state: a reload would wipe it."""
    page.evaluate("window.notReloaded = true")


def _still_marked(page: Page) -> bool:
    return bool(page.evaluate("window.notReloaded === true"))


def test_start_a_run_and_watch_it_live(page: Page, server: Server) -> None:
    session = new_session(server, "alice", title="live run")
    log_in(page, server, "alice")
    page.goto(f"{server.url}/ui/sessions/{session['id']}")
    page.get_by_label("Agent").select_option("echo")
    page.get_by_label("Goal").fill("take your time")
    page.get_by_label("Input").fill(json.dumps({"steps": 3, "wait": "carry on?"}))
    page.get_by_role("button", name="Start run").click()

    expect(page.get_by_role("heading", name="Run 1")).to_be_visible()
    _mark_page(page)
    status = page.locator("#run-title .badge")
    expect(status).to_have_text("waiting")
    expect(page.locator("#live")).to_contain_text("Live")
    steps = page.locator("#steps .wf-row")
    expect(steps.locator(".wf-name")).to_have_text(["step 1", "step 2", "step 3", "for input"])
    expect(steps.nth(3).locator(".badge")).to_have_text("running")
    # It goes on when a person answers (here through the API): the page follows, unreloaded.
    _resume(server, page.url.rsplit("/", 1)[-1], "now")
    expect(status).to_have_text("completed")
    expect(steps.nth(3).locator(".badge")).to_have_text("completed")
    expect(steps.locator(".wf-name")).to_have_text(
        ["step 1", "step 2", "step 3", "for input", "assistant_message"]
    )
    expect(page.locator("#data")).to_contain_text("echo: take your time now")
    expect(page.locator("#live")).to_be_empty()
    assert _still_marked(page)


def test_cancel_a_running_run(page: Page, server: Server) -> None:
    session = new_session(server, "alice", title="cancel me")
    run = new_run(server, "alice", session["id"], goal="sleep long", input={"sleep": 60})
    log_in(page, server, "alice")
    page.goto(f"{server.url}/ui/runs/{run['id']}")
    expect(page.locator("#run-title .badge")).to_have_text("running")
    page.get_by_role("button", name="Cancel run").click()
    expect(page.locator("#run-title .badge")).to_have_text("cancelled")
    expect(page.get_by_role("button", name="Cancel run")).to_have_count(0)
    with server.api("alice") as api:
        assert api.get(f"/v1/runs/{run['id']}").json()["status"] == "cancelled"
        assert api.get(f"/v1/sessions/{session['id']}").json()["status"] == "active"


def test_resume_a_waiting_run_with_its_input(page: Page, server: Server) -> None:
    session = new_session(server, "alice", title="ask me")
    run = new_run(server, "alice", session["id"], goal="hello", input={"wait": "Who to greet?"})
    assert settled(server, "alice", run["id"])["status"] == "waiting"
    log_in(page, server, "alice")
    page.goto(f"{server.url}/ui/runs/{run['id']}")
    expect(page.locator("#run-title .badge")).to_have_text("waiting")
    expect(page.locator("#run-waiting")).to_contain_text("Who to greet?")
    wait = page.locator("#steps .wf-row.kind-wait")  # a wait, not a message
    expect(wait.locator(".kind")).to_have_text("wait")
    expect(wait.locator(".wf-name")).to_have_text("for input")
    page.get_by_label("Your input").fill("world")
    page.get_by_role("button", name="Resume run").click()
    expect(page.locator("#run-title .badge")).to_have_text("completed")
    expect(page.locator("#data")).to_contain_text("echo: hello world")
    expect(page.locator("#run-waiting")).to_be_empty()


def test_a_dropped_stream_resumes_with_last_event_id(page: Page, server: Server) -> None:
    proxy = Proxy(server.url)
    try:
        page.goto(f"{proxy.url}/ui/login")
        page.get_by_label("API key").fill(server.keys["alice"])
        page.get_by_role("button", name="Log in").click()
        session = new_session(server, "alice", title="flaky network")
        # The run is queued behind one waiting for a person: its page opens while it is ready,
        # and its events arrive over the stream only once the first run is answered.
        first = new_run(server, "alice", session["id"], input={"wait": "first?"})
        assert settled(server, "alice", first["id"])["status"] == "waiting"
        run = new_run(server, "alice", session["id"], input={"wait": "go on?"}, if_busy="enqueue")
        page.goto(f"{proxy.url}/ui/runs/{run['id']}")
        _mark_page(page)
        expect(page.locator("#run-title .badge")).to_have_text("ready")
        expect(page.locator("#live")).to_contain_text("Live")
        _resume(server, first["id"], "yes")
        # Events arrive over the stream (the run starts, then waits), then it is cut.
        expect(page.locator("#run-title .badge")).to_have_text("waiting")
        expect(page.locator("#run-waiting")).to_contain_text("go on?")
        with page.expect_request(lambda r: f"/ui/runs/{run['id']}/events" in r.url) as again:
            proxy.cut()
        last_event_id = again.value.all_headers().get("last-event-id", "")
        assert last_event_id.isdigit(), again.value.all_headers()
        expect(page.locator("#live")).to_contain_text("Live")
        _resume(server, run["id"], "yes")
        expect(page.locator("#run-title .badge")).to_have_text("completed")
        expect(page.locator("#data")).to_contain_text("echo: echo this yes")
        assert _still_marked(page)
    finally:
        proxy.close()


def _resume(server: Server, run_id: str, text: str) -> None:
    with server.api("alice") as api:
        resumed = api.post(f"/v1/runs/{run_id}/resume", json={"input": text})
        assert resumed.status_code == 200, resumed.text


def test_promote_working_memory_to_the_session(page: Page, demo: Server) -> None:
    with demo.api() as api:
        session = api.get("/v1/sessions", params={"query": "Keep helping"}).json()["data"][0]
        runs = api.get(f"/v1/sessions/{session['id']}/runs").json()["data"]
    page.goto(f"{demo.url}/ui/runs/{runs[1]['id']}")
    item = page.locator("#memory tbody tr").filter(
        has=page.get_by_role("cell", name="change", exact=True)
    )
    item.get_by_role("button", name="Promote to session").click()
    expect(item).to_contain_text("in session memory")
    page.get_by_role("link", name=session["title"]).click()
    item = page.locator("#memory tbody tr").filter(
        has=page.get_by_role("cell", name="change", exact=True)
    )
    expect(item).to_contain_text("Run 2")


def test_a_refused_resume_keeps_the_input_and_the_page_stays_live(
    page: Page, server: Server
) -> None:
    session = new_session(server, "alice", title="refused resume")
    run = new_run(server, "alice", session["id"], goal="hello", input={"wait": "Who?"})
    assert settled(server, "alice", run["id"])["status"] == "waiting"
    log_in(page, server, "alice")
    page.goto(f"{server.url}/ui/runs/{run['id']}")
    page.get_by_label("Your input").fill("{not json")
    page.get_by_label("Send as JSON").check()
    page.get_by_role("button", name="Resume run").click()
    expect(page.get_by_role("alert")).to_contain_text("input is not valid JSON")
    expect(page.get_by_label("Your input")).to_have_value("{not json")
    expect(page.get_by_label("Send as JSON")).to_be_checked()
    # the refusal answered at the form's address; the page shows (and follows) its own
    assert page.url == f"{server.url}/ui/runs/{run['id']}"
    _mark_page(page)
    with server.api("alice") as api:
        resumed = api.post(f"/v1/runs/{run['id']}/resume", json={"input": "world"})
        assert resumed.status_code == 200, resumed.text
    expect(page.locator("#run-title .badge")).to_have_text("completed")
    assert _still_marked(page)


def test_resuming_a_run_that_stopped_waiting_says_why(page: Page, server: Server) -> None:
    session = new_session(server, "alice", title="late resume")
    run = new_run(server, "alice", session["id"], goal="hello", input={"wait": "Who?"})
    assert settled(server, "alice", run["id"])["status"] == "waiting"
    log_in(page, server, "alice")
    page.goto(f"{server.url}/ui/runs/{run['id']}")
    box = page.get_by_label("Your input")
    box.fill("too late")  # focus stays in the box: the live update leaves the form alone
    with server.api("alice") as api:
        assert api.post(f"/v1/runs/{run['id']}/cancel", json={}).status_code == 200
    expect(page.locator("#run-title .badge")).to_have_text("cancelled")
    page.get_by_role("button", name="Resume run").click()
    expect(page.get_by_role("alert")).to_contain_text("cancelled")
    expect(page.locator("#run-waiting")).to_contain_text("too late")


def test_a_run_its_caller_executes_waits_without_a_resume_form(page: Page, server: Server) -> None:
    session = new_session(server, "alice", title="framework run")
    with server.api("alice") as api:
        held = created(
            api.post(
                f"/v1/sessions/{session['id']}/held-runs",
                json={"goal": "Move 5", "agent": "openai-agents"},
            )
        )
        suspended = api.post(
            f"/v1/runs/{held['run']['id']}/suspend",
            json={"kind": "approval", "prompt": "Approve the transfer?"},
            headers={"Tether-Holder": held["holder"]},
        )
        assert suspended.status_code == 200, suspended.text
    log_in(page, server, "alice")
    page.goto(f"{server.url}/ui/runs/{held['run']['id']}")
    expect(page.locator("#run-title .badge")).to_have_text("waiting")
    expect(page.locator("#run-waiting .prompt")).to_have_text("Approve the transfer?")
    expect(page.locator("#held-note")).to_contain_text("executed by its caller")
    expect(page.locator("#resume-run")).to_have_count(0)
