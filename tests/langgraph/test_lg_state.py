"""A thread's state and history: its values (project + conversation), a checkpoint per input,
step, wait and update, newest first; state added without a run."""

from __future__ import annotations

import itertools

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

from tests.langgraph.lgkit import contents, said, wire


def test_a_new_thread_has_an_empty_state_and_no_history(client: SyncLangGraphClient) -> None:
    tid = client.threads.create()["thread_id"]
    state = client.threads.get_state(tid)
    assert state["values"] == {} and state["next"] == [] and state["tasks"] == []
    assert state["checkpoint"]["checkpoint_id"] is None
    assert client.threads.get_history(tid) == []


def test_state_and_history_follow_the_runs(client: SyncLangGraphClient) -> None:
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "echo", input=said("one"))
    client.runs.wait(tid, "echo", input=said("two", steps=1))
    state = client.threads.get_state(tid)
    assert contents(state["values"]) == [
        ("human", "one"),
        ("ai", "echo: one"),
        ("human", "two"),
        ("ai", "echo: two"),
    ]
    assert state["checkpoint"]["thread_id"] == tid and state["checkpoint"]["checkpoint_ns"] == ""
    assert wire(state["metadata"])["source"] == "loop"

    history = client.threads.get_history(tid, limit=100)
    assert [(wire(h["metadata"])["source"], wire(h["metadata"])["step"]) for h in history] == [
        ("loop", 1),
        ("loop", 0),
        ("input", -1),
        ("loop", 0),
        ("input", -1),
    ]
    assert history[0]["checkpoint"] == state["checkpoint"]
    assert history[0]["values"] == state["values"]
    assert [len(wire(h["values"]).get("messages", [])) for h in history] == [4, 3, 3, 2, 1]
    for newer, older in itertools.pairwise(history):
        assert newer["parent_checkpoint"] == older["checkpoint"]
    assert history[-1]["parent_checkpoint"] is None
    assert len({h["checkpoint"]["checkpoint_id"] for h in history}) == 5

    assert client.threads.get_history(tid, limit=2) == history[:2]
    assert client.threads.get_history(tid, before=history[1]["checkpoint"]) == history[2:]
    before_id = history[2]["checkpoint"]["checkpoint_id"]
    assert client.threads.get_history(tid, before=before_id) == history[3:]
    inputs = client.threads.get_history(tid, metadata={"source": "input"})
    assert [h["checkpoint"] for h in inputs] == [history[2]["checkpoint"], history[4]["checkpoint"]]

    older = history[3]
    assert (
        client.threads.get_state(tid, checkpoint_id=older["checkpoint"]["checkpoint_id"]) == older
    )
    assert client.threads.get_state(tid, checkpoint=older["checkpoint"]) == older
    with pytest.raises(NotFoundError):
        client.threads.get_state(tid, checkpoint_id="00000000-0000-4000-8000-000000000000")
    picked = client.threads.get_state(tid, select=["values.messages"])
    assert wire(picked) == {"values": {"messages": wire(state["values"])["messages"]}}


def test_a_waiting_thread_shows_its_interrupt(client: SyncLangGraphClient) -> None:
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "echo", input=said("go", wait="sure?"))
    state = client.threads.get_state(tid)
    [interrupt] = state["interrupts"]
    assert interrupt["value"] == "sure?"
    assert state["next"] == ["wait_for_input"]
    assert state["tasks"][0]["interrupts"] == [interrupt]
    client.runs.wait(tid, "echo", command={"resume": "yes"})
    after = client.threads.get_state(tid)
    assert after["interrupts"] == [] and after["next"] == []
    assert contents(after["values"])[-1] == ("ai", "echo: go yes")
    history = client.threads.get_history(tid, limit=100)
    assert [h["interrupts"] != [] for h in history].count(True) == 1


def test_update_state_adds_messages_and_project_without_a_run(
    client: SyncLangGraphClient, native: httpx.Client
) -> None:
    tid = client.threads.create()["thread_id"]
    answer = client.threads.update_state(tid, said("a note", topic="calc"), as_node="human")
    state = client.threads.get_state(tid)
    assert answer["checkpoint"] == state["checkpoint"]
    assert wire(state["values"])["topic"] == "calc"
    assert contents(state["values"]) == [("human", "a note")]
    assert wire(state["metadata"])["source"] == "update"
    history = client.threads.get_history(tid)
    assert wire(history[1]["metadata"])["writes"] == {
        "human": {"messages": [wire(state["values"])["messages"][0]]}
    }
    assert native.get(f"/v1/sessions/{tid}").json()["project"] == {"topic": "calc"}
    notes = native.get(f"/v1/sessions/{tid}/messages").json()["data"]
    assert [(m["role"], m["content"], m["run_id"]) for m in notes] == [("user", "a note", None)]
    done = client.runs.wait(tid, "echo", input=said("and now"))
    assert wire(done)["topic"] == "calc"
    assert contents(done)[-1] == ("ai", "echo: and now")
    with pytest.raises(UnprocessableEntityError, match="checkpoint_id"):
        client.threads.update_state(
            tid, {"x": 1}, checkpoint_id=answer["checkpoint"]["checkpoint_id"]
        )


def test_structured_items_show_and_removed_messages_leave_the_state(
    client: SyncLangGraphClient, native: httpx.Client
) -> None:
    """A message carrying a structured item shows as its role and text; popped and cleared
    messages are no longer in the thread's values."""
    tid = client.threads.create()["thread_id"]
    base = f"/v1/sessions/{tid}/messages"
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    added = native.post(
        f"{base}/batch", json={"messages": [{"item": item}, {"item": call}, {"content": "later"}]}
    )
    assert added.status_code == 201, added.text
    assert contents(client.threads.get_state(tid)["values"]) == [
        ("human", "hi"),
        ("ai", ""),
        ("human", "later"),
    ]
    assert native.post(f"{base}/pop").status_code == 200
    assert contents(client.threads.get_state(tid)["values"]) == [("human", "hi"), ("ai", "")]
    assert native.post(f"{base}/clear").json() == {"removed": 2}
    assert wire(client.threads.get_state(tid)["values"]).get("messages", []) == []
    client.runs.wait(tid, "echo", input=said("again"))
    assert contents(client.threads.get_state(tid)["values"]) == [
        ("human", "again"),
        ("ai", "echo: again"),
    ]
