"""Stateless runs through the official client and the native API: a run without a thread runs
in a session made for it, deleted once the run has ended (on_completion "delete", the default)
or kept ("keep"); a batch mixes runs of threads and stateless runs."""

from __future__ import annotations

from typing import Any, cast

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import UnprocessableEntityError
from langgraph_sdk.schema import RunCreateMetadata

from tests.langgraph.lgkit import contents, said, user
from tests.waiting import eventually_sync

#: The reaper deletes unread temporary sessions at its sweeps (a sweep interval after the end).
SWEPT = 60


def _gone(native: httpx.Client, path: str) -> bool:
    return native.get(path).status_code == 404


def test_wait_without_a_thread_answers_and_deletes_its_thread(
    raw: httpx.Client, native: httpx.Client, client: SyncLangGraphClient
) -> None:
    result = client.runs.wait(None, "echo", input=said("hi"))
    assert isinstance(result, dict)
    assert contents(result) == [("human", "hi"), ("ai", "echo: hi")]
    answer = raw.post(
        "/runs/wait", json={"assistant_id": "echo", "input": {"messages": [user("hi")]}}
    )
    assert answer.status_code == 200
    assert contents(answer.json()) == [("human", "hi"), ("ai", "echo: hi")]
    thread_id = answer.headers["Content-Location"].split("/")[2]
    eventually_sync(
        lambda: _gone(native, f"/v1/sessions/{thread_id}"), what="the stateless thread deleted"
    )


def test_stream_without_a_thread_kept_on_completion_keep(
    client: SyncLangGraphClient, native: httpx.Client
) -> None:
    created: list[RunCreateMetadata] = []
    parts = list(
        client.runs.stream(
            None,
            "echo",
            input=said("keep me"),
            stream_mode=["values"],
            on_completion="keep",
            on_run_created=created.append,
        )
    )
    assert parts[0].event == "metadata"
    assert contents(parts[-1].data) == [("human", "keep me"), ("ai", "echo: keep me")]
    thread_id = created[0]["thread_id"]
    assert thread_id is not None  # (a stateless run has a thread too)
    assert contents(client.threads.get(thread_id)["values"]) == [
        ("human", "keep me"),
        ("ai", "echo: keep me"),
    ]
    session = native.get(f"/v1/sessions/{thread_id}").json()
    assert session["title"] == "stateless run"
    run = client.runs.get(thread_id, created[0]["run_id"])
    assert run["status"] == "success"
    assert cast("dict[str, Any]", run)["kwargs"]["on_completion"] == "keep"


def test_stream_without_a_thread_deletes_it_after_the_stream(
    client: SyncLangGraphClient, native: httpx.Client
) -> None:
    created: list[RunCreateMetadata] = []
    parts = list(
        client.runs.stream(None, "echo", input={"text": "bye"}, on_run_created=created.append)
    )
    assert parts[-1].event == "values"
    thread_id = created[0]["thread_id"]
    eventually_sync(
        lambda: _gone(native, f"/v1/sessions/{thread_id}"), what="the stateless thread deleted"
    )


def test_a_failed_stateless_run_raises_and_leaves_nothing(
    raw: httpx.Client, native: httpx.Client, client: SyncLangGraphClient
) -> None:
    with pytest.raises(Exception, match="ValueError: boom"):
        client.runs.wait(None, "echo", input={"fail": True})
    answer = raw.post("/runs/wait", json={"assistant_id": "echo", "input": {"fail": True}})
    assert answer.json() == {"__error__": {"error": "ValueError", "message": "boom"}}
    thread_id = answer.headers["Content-Location"].split("/")[2]
    eventually_sync(lambda: _gone(native, f"/v1/sessions/{thread_id}"), what="deleted")


def test_a_refused_stateless_run_leaves_no_session(
    client: SyncLangGraphClient, native: httpx.Client
) -> None:
    before = native.get("/v1/sessions", params={"limit": 200}).json()["data"]
    with pytest.raises(UnprocessableEntityError):
        client.runs.create(None, "echo", input={"text": "x"}, on_completion="sometimes")  # type: ignore[call-overload]
    with pytest.raises(UnprocessableEntityError, match="stateless"):
        client.runs.create(None, "echo", command={"resume": "yes"})
    with pytest.raises(UnprocessableEntityError, match="after_seconds"):  # refused by the run
        client.runs.create(None, "echo", input={"text": "x"}, after_seconds=10**12)
    after = native.get("/v1/sessions", params={"limit": 200}).json()["data"]
    assert {s["id"] for s in after} <= {s["id"] for s in before}  # (earlier ones may go)


def test_on_completion_is_refused_on_a_thread_run(client: SyncLangGraphClient) -> None:
    thread_id = client.threads.create()["thread_id"]
    with pytest.raises(UnprocessableEntityError, match="on_completion"):
        client.runs.create(thread_id, "echo", input={"text": "x"}, on_completion="keep")  # type: ignore[call-overload]
    assert client.runs.list(thread_id) == []


@pytest.mark.slow
def test_a_background_stateless_run_is_deleted_by_the_sweep(
    client: SyncLangGraphClient, native: httpx.Client
) -> None:
    run = client.runs.create(None, "echo", input={"text": "later"})
    assert run["status"] == "pending"
    eventually_sync(
        lambda: _gone(native, f"/v1/runs/{run['run_id']}"),
        timeout=SWEPT,
        what="the run and its thread swept",
    )
    assert _gone(native, f"/v1/sessions/{run['thread_id']}")


def test_a_batch_runs_in_threads_and_without(
    client: SyncLangGraphClient, native: httpx.Client
) -> None:
    thread_id = client.threads.create()["thread_id"]
    payloads: list[Any] = [
        {"assistant_id": "echo", "input": {"text": "alone"}, "on_completion": "keep"},
        {"thread_id": thread_id, "assistant_id": "echo", "input": {"text": "in it"}},
    ]
    runs = client.runs.create_batch(payloads)
    assert len(runs) == 2
    assert runs[1]["thread_id"] == thread_id
    assert runs[0]["thread_id"] != thread_id
    for run in runs:
        client.runs.join(run["thread_id"], run["run_id"])
        assert client.runs.get(run["thread_id"], run["run_id"])["status"] == "success"
    with pytest.raises(UnprocessableEntityError):
        client.runs.create_batch([])


def test_native_stateless_run_kept_or_deleted(native: httpx.Client) -> None:
    kept = native.post("/v1/runs", json={"goal": "hello", "on_completion": "keep"})
    assert kept.status_code == 201, kept.text
    done = native.get(f"/v1/runs/{kept.json()['id']}/wait", params={"timeout": 30}).json()
    assert done["status"] == "completed"
    session = native.get(f"/v1/sessions/{done['session_id']}").json()
    assert session["title"] == "stateless run"
    assert (
        native.get(f"/v1/sessions/{done['session_id']}/messages").json()["data"][-1]["content"]
        == "echo: hello"
    )
    bad = native.post("/v1/runs", json={"goal": "x", "on_completion": "later"})
    assert bad.status_code == 422
    assert bad.headers["content-type"].startswith("application/problem+json")
