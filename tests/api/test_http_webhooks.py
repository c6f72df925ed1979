"""Webhooks through a real ``tether serve --webhook-allow 127.0.0.1``: a run made through /v1
is sent in the /v1 shape, one made by the official langgraph-sdk in LangGraph's, both signed
with the owner's secret (``tether webhooks secret``); a private address is a 422 naming the
webhook; the run page shows the delivery."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import UnprocessableEntityError

import tether
from tests.api.httpkit import Server, new_session, start_server, wait_run
from tests.langgraph.lgkit import holding
from tests.serving import cli
from tests.waiting import eventually_sync
from tests.webhook_listener import Listener, listening, verify

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def allowing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(tmp_path_factory.mktemp("webhooks"), "--webhook-allow", "127.0.0.1")
    yield running
    running.stop()


@pytest.fixture
def listener() -> Iterator[Listener]:
    with listening() as heard:
        yield heard


def _secret(db: Path, owner: str) -> str:
    done = cli("webhooks", "secret", "--owner", owner, "--db", db)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_native_and_langgraph_runs_are_posted_signed(allowing: Server, listener: Listener) -> None:
    secret = _secret(allowing.db, "alice")
    with allowing.client("alice") as alice:
        session = new_session(alice)
        made = alice.post(
            f"/v1/sessions/{session['id']}/runs",
            json={"goal": "hi", "input": {"text": "hi"}, "webhook": listener.url},
        )
        assert made.status_code == 201, made.text
        run = wait_run(alice, made.json()["id"])
        eventually_sync(lambda: listener.received, what="the native webhook")
        headers, body = listener.received[0]
        verify(secret, headers, body)
        assert json.loads(body)["id"] == run["id"]
        assert json.loads(body)["status"] == "completed"
    with httpx.Client(base_url=allowing.url, timeout=30) as browser:
        logged_in = browser.post("/ui/login", data={"key": allowing.keys["alice"]})
        assert logged_in.status_code == 303, logged_in.text
        # The cookie is Secure (browsers keep those on loopback over http; httpx does not).
        cookie = {"Cookie": logged_in.headers["set-cookie"].split(";")[0]}
        page = eventually_sync(
            lambda: _page_with_webhook(browser, cookie, run["id"]),
            what="the delivery on the run page",
        )
        assert "badge-delivered" in page and listener.url.split("?")[0] in page

    with get_sync_client(url=allowing.url, api_key=allowing.keys["alice"]) as sdk:
        thread = sdk.threads.create()
        lg_run = sdk.runs.create(
            thread["thread_id"],
            "echo",
            input=holding({"role": "user", "content": "yo"}),
            webhook=listener.url,
        )
        sdk.runs.join(thread["thread_id"], lg_run["run_id"])
    eventually_sync(lambda: len(listener.received) == 2, what="the LangGraph webhook")
    headers, body = listener.received[1]
    verify(secret, headers, body)
    sent = json.loads(body)
    assert sent["run_id"] == lg_run["run_id"] and sent["status"] == "success"
    assert sent["thread_id"] == thread["thread_id"]


def _page_with_webhook(browser: httpx.Client, cookie: dict[str, str], run_id: str) -> str:
    page = browser.get(f"/ui/runs/{run_id}", headers=cookie)
    assert page.status_code == 200
    return page.text if 'id="webhook"' in page.text else ""


def test_the_secret_over_http_is_the_one_the_cli_shows(allowing: Server) -> None:
    with tether.connect(allowing.url, api_key=allowing.keys["bob"]) as tt:
        secret = tt.webhook_secret()
        assert _secret(allowing.db, "bob") == secret
        rotated = tt.webhook_secret(rotate=True)
        assert rotated != secret and _secret(allowing.db, "bob") == rotated


def test_a_private_webhook_is_refused(allowing: Server) -> None:
    with allowing.client("alice") as alice:
        session = new_session(alice)
        refused = alice.post(
            f"/v1/sessions/{session['id']}/runs",
            json={"goal": "hi", "webhook": "http://10.0.0.1/hook"},
        )
        assert refused.status_code == 422
        assert "webhook" in refused.json()["detail"]
        assert alice.get(f"/v1/sessions/{session['id']}/runs").json()["data"] == []
    with get_sync_client(url=allowing.url, api_key=allowing.keys["alice"]) as sdk:
        tid = sdk.threads.create()["thread_id"]
        with pytest.raises(UnprocessableEntityError, match="webhook"):
            sdk.runs.create(tid, "echo", input={}, webhook="http://[::ffff:192.168.1.1]/hook")
        with pytest.raises(UnprocessableEntityError, match="webhook"):
            sdk.crons.create_for_thread(tid, "echo", schedule="* * * * *", webhook="http://x.y/")
