"""Assistants with versions through the official client and the native API: create, update
(a new version each time), versions, set_latest, count, search, delete; a run records the
version it used, with its config and context; registered agents' assistants stay fixed."""

from __future__ import annotations

import uuid
from typing import Any, cast

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError


def _tag() -> dict[str, str]:
    """Metadata that finds only this test's assistants on the shared server."""
    return {"test": uuid.uuid4().hex}


def test_an_assistant_is_versioned_and_runs_use_the_chosen_version(
    client: SyncLangGraphClient, native: httpx.Client
) -> None:
    tag = _tag()
    made = client.assistants.create(
        "echo",
        name="greeter",
        description="says hi",
        config={"configurable": {"tone": "warm"}},
        context={"lang": "en"},
        metadata=tag,
    )
    aid = made["assistant_id"]
    assert uuid.UUID(aid)
    assert (made["graph_id"], made["name"], made["version"]) == ("echo", "greeter", 1)
    assert made["context"] == {"lang": "en"}
    changed = client.assistants.update(aid, context={"lang": "fr"}, metadata={"step": 2})
    assert changed["version"] == 2
    assert changed["context"] == {"lang": "fr"}
    assert changed["metadata"] == {**tag, "step": 2}  # merged
    assert changed["name"] == "greeter"
    versions = client.assistants.get_versions(aid)
    assert [v["version"] for v in versions] == [2, 1]
    assert [v["context"] for v in versions] == [{"lang": "fr"}, {"lang": "en"}]
    assert client.assistants.get(aid)["version"] == 2

    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, aid, input={"text": "hi"})
    client.runs.join(thread_id, run["run_id"])
    recorded = native.get(f"/v1/runs/{run['run_id']}").json()
    assert recorded["agent"] == "echo"
    assert recorded["metadata"]["assistant"] == {
        "id": aid,
        "version": 2,
        "name": "greeter",
        "config": {"configurable": {"tone": "warm"}},
        "context": {"lang": "fr"},
    }
    assert run["assistant_id"] == aid
    assert cast("dict[str, Any]", run)["kwargs"]["context"] == {"lang": "fr"}

    back = client.assistants.set_latest(aid, 1)
    assert (back["version"], back["context"]) == (1, {"lang": "en"})
    again = client.runs.wait(thread_id, aid, input={"text": "again"}, context={"extra": 1})
    assert isinstance(again, dict)
    [latest, _] = client.runs.list(thread_id)
    assert cast("dict[str, Any]", latest)["kwargs"]["context"] == {"lang": "en", "extra": 1}
    recorded = native.get(f"/v1/runs/{latest['run_id']}").json()
    assert recorded["metadata"]["assistant"]["version"] == 1
    with pytest.raises(NotFoundError):
        client.assistants.set_latest(aid, 7)
    third = client.assistants.update(aid, name="greeter 3")
    assert third["version"] == 3  # numbered after the last, whichever was chosen
    assert third["context"] == {"lang": "en"}  # made from the chosen one


def test_count_search_and_delete(client: SyncLangGraphClient, bob: SyncLangGraphClient) -> None:
    tag = _tag()
    first = client.assistants.create("echo", name="alpha one", metadata=tag)
    client.assistants.create("echo", name="beta", metadata=tag)
    assert client.assistants.count(metadata=tag) == 2
    assert client.assistants.count(metadata=tag, name="ALPHA") == 1
    found = client.assistants.search(metadata=tag, sort_by="name")
    assert [a["name"] for a in found] == ["alpha one", "beta"]
    assert bob.assistants.count(metadata=tag) == 0  # another owner's are not seen
    with pytest.raises(NotFoundError):
        bob.assistants.get(first["assistant_id"])
    client.assistants.delete(first["assistant_id"])
    with pytest.raises(NotFoundError):
        client.assistants.get(first["assistant_id"])
    assert client.assistants.count(metadata=tag) == 1


def test_create_with_an_id_and_if_exists(client: SyncLangGraphClient) -> None:
    aid = str(uuid.uuid4())
    made = client.assistants.create("echo", assistant_id=aid, name="fixed")
    assert made["assistant_id"] == aid
    with pytest.raises(ConflictError):
        client.assistants.create("echo", assistant_id=aid)
    same = client.assistants.create("echo", assistant_id=aid, if_exists="do_nothing", name="x")
    assert same["name"] == "fixed"
    with pytest.raises(NotFoundError, match="nobody"):  # no such agent
        client.assistants.create("nobody")
    with pytest.raises(UnprocessableEntityError):
        client.assistants.create("echo", assistant_id="not-a-uuid")


def test_registered_agents_assistants_stay_fixed(client: SyncLangGraphClient) -> None:
    with pytest.raises(ConflictError, match="default assistant"):
        client.assistants.update("echo", name="mine")
    with pytest.raises(ConflictError):
        client.assistants.delete("echo")
    assert client.assistants.get_versions("echo")[0]["version"] == 1
    assert client.assistants.set_latest("echo", 1)["graph_id"] == "echo"
    assert client.assistants.count(graph_id="coder", metadata={"created_by": "system"}) == 1


def test_native_assistants(native: httpx.Client) -> None:
    made = native.post(
        "/v1/assistants", json={"graph_id": "echo", "name": "native", "config": {"k": 1}}
    )
    assert made.status_code == 201, made.text
    aid = made.json()["id"]
    assert made.headers["Location"] == f"/v1/assistants/{aid}"
    changed = native.patch(f"/v1/assistants/{aid}", json={"config": {"k": 2}}).json()
    assert changed["version"] == 2
    versions = native.get(f"/v1/assistants/{aid}/versions").json()["data"]
    assert [(v["version"], v["config"]) for v in versions] == [(2, {"k": 2}), (1, {"k": 1})]
    chosen = native.post(f"/v1/assistants/{aid}/latest", json={"version": 1}).json()
    assert chosen["config"] == {"k": 1}
    listed = native.get("/v1/assistants", params={"limit": 1000}).json()["data"]
    assert aid in [a["id"] for a in listed]

    session = native.post("/v1/sessions", json={}).json()["id"]
    run = native.post(
        f"/v1/sessions/{session}/runs", json={"goal": "hi", "assistant_id": aid}
    ).json()
    assert run["agent"] == "echo"
    assert run["metadata"]["assistant"]["version"] == 1
    assert run["metadata"]["assistant"]["config"] == {"k": 1}
    clash = native.post(
        f"/v1/sessions/{session}/runs",
        json={"goal": "hi", "assistant_id": aid, "agent": "coder"},
    )
    assert clash.status_code == 422
    unknown = native.post("/v1/assistants", json={"graph_id": "nobody"})
    assert unknown.json()["code"] == "agent_not_found"
    assert unknown.headers["content-type"].startswith("application/problem+json")
    assert native.delete(f"/v1/assistants/{aid}").status_code == 204
    assert native.get(f"/v1/assistants/{aid}").status_code == 404
    assert native.post(f"/v1/assistants/{aid}/latest", json={"version": 1}).status_code == 404


def test_a_graph_id_that_is_no_string_is_422(native: httpx.Client) -> None:
    aid = native.post("/v1/assistants", json={"graph_id": "echo"}).json()["id"]
    for graph_id in ([], ["echo"], {"a": 1}, 7):
        for method, path in (("PATCH", f"/assistants/{aid}"), ("POST", "/assistants")):
            answer = native.request(method, path, json={"graph_id": graph_id})
            assert answer.status_code == 422, (method, graph_id, answer.text)
            assert answer.json()["code"] == "validation_error"
    assert native.get(f"/v1/assistants/{aid}").json()["version"] == 1
