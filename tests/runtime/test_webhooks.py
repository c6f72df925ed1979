"""Webhooks from the library: a local listener (allowed by the operator) receives the ended
run, signed with the owner's secret; a 500 is retried with backoff, each attempt a run.webhook
event; a pending delivery survives a restart; private and odd URLs are refused at create."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import tether
from tests.support import TEST_SETTINGS
from tests.waiting import WAIT, eventually_sync
from tests.webhook_listener import Listener, listening, verify
from tether.core.clock import ManualClock
from tether.core.errors import UsageError
from tether.core.event import EventType
from tether.core.status import RunStatus
from tether.runtime.webhooks import WebhookPolicy, backoff, signature

SETTINGS = replace(TEST_SETTINGS, webhook_interval=0.02, webhook_allow=("127.0.0.1",))


@pytest.fixture
def listener() -> Iterator[Listener]:
    with listening() as heard:
        yield heard


def test_an_ended_run_is_posted_signed(tmp_path: Path, listener: Listener) -> None:
    with tether.open(tmp_path / "t.db", settings=SETTINGS) as tt:
        secret = tt.webhook_secret()
        assert secret == tt.webhook_secret() and secret.startswith("whsec_")
        session = tt.sessions.create()
        run = session.runs.create("greet", input={"text": "hi"}, webhook=listener.url).wait(WAIT)
        assert run.status is RunStatus.COMPLETED
        eventually_sync(lambda: listener.received, what="the webhook")
        headers, body = listener.received[0]
        verify(secret, headers, body)
        assert headers["content-type"] == "application/json"
        sent = json.loads(body)
        assert sent["id"] == run.id and sent["status"] == "completed"
        assert sent["output"] == {"text": "echo: hi"}
        events = eventually_sync(lambda: _webhook_events(tt, run.id), what="the event")
        assert events[0]["outcome"] == "delivered" and events[0]["status_code"] == 200
        rotated = tt.webhook_secret(rotate=True)
        assert rotated != secret and tt.webhook_secret() == rotated


def _webhook_events(tt: tether.Tether, run_id: str) -> list[dict[str, Any]]:
    events = tt.service.list_events(run_id=run_id)
    return [e.data for e in events if e.type == EventType.RUN_WEBHOOK]


def test_failed_and_cancelled_runs_are_sent_too(tmp_path: Path, listener: Listener) -> None:
    with tether.open(tmp_path / "t.db", settings=SETTINGS) as tt:
        session = tt.sessions.create()
        failed = session.runs.create("break", input={"fail": "no"}, webhook=listener.url)
        assert failed.wait(WAIT).status is RunStatus.FAILED
        waiting = session.runs.create("ask", input={"wait": "ok?"}, webhook=listener.url)
        eventually_sync(lambda: tt.runs.get(waiting.id).status is RunStatus.WAITING)
        waiting.cancel()
        eventually_sync(lambda: len(listener.received) == 2, what="two webhooks")
        statuses = sorted(json.loads(body)["status"] for _, body in listener.received)
        assert statuses == ["cancelled", "failed"]


def test_a_refused_delivery_is_retried_with_backoff(tmp_path: Path, listener: Listener) -> None:
    clock = ManualClock()
    listener.codes = [500, 503]
    with tether.open(tmp_path / "t.db", settings=SETTINGS, clock=clock) as tt:
        run = tt.sessions.create().runs.create("go", webhook=listener.url).wait(WAIT)
        eventually_sync(lambda: len(_webhook_events(tt, run.id)) == 1, what="attempt 1")
        first = _webhook_events(tt, run.id)[0]
        assert (first["outcome"], first["status_code"], first["attempt"]) == ("retrying", 500, 1)
        assert first["error"] == "answered 500"
        clock.advance(backoff(1))
        eventually_sync(lambda: len(_webhook_events(tt, run.id)) == 2, what="attempt 2")
        clock.advance(backoff(2))
        eventually_sync(lambda: len(_webhook_events(tt, run.id)) == 3, what="attempt 3")
        outcomes = [e["outcome"] for e in _webhook_events(tt, run.id)]
        assert outcomes == ["retrying", "retrying", "delivered"]
        assert len(listener.received) == 3
        assert len({body for _, body in listener.received}) == 1  # the same run each time


def test_a_pending_delivery_survives_a_restart(tmp_path: Path, listener: Listener) -> None:
    clock = ManualClock()
    db = tmp_path / "t.db"
    unreachable = replace(SETTINGS, webhook_allow=())  # 127.0.0.1 refused: the attempt fails
    with tether.open(db, settings=SETTINGS, clock=clock, worker=False) as tt:
        session = tt.sessions.create()
        run = session.runs.create("later", webhook=listener.url)
    with tether.open(db, settings=unreachable, clock=clock) as tt:
        assert tt.runs.get(run.id).wait(WAIT).status is RunStatus.COMPLETED
        events = eventually_sync(lambda: _webhook_events(tt, run.id), what="attempt 1")
        assert events[0]["outcome"] == "retrying" and "refused" in events[0]["error"]
    assert listener.received == []
    clock.advance(backoff(1))
    with tether.open(db, settings=SETTINGS, clock=clock) as tt:  # restarted, allowed now
        eventually_sync(lambda: listener.received, what="the webhook after the restart")
        assert json.loads(listener.received[0][1])["id"] == run.id


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/x",
        "http://localhost/x",
        "http://10.1.2.3/x",
        "http://192.168.0.1/x",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/x",
        "http://[::ffff:127.0.0.1]/x",
        "http://[::ffff:10.0.0.1]/x",
        "http://[fe80::1]/x",
        "http://[fc00::1]/x",
        "http://224.0.0.1/x",
        "http://0.0.0.0/x",
        "http://240.0.0.1/x",
        "http://100.64.0.1/x",
        "ftp://example.com/x",
        "file:///etc/passwd",
        "http://user:pw@example.com/x",
        "http:///x",
        "not a url",
        "http://example.com:99999/x",
        "http://2130706433/x",
        "http://0x7f000001/x",
        "http://0177.0.0.1/x",
        "http://127.1/x",
        "http://localhost./x",
        "http://[2002:7f00:1::]/x",
        "http://[2002:a9fe:a9fe::1]/latest/meta-data",
        "http://[2002:a00:1::]/x",
        "http://93.184.215.14/a b",
        "http://93.184.215.14/a\x00b",
    ],
)
def test_private_and_odd_urls_are_refused(tmp_path: Path, url: str) -> None:
    with tether.open(tmp_path / "t.db", worker=False) as tt:
        session = tt.sessions.create()
        with pytest.raises(UsageError, match="webhook"):
            session.runs.create("go", webhook=url)
        assert session.runs.list() == []


def test_the_allow_list_takes_hosts_and_networks() -> None:
    assert WebhookPolicy(("127.0.0.0/8",)).check("http://127.0.0.2:8/x").port == 8
    assert WebhookPolicy(("LOCALHOST",)).check("http://localhost/x").path == "/x"
    target = WebhookPolicy(("10.0.0.0/8",)).check("http://[::ffff:10.0.0.1]/x")
    assert target.address == ipaddress.ip_address("::ffff:10.0.0.1")
    with pytest.raises(UsageError, match="refused"):
        WebhookPolicy(("10.0.0.0/8",)).check("http://192.168.1.1/x")
    with pytest.raises(UsageError):
        WebhookPolicy(("",))


def test_the_signature_is_hmac_sha256_of_time_and_body() -> None:
    mac = hmac.new(b"s", b"1700000000.{}", hashlib.sha256).hexdigest()
    assert signature("s", 1700000000, b"{}") == f"t=1700000000,v1={mac}"
