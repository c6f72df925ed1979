"""Revoked keys and ended UI sessions, over real HTTP: open SSE streams (native, LangGraph and
the UI's) end at the next heartbeat; the UI cookie is a server-side session, never the key, and
logging out ends it on the server."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.httpkit import Server, new_run, new_session, read_sse, start_server, wait_run
from tests.serving import cli

pytestmark = pytest.mark.slow

#: A stream still open after this many heartbeats (0.2 s each) was not ended.
BEATS = 50


@pytest.fixture(scope="module")
def fast(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server whose streams beat every 0.2 s."""
    running = start_server(tmp_path_factory.mktemp("revoke"), "--heartbeat-seconds", "0.2")
    yield running
    running.stop()


def _new_key(server: Server, owner: str) -> tuple[str, str]:
    """(key, key id) of a new key for owner."""
    key = cli("keys", "create", "--owner", owner, "--db", server.db).stdout.strip()
    listed = json.loads(cli("keys", "list", "--db", server.db, "--owner", owner, "--json").stdout)
    return key, next(k["id"] for k in listed["data"] if key.startswith(k["prefix"]))


def _revoke(server: Server, key_id: str) -> None:
    assert cli("keys", "revoke", key_id, "--db", server.db).returncode == 0


@contextmanager
def _logged_in(server: Server, key: str) -> Iterator[httpx.Client]:
    """A browser-like client logged in to the UI with key. (It sends the cookie by hand: a
    browser sends a Secure cookie back to a loopback host over http, httpx does not.)"""
    with httpx.Client(base_url=server.url, timeout=30) as browser:
        answer = browser.post("/ui/login", data={"key": key, "next": "/ui"})
        assert answer.status_code == 303 and answer.headers["location"] == "/ui", answer.text
        browser.headers["Cookie"] = f"tether_session={answer.cookies['tether_session']}"
        yield browser


def _token(browser: httpx.Client) -> str:
    return browser.headers["Cookie"].removeprefix("tether_session=")


def _waiting_run(client: httpx.Client) -> dict[str, Any]:
    run = new_run(client, new_session(client)["id"], input={"wait": "go on?"})
    return wait_run(client, run["id"])


def test_a_revoked_keys_native_streams_end(fast: Server) -> None:
    key, key_id = _new_key(fast, "erin")
    with fast.client(key=key) as erin:
        run = _waiting_run(erin)
        session_stream = erin.stream("GET", f"/v1/sessions/{run['session_id']}/events")
        run_stream = erin.stream("GET", f"/v1/runs/{run['id']}/events")
        with session_stream as by_session, run_stream as by_run:
            session_lines, run_lines = by_session.iter_lines(), by_run.iter_lines()
            assert read_sse(session_lines, heartbeats=1)[1] == 1
            assert read_sse(run_lines, heartbeats=1)[1] == 1
            _revoke(fast, key_id)
            assert read_sse(session_lines, heartbeats=BEATS)[1] < BEATS
            assert read_sse(run_lines, heartbeats=BEATS)[1] < BEATS
        assert erin.get(f"/v1/runs/{run['id']}/events").status_code == 401


def test_a_revoked_keys_langgraph_stream_ends(fast: Server) -> None:
    key, key_id = _new_key(fast, "frank")
    spare, _ = _new_key(fast, "frank")
    with fast.client(key=key) as frank:
        thread = frank.post("/threads", json={}).json()["thread_id"]
        body = {"assistant_id": "echo", "input": {"sleep": 120}, "stream_mode": ["values"]}
        with frank.stream("POST", f"/threads/{thread}/runs/stream", json=body) as stream:
            assert stream.status_code == 200
            lines = stream.iter_lines()
            assert sum(line == ": heartbeat" for line in _until_heartbeat(lines)) == 1
            _revoke(fast, key_id)
            beats = 0
            for line in lines:
                beats += line == ": heartbeat"
                if beats >= BEATS:
                    break
            assert beats < BEATS
    with fast.client(key=spare) as still_frank:  # the run itself goes on: cancel it
        runs = still_frank.get(f"/threads/{thread}/runs").json()
        assert still_frank.post(f"/v1/runs/{runs[0]['run_id']}/cancel").status_code == 200


def _until_heartbeat(lines: Iterator[str]) -> Iterator[str]:
    for line in lines:
        yield line
        if line == ": heartbeat":
            return


def test_the_ui_cookie_is_a_session_that_logout_ends(fast: Server) -> None:
    key, _ = _new_key(fast, "gina")
    with _logged_in(fast, key) as browser, fast.client(key=key) as gina:
        token = _token(browser)
        assert key not in token
        run = _waiting_run(gina)
        assert browser.get("/ui").status_code == 200
        page = browser.get(f"/ui/runs/{run['id']}").text
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
        assert csrf is not None
        with browser.stream("GET", f"/ui/runs/{run['id']}/events") as stream:
            assert stream.status_code == 200
            lines = stream.iter_lines()
            assert read_sse(lines, heartbeats=1)[1] == 1
            assert browser.post("/ui/logout", data={"next": ""}).status_code == 303
            assert read_sse(lines, heartbeats=BEATS)[1] < BEATS
        # The old cookie, replayed (stolen, or kept by a browser), opens nothing any more.
        with httpx.Client(base_url=fast.url, cookies={"tether_session": token}) as replay:
            assert replay.get("/ui").status_code == 303
            assert replay.get(f"/ui/runs/{run['id']}/events").status_code == 401
            cancel = replay.post(f"/ui/runs/{run['id']}/cancel", data={"csrf": csrf[1]})
            assert cancel.status_code == 303 and cancel.headers["location"] == "/ui/login"
        assert gina.get(f"/v1/runs/{run['id']}").json()["status"] == "waiting"
        # The key itself is no cookie: sent as one, it opens no page.
        with httpx.Client(base_url=fast.url, cookies={"tether_session": key}) as guess:
            assert guess.get("/ui").status_code == 303


def test_revoking_a_key_ends_its_ui_sessions_and_their_streams(fast: Server) -> None:
    key, key_id = _new_key(fast, "hugo")
    with _logged_in(fast, key) as browser, fast.client(key=key) as hugo:
        run = _waiting_run(hugo)
        with browser.stream("GET", f"/ui/runs/{run['id']}/events") as stream:
            lines = stream.iter_lines()
            assert read_sse(lines, heartbeats=1)[1] == 1
            _revoke(fast, key_id)
            assert read_sse(lines, heartbeats=BEATS)[1] < BEATS
        assert browser.get("/ui").status_code == 303
        login = browser.get("/ui/login")
        assert "Your session has ended" in login.text
        assert 'tether_session=""' in login.headers["set-cookie"]  # the page clears it


def test_the_database_holds_no_ui_token(fast: Server) -> None:
    key, _ = _new_key(fast, "ines")
    with _logged_in(fast, key) as browser:
        token = _token(browser)
    assert token.encode() not in fast.db.read_bytes()
    wal = Path(f"{fast.db}-wal")
    assert not wal.exists() or token.encode() not in wal.read_bytes()
