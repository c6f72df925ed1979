"""Threads are sessions: created, read, searched, updated and deleted through the official
client, visible through the native /v1 API (and native sessions visible as threads)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import (
    AuthenticationError,
    ConflictError,
    NotFoundError,
    UnprocessableEntityError,
)
from langgraph_sdk.stream.transport.sync_http import SyncProtocolSseTransport

from tests.langgraph.lgkit import MISSING, Server, contents, said, wire

THREAD_KEYS = {
    "thread_id",
    "created_at",
    "updated_at",
    "metadata",
    "status",
    "values",
    "interrupts",
}


def test_create_get_update_delete_a_thread(
    client: SyncLangGraphClient, native: httpx.Client
) -> None:
    thread_id = str(uuid.uuid4())
    thread = client.threads.create(metadata={"project": "calc", "n": 1}, thread_id=thread_id)
    assert set(thread) >= THREAD_KEYS
    assert thread["thread_id"] == thread_id
    assert (thread["status"], thread["values"], thread["interrupts"]) == ("idle", None, {})
    assert thread["metadata"] == {"project": "calc", "n": 1}
    assert client.threads.get(thread_id) == thread

    with pytest.raises(ConflictError):
        client.threads.create(thread_id=thread_id)
    same = client.threads.create(thread_id=thread_id, if_exists="do_nothing")
    assert same["metadata"] == {"project": "calc", "n": 1}

    updated = client.threads.update(thread_id, metadata={"n": 2, "owner": "me"})
    assert updated["metadata"] == {"project": "calc", "n": 2, "owner": "me"}
    assert client.threads.update(thread_id, metadata={"k": 1}, return_minimal=True) is None

    session = native.get(f"/v1/sessions/{thread_id}").json()
    assert session["metadata"] == {"project": "calc", "n": 2, "owner": "me", "k": 1}
    assert session["status"] == "active"

    client.threads.delete(thread_id)
    with pytest.raises(NotFoundError):
        client.threads.get(thread_id)
    assert native.get(f"/v1/sessions/{thread_id}").status_code == 404
    with pytest.raises(NotFoundError):
        client.threads.get(MISSING)


def test_search_threads_by_metadata_ids_and_status(client: SyncLangGraphClient) -> None:
    mark = uuid.uuid4().hex
    made = [client.threads.create(metadata={"mark": mark, "i": i})["thread_id"] for i in range(3)]
    found = client.threads.search(metadata={"mark": mark}, limit=2)
    assert [t["thread_id"] for t in found] == [made[2], made[1]]  # newest first
    rest = client.threads.search(metadata={"mark": mark}, limit=2, offset=2)
    assert [t["thread_id"] for t in rest] == [made[0]]
    oldest_first = client.threads.search(metadata={"mark": mark}, sort_order="asc")
    assert [t["thread_id"] for t in oldest_first] == made

    client.runs.wait(made[1], "echo", input=said("hi"))
    client.runs.wait(made[2], "echo", input={"text": "x", "fail": True}, raise_error=False)
    by_status = {
        status: [
            t["thread_id"] for t in client.threads.search(metadata={"mark": mark}, status=status)
        ]
        for status in ("idle", "busy", "error")
    }
    assert by_status == {"idle": [made[1], made[0]], "busy": [], "error": [made[2]]}
    picked = client.threads.search(ids=[made[0], made[2]], select=["thread_id", "status"])
    assert [wire(t) for t in picked] == [
        {"thread_id": made[2], "status": "error"},
        {"thread_id": made[0], "status": "idle"},
    ]
    extracted = client.threads.search(
        ids=[made[1]], extract={"last": "values.messages[-1].content", "none": "values.x[3]"}
    )
    assert extracted[0]["extracted"] == {"last": "echo: hi", "none": None}
    assert client.threads.search(values={"nothing": 1}, metadata={"mark": mark}) == []
    assert client.threads.count(metadata={"mark": mark}) == 3
    assert client.threads.count(metadata={"mark": mark}, status="error") == 1


def test_search_by_values_reads_every_thread_in_batches(
    client: SyncLangGraphClient, native: httpx.Client
) -> None:
    """values.messages is matched in Python a few threads at a time: a match in any batch is
    found, searched and counted."""
    mark = uuid.uuid4().hex
    made = [client.threads.create(metadata={"mark": mark})["thread_id"] for _ in range(12)]
    for n, thread_id in enumerate(made):
        native.post(f"/v1/sessions/{thread_id}/messages", json={"content": f"hello {n}"})
    for wanted in (made[0], made[6], made[11]):
        messages = wire(client.threads.get(wanted)["values"])["messages"]
        found = client.threads.search(metadata={"mark": mark}, values={"messages": messages})
        assert [t["thread_id"] for t in found] == [wanted]
        assert client.threads.count(metadata={"mark": mark}, values={"messages": messages}) == 1


def test_a_thread_ttl_is_the_session_ttl(client: SyncLangGraphClient, native: httpx.Client) -> None:
    thread_id = client.threads.create(ttl=60)["thread_id"]
    assert native.get(f"/v1/sessions/{thread_id}").json()["ttl_seconds"] == 3600
    assert wire(client.threads.get(thread_id, include=["ttl"]))["ttl"]["ttl"] == 60
    client.threads.update(thread_id, metadata={}, ttl={"ttl": 5, "strategy": "delete"})
    assert native.get(f"/v1/sessions/{thread_id}").json()["ttl_seconds"] == 300
    with pytest.raises(UnprocessableEntityError, match=r"ttl\.strategy"):
        client.threads.create(ttl={"ttl": 5, "strategy": "keep_latest"})


def test_native_sessions_and_runs_are_threads_and_runs(
    client: SyncLangGraphClient, native: httpx.Client
) -> None:
    session = native.post(
        "/v1/sessions",
        json={"title": "native", "metadata": {"via": "v1"}, "project": {"workspace": "./calc"}},
    ).json()
    sid = session["id"]
    assert native.post(f"/v1/sessions/{sid}/messages", json={"role": "user", "content": "hi"})
    run = native.post(f"/v1/sessions/{sid}/runs", json={"goal": "say hi", "agent": "echo"}).json()
    done = native.get(f"/v1/runs/{run['id']}/wait", params={"timeout": 15}).json()
    assert done["status"] == "completed"

    thread = client.threads.get(sid)
    assert (thread["metadata"], thread["status"]) == ({"via": "v1"}, "idle")
    assert wire(thread["values"])["workspace"] == "./calc"
    assert contents(thread["values"]) == [("human", "hi"), ("ai", "echo: say hi")]
    [listed] = client.runs.list(sid)
    assert (listed["run_id"], listed["assistant_id"], listed["status"]) == (
        run["id"],
        "echo",
        "success",
    )
    assert wire(listed)["started_at"] and wire(listed)["ended_at"] and wire(listed)["error"] is None
    assert sid in [t["thread_id"] for t in client.threads.search(metadata={"via": "v1"})]


def test_a_wrong_or_missing_key_is_refused(server: Server) -> None:
    for key in ("tk_wrong", ""):
        with server.sdk(key=key or "x") as sdk:
            if not key:
                sdk.http.client.headers.pop("x-api-key")
            with pytest.raises(AuthenticationError):
                sdk.threads.search()
            with pytest.raises(AuthenticationError):
                sdk.threads.create()
            with pytest.raises(AuthenticationError):
                sdk.store.get_item(["a"], key="k")
    with httpx.Client(base_url=server.url) as anonymous:
        assert anonymous.get("/ok").json() == {"ok": True}
        assert anonymous.get("/info").json()["flags"]["assistants"] is True
        bearer = {"Authorization": f"Bearer {server.keys['alice']}"}
        assert anonymous.post("/threads/search", json={}, headers=bearer).status_code == 200


def test_another_owners_thread_is_not_found(
    client: SyncLangGraphClient, bob: SyncLangGraphClient
) -> None:
    thread_id = client.threads.create(metadata={"secret": True})["thread_id"]
    run = client.runs.create(thread_id, "echo", input=said("mine"))
    client.runs.join(thread_id, run["run_id"])
    calls: list[Callable[[], object]] = [
        lambda: bob.threads.get(thread_id),
        lambda: bob.threads.update(thread_id, metadata={"x": 1}),
        lambda: bob.threads.delete(thread_id),
        lambda: bob.threads.get_state(thread_id),
        lambda: bob.threads.get_history(thread_id),
        lambda: bob.threads.update_state(thread_id, {"x": 1}),
        lambda: bob.runs.list(thread_id),
        lambda: bob.runs.get(thread_id, run["run_id"]),
        lambda: bob.runs.create(thread_id, "echo", input={}),
        lambda: bob.runs.cancel(thread_id, run["run_id"]),
        lambda: bob.runs.delete(thread_id, run["run_id"]),
    ]
    for call in calls:
        with pytest.raises(NotFoundError):
            call()
    with pytest.raises(httpx.HTTPStatusError) as caught:
        bob.runs.join(thread_id, run["run_id"])
    assert caught.value.response.status_code == 404
    assert thread_id not in [t["thread_id"] for t in bob.threads.search(limit=1000)]
    # ids are global: taking a used one is a conflict, whatever if_exists says, and shows nothing
    for if_exists in ("raise", "do_nothing"):
        with pytest.raises(httpx.HTTPStatusError) as taken:
            bob.threads.create(thread_id=thread_id, if_exists=if_exists)
        assert taken.value.response.status_code == 409
        assert "secret" not in taken.value.response.text
    # one UUID has one spelling: its upper-case form is refused, not taken as a second thread
    with pytest.raises(httpx.HTTPStatusError) as upper:
        bob.threads.create(thread_id=thread_id.upper())
    assert upper.value.response.status_code == 422
    assert "canonical form" in upper.value.response.text
    assert client.threads.get(thread_id)["metadata"] == {"secret": True}


def test_endpoints_tether_does_not_serve_are_refused_by_name(
    client: SyncLangGraphClient, server: Server
) -> None:
    tid = client.threads.create()["thread_id"]
    calls: list[tuple[Callable[[], object], str]] = [
        (lambda: client.assistants.get_graph("echo"), "graphs and schemas"),
        (lambda: client.assistants.get_schemas("echo"), "graphs and schemas"),
        (lambda: client.assistants.get_subgraphs("echo"), "graphs and schemas"),
        (lambda: client.http.post(f"/threads/{tid}/commands", json={}), "threads.stream"),
        (lambda: client.http.get(f"/threads/{tid}/stream/events"), "threads.stream"),
        (lambda: client.http.post(f"/threads/{tid}/stream/events", json={}), "threads.stream"),
    ]
    for call, feature in calls:
        with pytest.raises(httpx.HTTPStatusError) as refused:
            call()
        assert refused.value.response.status_code == 422, feature
        assert feature in refused.value.response.json()["detail"]
    assert client.threads.get(tid)["thread_id"] == tid  # nothing happened to the thread
    with httpx.Client(base_url=server.url) as anonymous:  # nothing is said without a key
        assert anonymous.get(f"/threads/{tid}/stream").status_code == 401


def test_the_v3_thread_stream_is_refused_as_every_unserved_route(server: Server) -> None:
    """threads.stream() subscribes with POST /threads/{tid}/stream/events: 422 naming it,
    not 405, through the SDK's own transport."""
    with httpx.Client(base_url=server.url, headers={"x-api-key": server.keys["alice"]}) as http:
        transport = SyncProtocolSseTransport(client=http, thread_id=str(uuid.uuid4()))
        with pytest.raises(httpx.HTTPStatusError) as refused:
            transport.open_event_stream({"channels": ["values"]})
        response = refused.value.response
        assert response.status_code == 422
        assert "threads.stream" in json.loads(response.read())["detail"]
