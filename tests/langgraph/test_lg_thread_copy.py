"""threads.copy, threads.prune, threads.join_stream and runs.cancel_many through the official
client, and POST /v1/sessions/{sid}/copy: a copy has the conversation, context, memory and
state of the original and names it; pruning deletes threads; a thread's stream follows its
runs; cancel_many cancels a thread's runs or all."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

from tests.langgraph.lgkit import contents, said
from tests.waiting import eventually_sync


def _thread_with_history(client: SyncLangGraphClient, native: httpx.Client) -> str:
    tid: str = client.threads.create(metadata={"project": "calc"})["thread_id"]
    client.runs.wait(tid, "echo", input=said("hi"))
    client.threads.update_state(tid, {"workspace": "./calc"})
    assert native.put(f"/v1/sessions/{tid}/memory/python", json={"value": "3.11"}).is_success
    return tid


def test_copy_has_the_same_conversation_context_memory_and_names_the_original(
    client: SyncLangGraphClient, native: httpx.Client
) -> None:
    tid = _thread_with_history(client, native)
    copy = cast("dict[str, Any]", client.threads.copy(tid))  # (typed None in the SDK)
    cid = copy["thread_id"]
    assert cid != tid
    assert copy["metadata"] == {"project": "calc", "copied_from": tid}
    assert contents(copy["values"]) == [("human", "hi"), ("ai", "echo: hi")]
    assert copy["values"]["workspace"] == "./calc"
    state = client.threads.get_state(cid)
    assert contents(state["values"]) == [("human", "hi"), ("ai", "echo: hi")]
    memory = native.get(f"/v1/sessions/{cid}/memory/python").json()
    assert memory["value"] == "3.11"
    assert client.runs.list(cid) == []  # the runs stay with the original
    again = client.runs.wait(cid, "echo", input=said("on the copy"))
    assert isinstance(again, dict)
    assert contents(again)[-1] == ("ai", "echo: on the copy")
    assert len(contents(client.threads.get(tid)["values"])) == 2  # the original is as it was
    with pytest.raises(NotFoundError):
        client.threads.copy("0c6f5d2e-0000-4000-8000-000000000000")


def test_native_copy(native: httpx.Client) -> None:
    sid = native.post("/v1/sessions", json={"title": "t", "context": {"k": 1}}).json()["id"]
    native.post(f"/v1/sessions/{sid}/messages", json={"role": "user", "content": "one"})
    native.post(f"/v1/sessions/{sid}/messages", json={"role": "user", "content": "popped"})
    native.post(f"/v1/sessions/{sid}/messages/pop")
    copied = native.post(f"/v1/sessions/{sid}/copy")
    assert copied.status_code == 201, copied.text
    copy = copied.json()
    assert (copy["title"], copy["context"], copy["metadata"]) == (
        "t",
        {"k": 1},
        {"copied_from": sid},
    )
    messages = native.get(f"/v1/sessions/{copy['id']}/messages").json()["data"]
    assert [m["content"] for m in messages] == ["one"]  # what the conversation holds
    assert native.post("/v1/sessions/0c6f5d2e-0000-4000-8000-000000000000/copy").status_code == 404


def test_prune_deletes_threads(client: SyncLangGraphClient, bob: SyncLangGraphClient) -> None:
    first = client.threads.create()["thread_id"]
    second = client.threads.create()["thread_id"]
    kept = client.threads.create()["thread_id"]
    bobs = bob.threads.create()["thread_id"]
    result = client.threads.prune([first, second, bobs])
    assert result == {"pruned_count": 2}  # bob's thread is not alice's to prune
    for gone in (first, second):
        with pytest.raises(NotFoundError):
            client.threads.get(gone)
    assert client.threads.get(kept)["thread_id"] == kept
    assert bob.threads.get(bobs)["thread_id"] == bobs
    assert client.threads.prune([kept], strategy="keep_latest") == {"pruned_count": 1}
    assert client.threads.get(kept)["thread_id"] == kept
    with pytest.raises(UnprocessableEntityError):
        client.threads.prune([kept], strategy="sometimes")  # type: ignore[arg-type]


def test_cancel_many_cancels_a_threads_runs(client: SyncLangGraphClient) -> None:
    tid = client.threads.create()["thread_id"]
    busy = client.runs.create(tid, "echo", input={"sleep": 60})
    queued = client.runs.create(tid, "echo", input={"text": "x"}, multitask_strategy="enqueue")
    eventually_sync(lambda: client.runs.get(tid, busy["run_id"])["status"] == "running")
    client.runs.cancel_many(thread_id=tid, run_ids=[busy["run_id"], queued["run_id"]])
    for run_id in (busy["run_id"], queued["run_id"]):

        def interrupted(run_id: str = run_id) -> bool:
            return client.runs.get(tid, run_id)["status"] == "interrupted"

        eventually_sync(interrupted)
    with pytest.raises(UnprocessableEntityError):
        client.runs.cancel_many(thread_id=tid)
    with pytest.raises(NotFoundError):
        client.runs.cancel_many(thread_id=tid, run_ids=["0c6f5d2e-0000-4000-8000-000000000000"])


def test_cancel_many_by_status_and_rollback(
    client: SyncLangGraphClient, bob: SyncLangGraphClient
) -> None:
    tid = client.threads.create()["thread_id"]
    pending = client.runs.create(tid, "echo", input={"text": "later"}, after_seconds=3600)
    bobs_thread = bob.threads.create()["thread_id"]
    bobs = bob.runs.create(bobs_thread, "echo", input={"text": "later"}, after_seconds=3600)
    client.runs.cancel_many(status="pending", action="rollback")
    with pytest.raises(NotFoundError):
        client.runs.get(tid, pending["run_id"])  # rolled back: deleted
    assert bob.runs.get(bobs_thread, bobs["run_id"])["status"] == "pending"  # not alice's
    bob.runs.cancel(bobs_thread, bobs["run_id"])


def _until_values_of(parts: Iterator[Any], text: str) -> list[tuple[str, Any]]:
    """The (event, data) of parts up to the values whose last message is text."""
    seen: list[tuple[str, Any]] = []
    for part in parts:
        seen.append((part.event, part.data))
        if part.event == "values" and contents(part.data)[-1:] == [("ai", text)]:
            return seen
    raise AssertionError(f"the stream ended before {text!r}: {seen}")


def test_join_stream_follows_the_runs_of_the_thread(
    client: SyncLangGraphClient, raw: httpx.Client
) -> None:
    tid = client.threads.create()["thread_id"]
    with raw.stream("GET", f"/threads/{tid}/stream", params={"stream_mode": "run_modes"}) as live:
        assert live.headers["content-type"].startswith("text/event-stream")
        first = client.runs.create(tid, "echo", input={"text": "one"}, stream_mode="updates")
        client.runs.join(tid, first["run_id"])
        second = client.runs.create(tid, "echo", input={"text": "two"})
        lines = live.iter_lines()
        frames: list[str] = []
        while not any("echo: two" in line for line in frames):
            frames.append(next(lines))
    events = [line.removeprefix("event: ") for line in frames if line.startswith("event: ")]
    assert events[0] == "metadata"
    assert "updates" in events[: events.index("metadata", 1)]  # the first run's own modes
    assert "values" not in events[: events.index("metadata", 1)]
    assert any(second["run_id"] in line for line in frames)

    replayed = _until_values_of(client.threads.join_stream(tid, last_event_id="0"), "echo: two")
    metadata = [data["run_id"] for event, data in replayed if event == "metadata"]
    assert metadata == [first["run_id"], second["run_id"]]


def test_join_stream_refuses_other_modes(client: SyncLangGraphClient) -> None:
    tid = client.threads.create()["thread_id"]
    with pytest.raises(UnprocessableEntityError, match="lifecycle"):
        list(client.threads.join_stream(tid, stream_mode="lifecycle"))
    with pytest.raises(NotFoundError):
        list(client.threads.join_stream("0c6f5d2e-0000-4000-8000-000000000000"))
