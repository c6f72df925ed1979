"""A busy thread under each multitask strategy: reject (409), enqueue (runs after), interrupt
(the running run is cancelled, kept) and rollback (the running run and what it wrote are
removed)."""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError

from tests.langgraph.lgkit import contents, said, wire


def _busy(client: SyncLangGraphClient) -> tuple[str, str]:
    """A thread whose run is pending or running for a minute (unless cancelled)."""
    tid: str = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "echo", input=said("first", sleep=60))
    assert client.threads.get(tid)["status"] == "busy"
    return tid, run["run_id"]


def test_reject_refuses_a_second_run(client: SyncLangGraphClient) -> None:
    tid, first = _busy(client)
    with pytest.raises(ConflictError, match="already running a task"):
        client.runs.create(tid, "echo", input=said("no"))
    with pytest.raises(ConflictError):
        client.runs.create(tid, "echo", input={}, multitask_strategy="reject")
    with pytest.raises(ConflictError):
        list(client.runs.stream(tid, "echo", input=said("no")))
    with pytest.raises(httpx.HTTPStatusError) as caught:
        client.runs.wait(tid, "echo", input=said("no"))
    assert caught.value.response.status_code == 409
    # Nothing of a refused run is kept: not its input messages either.
    assert [r["run_id"] for r in client.runs.list(tid)] == [first]
    assert contents(client.threads.get_state(tid)["values"]) == [("human", "first")]
    client.runs.cancel(tid, first)


def test_enqueue_runs_after_the_busy_run(client: SyncLangGraphClient) -> None:
    tid, first = _busy(client)
    second = client.runs.create(tid, "echo", input=said("second"), multitask_strategy="enqueue")
    assert second["status"] == "pending" and second["multitask_strategy"] == "enqueue"
    assert client.runs.get(tid, second["run_id"])["status"] == "pending"
    client.runs.cancel(tid, first)
    done = client.runs.join(tid, second["run_id"])
    assert contents(done) == [("human", "first"), ("human", "second"), ("ai", "echo: second")]
    assert [r["status"] for r in client.runs.list(tid)] == ["success", "interrupted"]


def test_interrupt_cancels_the_busy_run_and_keeps_it(client: SyncLangGraphClient) -> None:
    tid, first = _busy(client)
    done = client.runs.wait(tid, "echo", input=said("second"), multitask_strategy="interrupt")
    assert contents(done) == [("human", "first"), ("human", "second"), ("ai", "echo: second")]
    runs = client.runs.list(tid)
    assert [(r["status"], r["multitask_strategy"]) for r in runs] == [
        ("success", "interrupt"),
        ("interrupted", "reject"),
    ]
    assert runs[1]["run_id"] == first


def test_rollback_removes_the_busy_run_and_what_it_wrote(
    client: SyncLangGraphClient, native: httpx.Client
) -> None:
    tid, first = _busy(client)
    parts = list(
        client.runs.stream(tid, "echo", input=said("second"), multitask_strategy="rollback")
    )
    assert contents(parts[-1].data) == [("human", "second"), ("ai", "echo: second")]
    with pytest.raises(NotFoundError):
        client.runs.get(tid, first)
    assert native.get(f"/v1/runs/{first}").status_code == 404
    assert [r["run_id"] for r in client.runs.list(tid)] == [parts[0].data["run_id"]]
    messages = native.get(f"/v1/sessions/{tid}/messages").json()["data"]
    assert [m["content"] for m in messages] == ["second", "echo: second"]
    history = client.threads.get_history(tid, limit=100)
    assert all(wire(h["metadata"]).get("run_id") != first for h in history)
    assert client.threads.get(tid)["status"] == "idle"
