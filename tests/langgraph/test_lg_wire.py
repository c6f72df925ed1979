"""The wire itself: the SSE format and headers the SDK relies on, what the client sends by
default accepted, and every option for a feature tether does not provide refused with a 422
naming it (and nothing stored)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import UnprocessableEntityError

from tests.langgraph.lgkit import Server, said, wire
from tests.waiting import eventually_sync


def _frames(body: bytes) -> list[dict[str, str]]:
    frames = []
    for block in body.split(b"\r\n\r\n"):
        if not block:
            continue
        fields = {}
        for line in block.decode().split("\r\n"):
            name, _, value = line.partition(": ")
            fields[name] = value
        frames.append(fields)
    return frames


def test_sse_format_headers_and_no_end_event(
    client: SyncLangGraphClient, raw: httpx.Client
) -> None:
    tid = client.threads.create()["thread_id"]
    body = {
        "assistant_id": "echo",
        "input": said("wire"),
        "stream_mode": "values",
        "stream_subgraphs": False,
        "stream_resumable": False,
        "on_disconnect": "continue",
        "feedback_keys": ["score"],
        "durability": "exit",
        "checkpoint_during": True,
        "strict_resume": True,
        "metadata": {"from": "test"},
        "config": {"tags": ["t"], "configurable": {"model": "m"}},
        "context": {"user": "ada"},
    }
    with raw.stream("POST", f"/threads/{tid}/runs/stream", json=body) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        data = answer.read()
    frames = _frames(data)
    assert [f["event"] for f in frames] == ["metadata", "values", "values"]
    assert all(set(f) == {"event", "data"} for f in frames)
    run_id = json.loads(frames[0]["data"])["run_id"]
    assert answer.headers["location"] == f"/threads/{tid}/runs/{run_id}/stream"
    assert answer.headers["content-location"] == f"/threads/{tid}/runs/{run_id}"
    assert data.startswith(b"event: metadata\r\ndata: {")
    run = client.runs.get(tid, run_id)
    assert run["metadata"] == {"from": "test"}
    assert wire(run)["kwargs"]["durability"] == "exit"
    assert wire(run)["kwargs"]["context"] == {"user": "ada"}

    body["stream_resumable"] = True
    with raw.stream("POST", f"/threads/{tid}/runs/stream", json=body) as answer:
        resumable = _frames(answer.read())
    assert all("id" in f for f in resumable)

    created = raw.post(f"/threads/{tid}/runs", json={"assistant_id": "echo", "input": {}})
    assert created.status_code == 200
    rid = created.json()["run_id"]
    assert created.headers["content-location"] == f"/threads/{tid}/runs/{rid}"
    client.runs.join(tid, rid)
    waited = raw.post(f"/threads/{tid}/runs/wait", json={"assistant_id": "echo", "input": {}})
    assert waited.headers["location"].endswith("/join")
    assert json.loads(waited.content)["messages"]


def test_what_the_client_sends_by_default_is_accepted(
    client: SyncLangGraphClient, raw: httpx.Client
) -> None:
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "echo", input=said("q"))
    rid = run["run_id"]
    client.runs.join(tid, rid)
    for query in (
        "stream_mode=&cancel_on_disconnect=false",
        "stream_mode=&cancel_on_disconnect=0",
        "stream_mode=values&stream_mode=updates&cancel_on_disconnect=False",
    ):
        with raw.stream("GET", f"/threads/{tid}/runs/{rid}/stream?{query}") as answer:
            assert answer.status_code == 200, answer.read()
            assert b"event: metadata" in answer.read()
    assert raw.get(f"/threads/{tid}/runs?limit=10&offset=0").status_code == 200
    assert raw.get(f"/threads/{tid}/state?subgraphs=false").status_code == 200
    assert raw.get(f"/threads/{tid}/state?subgraphs=0").status_code == 200
    assert raw.post(f"/threads/{tid}/history", json={"limit": 5}).status_code == 200
    sleeper = client.runs.create(tid, "echo", input={"sleep": 60})["run_id"]
    cancel = raw.post(f"/threads/{tid}/runs/{sleeper}/cancel?wait=0&action=interrupt")
    assert (cancel.status_code, cancel.content) == (202, b"")
    assert raw.delete(f"/threads/{tid}/runs/{sleeper}").status_code == 204
    missing = raw.get(f"/threads/{tid}/runs/{sleeper}")
    assert missing.status_code == 404 and isinstance(missing.json()["detail"], str)


REFUSED: list[tuple[str, dict[str, Any]]] = [
    ("interrupt_before", {"interrupt_before": ["agent"]}),
    ("interrupt_after", {"interrupt_after": "*"}),
    ("checkpoint_id", {"checkpoint_id": "00000000-0000-4000-8000-000000000000"}),
    ("checkpoint", {"checkpoint": {"checkpoint_id": "x", "checkpoint_ns": ""}}),
    ("stream_subgraphs", {"stream_subgraphs": True}),
    ("stream_mode 'debug'", {"stream_mode": ["values", "debug"]}),
    ("stream_mode 'events'", {"stream_mode": "events"}),
    ("langsmith_tracer", {"langsmith_tracing": {"project_name": "p"}}),
]


@pytest.mark.parametrize(("option", "kwargs"), REFUSED, ids=[o for o, _ in REFUSED])
def test_an_option_tether_does_not_provide_is_refused_naming_it(
    client: SyncLangGraphClient, option: str, kwargs: dict[str, Any]
) -> None:
    tid = client.threads.create()["thread_id"]
    calls: list[Callable[[], object]] = [
        lambda: client.runs.create(tid, "echo", input=said("x"), **kwargs),
        lambda: list(client.runs.stream(tid, "echo", input=said("x"), **kwargs)),
    ]
    for call in calls:
        with pytest.raises(UnprocessableEntityError) as caught:
            call()
        assert option in caught.value.message
        assert caught.value.code == "unsupported_option"
    assert client.runs.list(tid) == []
    assert client.threads.get_state(tid)["values"] == {}


def test_other_refusals_name_the_option(client: SyncLangGraphClient, raw: httpx.Client) -> None:
    tid = client.threads.create()["thread_id"]
    with pytest.raises(UnprocessableEntityError, match=r"command\.update"):
        client.runs.create(tid, "echo", command={"update": {"x": 1}, "resume": "y"})
    with pytest.raises(UnprocessableEntityError, match="subgraphs"):
        client.threads.get_state(tid, subgraphs=True)
    with pytest.raises(UnprocessableEntityError, match="supersteps"):
        client.threads.create(supersteps=[{"updates": [{"values": {}, "as_node": "a"}]}])
    unknown = raw.post(
        f"/threads/{tid}/runs", json={"assistant_id": "echo", "input": {}, "temperature": 1}
    )
    assert unknown.status_code == 422 and "body.temperature" in unknown.json()["detail"]
    typed = raw.post(f"/threads/{tid}/runs", json={"assistant_id": 5, "input": {}})
    assert typed.status_code == 422 and "must be a string" in typed.json()["detail"]
    assert client.runs.list(tid) == []


def test_on_disconnect_cancel_cancels_the_run_when_the_client_leaves(
    client: SyncLangGraphClient, server: Server
) -> None:
    tid = client.threads.create()["thread_id"]
    body = {"assistant_id": "echo", "input": {"sleep": 60}, "on_disconnect": "cancel"}
    with server.raw() as http, http.stream("POST", f"/threads/{tid}/runs/stream", json=body) as s:
        first = next(s.iter_lines())
        assert first == "event: metadata"
    [run] = client.runs.list(tid)
    eventually_sync(lambda: client.runs.get(tid, run["run_id"])["status"] == "interrupted")
