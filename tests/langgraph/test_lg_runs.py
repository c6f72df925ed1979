"""Runs through the official client: wait, stream, background with join, list, cancel, fail,
wait for a person and resume; each visible as a tether run of the session."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from tests.langgraph.lgkit import contents, holding, said, user, wire
from tests.waiting import eventually_sync

DEFAULT_ASSISTANT = uuid.uuid5(uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8"), "echo")


def _thread(client: SyncLangGraphClient) -> str:
    thread_id: str = client.threads.create()["thread_id"]
    return thread_id


def test_wait_answers_the_values_and_the_conversation_grows(
    client: SyncLangGraphClient, native: httpx.Client
) -> None:
    tid = _thread(client)
    first = client.runs.wait(tid, "echo", input=said("hi"))
    assert contents(first) == [("human", "hi"), ("ai", "echo: hi")]
    second = client.runs.wait(tid, "echo", input=holding({"type": "human", "content": "again"}))
    assert contents(second) == [
        ("human", "hi"),
        ("ai", "echo: hi"),
        ("human", "again"),
        ("ai", "echo: again"),
    ]
    runs = client.runs.list(tid)
    assert [r["status"] for r in runs] == ["success", "success"]
    assert all(r["thread_id"] == tid and r["assistant_id"] == "echo" for r in runs)
    assert all(r["started_at"] and r["ended_at"] and r["error"] is None for r in map(wire, runs))
    assert wire(runs[1])["kwargs"]["input"] == said("hi")

    conversation = native.get(f"/v1/sessions/{tid}/messages").json()["data"]
    assert [(m["role"], m["content"]) for m in conversation] == [
        ("user", "hi"),
        ("assistant", "echo: hi"),
        ("user", "again"),
        ("assistant", "echo: again"),
    ]
    assert [m["run_id"] for m in conversation] == [runs[1]["run_id"]] * 2 + [runs[0]["run_id"]] * 2
    native_runs = native.get(f"/v1/sessions/{tid}/runs").json()["data"]
    assert [(r["id"], r["seq"], r["status"], r["agent"]) for r in native_runs] == [
        (runs[1]["run_id"], 1, "completed", "echo"),
        (runs[0]["run_id"], 2, "completed", "echo"),
    ]
    assert native_runs[0]["goal"] == "hi"
    assert client.threads.get(tid)["status"] == "idle"


def test_agents_are_assistants_by_name_or_default_assistant_id(
    client: SyncLangGraphClient,
) -> None:
    echo = client.assistants.get("echo")
    assert (echo["assistant_id"], echo["graph_id"], echo["name"]) == (
        str(DEFAULT_ASSISTANT),
        "echo",
        "echo",
    )
    assert client.assistants.get(str(DEFAULT_ASSISTANT)) == echo
    system = {"created_by": "system"}  # (not the assistants other tests make)
    assert client.assistants.search(graph_id="echo", metadata=system) == [echo]
    assert {a["graph_id"] for a in client.assistants.search(limit=100)} >= {"echo", "coder"}
    tid = _thread(client)
    answer = client.runs.wait(tid, str(DEFAULT_ASSISTANT), input=said("by id"))
    assert contents(answer)[-1] == ("ai", "echo: by id")
    assert client.runs.list(tid)[0]["assistant_id"] == str(DEFAULT_ASSISTANT)
    with pytest.raises(NotFoundError):
        client.assistants.get("nobody")
    with pytest.raises(NotFoundError):
        client.runs.create(tid, "nobody", input={})


def test_stream_values_updates_and_messages(client: SyncLangGraphClient) -> None:
    tid = _thread(client)
    created: list[Any] = []
    parts = list(
        client.runs.stream(
            tid,
            "echo",
            input=said("hi", steps=2),
            stream_mode=["values", "updates", "messages-tuple"],
            on_run_created=created.append,
        )
    )
    events = [p.event for p in parts]
    assert events[0] == "metadata" and "end" not in events and "error" not in events
    run_id = parts[0].data["run_id"]
    assert created[0]["run_id"] == run_id and created[0]["thread_id"] == tid
    assert all(p.id is None for p in parts)
    values = [p.data for p in parts if p.event == "values"]
    assert contents(values[0]) == [("human", "hi")]
    assert contents(values[-1]) == [("human", "hi"), ("ai", "echo: hi")]
    updates = [p.data for p in parts if p.event == "updates"]
    assert [list(u) for u in updates] == [["step 1"], ["step 2"], ["assistant_message"]]
    assert updates[-1]["assistant_message"]["messages"][0]["content"] == "echo: hi"
    [message] = [p.data for p in parts if p.event == "messages"]
    assert message[0]["type"] == "ai" and message[0]["content"] == "echo: hi"
    assert message[1]["run_id"] == run_id
    # The run's final status is stored before the stream closes.
    assert client.runs.get(tid, run_id)["status"] == "success"
    assert client.threads.get(tid)["status"] == "idle"

    only_updates = list(client.runs.stream(tid, "echo", input={"text": "u"}, stream_mode="updates"))
    assert [p.event for p in only_updates] == ["metadata", "updates"]
    messages = list(client.runs.stream(tid, "echo", input={"text": "m"}, stream_mode="messages"))
    assert [p.event for p in messages] == ["metadata", "messages/metadata", "messages/complete"]
    assert messages[2].data[0]["content"] == "echo: m"
    assert list(messages[1].data) == [messages[2].data[0]["id"]]
    v2 = list(client.runs.stream(tid, "echo", input={"text": "v2"}, version="v2"))
    assert [p["type"] for p in v2] == ["metadata", "values", "values"]
    assert wire(v2[-1]["data"])["messages"][-1]["content"] == "echo: v2"


def test_background_run_then_join(client: SyncLangGraphClient) -> None:
    tid = _thread(client)
    run = client.runs.create(tid, "echo", input=said("later"))
    assert run["status"] == "pending" and run["thread_id"] == tid
    assert run["multitask_strategy"] == "reject"
    joined = client.runs.join(tid, run["run_id"])
    assert contents(joined)[-1] == ("ai", "echo: later")
    assert client.runs.get(tid, run["run_id"])["status"] == "success"
    replay = list(client.runs.join_stream(tid, run["run_id"]))
    assert [p.event for p in replay] == ["metadata", "values", "values"]
    assert contents(replay[-1].data) == contents(joined)


def test_list_runs_pages_newest_first_and_filters_by_status(client: SyncLangGraphClient) -> None:
    tid = _thread(client)
    for i in range(3):
        client.runs.wait(tid, "echo", input=said(f"m{i}"))
    client.runs.wait(tid, "echo", input={"text": "x", "fail": True}, raise_error=False)
    sleeper = client.runs.create(tid, "echo", input={"sleep": 60})
    client.runs.cancel(tid, sleeper["run_id"])
    every = client.runs.list(tid, limit=100)
    assert [r["status"] for r in every] == ["interrupted", "error", "success", "success", "success"]
    pages = [client.runs.list(tid, limit=2, offset=offset) for offset in (0, 2, 4, 6)]
    assert [len(p) for p in pages] == [2, 2, 1, 0]
    assert [r["run_id"] for p in pages for r in p] == [r["run_id"] for r in every]
    assert [r["run_id"] for r in client.runs.list(tid, status="success")] == [
        r["run_id"] for r in every[2:]
    ]
    assert [r["run_id"] for r in client.runs.list(tid, status="error")] == [every[1]["run_id"]]
    assert client.runs.list(tid, status="success", limit=1, offset=1)[0] == every[3]
    assert client.runs.list(tid, status="pending") == []
    assert wire(every[1])["error"] == {"error": "ValueError", "message": "boom"}
    selected = client.runs.list(tid, select=list(every[0]))  # type: ignore[arg-type]  # its keys
    assert [run.keys() for run in selected] == [run.keys() for run in every]
    assert wire(client.runs.list(tid, select=["run_id", "status"])[0]) == {
        "run_id": every[0]["run_id"],
        "status": "interrupted",
    }
    with pytest.raises(httpx.HTTPStatusError, match=r"query\.select") as refused:
        client.runs.list(tid, select=["bogus"])  # type: ignore[list-item]  # the mistake tested
    assert refused.value.response.status_code == 422
    with pytest.raises(NotFoundError):
        client.runs.list(str(uuid.uuid4()))


def test_cancel_with_and_without_wait(client: SyncLangGraphClient, native: httpx.Client) -> None:
    tid = _thread(client)
    first = client.runs.create(tid, "echo", input=said("one", sleep=60))
    assert client.threads.get(tid)["status"] == "busy"
    assert client.runs.cancel(tid, first["run_id"]) is None  # type: ignore[func-returns-value]
    assert client.runs.get(tid, first["run_id"])["status"] == "interrupted"
    assert native.get(f"/v1/runs/{first['run_id']}").json()["status"] == "cancelled"
    assert client.threads.get(tid)["status"] == "idle"
    client.runs.cancel(tid, first["run_id"])  # already stopped: nothing changes
    assert client.runs.get(tid, first["run_id"])["status"] == "interrupted"
    with pytest.raises(ConflictError, match="delete this one instead"):
        client.runs.cancel(tid, first["run_id"], action="rollback")

    second = client.runs.create(tid, "echo", input=said("two", sleep=60))
    # The SDK annotates None; with wait=True the API answers the thread's values.
    values = client.runs.cancel(tid, second["run_id"], wait=True)  # type: ignore[func-returns-value]
    assert contents(values) == [("human", "one"), ("human", "two")]
    assert client.runs.get(tid, second["run_id"])["status"] == "interrupted"

    third = client.runs.create(tid, "echo", input=said("three", sleep=60))
    client.runs.cancel(tid, third["run_id"], action="rollback")
    with pytest.raises(NotFoundError):
        client.runs.get(tid, third["run_id"])
    assert native.get(f"/v1/runs/{third['run_id']}").status_code == 404
    assert contents(client.threads.get_state(tid)["values"]) == [("human", "one"), ("human", "two")]

    client.runs.delete(tid, second["run_id"])
    assert [r["run_id"] for r in client.runs.list(tid)] == [first["run_id"]]


def test_a_failing_run_through_wait_and_stream(client: SyncLangGraphClient) -> None:
    tid = _thread(client)
    answer = client.runs.wait(tid, "echo", input={"text": "x", "fail": True}, raise_error=False)
    assert answer == {"__error__": {"error": "ValueError", "message": "boom"}}
    with pytest.raises(Exception, match=r"^ValueError: it broke$"):
        client.runs.wait(tid, "echo", input={"text": "x", "fail": "it broke"})
    parts = list(client.runs.stream(tid, "echo", input={"text": "x", "fail": True}))
    assert [p.event for p in parts] == ["metadata", "values", "error"]
    assert parts[-1].data == {"error": "ValueError", "message": "boom"}
    run = client.runs.get(tid, parts[0].data["run_id"])
    assert (run["status"], wire(run)["error"]) == (
        "error",
        {"error": "ValueError", "message": "boom"},
    )
    thread = client.threads.get(tid)
    assert (thread["status"], wire(thread)["error"]) == ("error", wire(run)["error"])
    client.runs.wait(tid, "echo", input={"text": "fine"})
    assert client.threads.get(tid)["status"] == "idle"


def test_join_stream_resumes_after_last_event_id(client: SyncLangGraphClient) -> None:
    tid = _thread(client)
    parts = list(
        client.runs.stream(
            tid,
            "echo",
            input=said("resume me", steps=3),
            stream_mode=["values", "updates"],
            stream_resumable=True,
        )
    )
    ids = [p.id for p in parts]
    assert all(ids) and len(set(ids)) == len(ids)
    run_id = parts[0].data["run_id"]
    for k in (0, 1, 4, len(parts) - 1):
        rest = list(client.runs.join_stream(tid, run_id, last_event_id=parts[k].id))
        assert [(p.event, p.data, p.id) for p in rest] == [
            (p.event, p.data, p.id) for p in parts[k + 1 :]
        ]
    assert [(p.event, p.data) for p in client.runs.join_stream(tid, run_id)] == [
        (p.event, p.data) for p in parts
    ]
    only_values = list(client.runs.join_stream(tid, run_id, stream_mode="values"))
    assert [p.event for p in only_values] == ["metadata"] + ["values"] * 5


def test_a_run_waits_for_a_person_and_command_resume_answers(
    client: SyncLangGraphClient, native: httpx.Client
) -> None:
    tid = _thread(client)
    answer = client.runs.wait(tid, "echo", input=said("deploy", wait="ok?"))
    [interrupt] = wire(answer)["__interrupt__"]
    assert interrupt["value"] == "ok?"
    assert contents(answer) == [("human", "deploy")]
    thread = client.threads.get(tid)
    [run] = client.runs.list(tid)
    assert (thread["status"], run["status"]) == ("interrupted", "interrupted")
    assert thread["interrupts"] == {run["run_id"]: [interrupt]}
    assert native.get(f"/v1/runs/{run['run_id']}").json()["status"] == "waiting"
    with pytest.raises(ConflictError):
        client.runs.create(tid, "echo", input={"text": "meanwhile"})

    parts = list(
        client.runs.stream(tid, "echo", command={"resume": "yes"}, stream_mode=["updates"])
    )
    assert parts[0].data["run_id"] == run["run_id"]
    assert parts[1].data == {"wait_for_input": {"output": {"input": "yes"}}}
    assert parts[-1].data["assistant_message"]["messages"][0]["content"] == "echo: deploy yes"
    assert [r["status"] for r in client.runs.list(tid)] == ["success"]
    assert client.threads.get(tid)["status"] == "idle"
    with pytest.raises(ConflictError):
        client.runs.create(tid, "echo", command={"resume": "again"})

    waiting = client.runs.create(tid, "echo", input={"text": "t", "wait": "name?"})
    pause = client.runs.join(tid, waiting["run_id"])
    interrupt_id = pause["__interrupt__"][0]["id"]
    resumed = client.runs.wait(tid, "echo", command={"resume": {interrupt_id: "Ada"}})
    assert contents(resumed)[-1] == ("ai", "echo: t Ada")

    # a map keyed by an interrupt that no longer waits is refused, not taken as the answer
    client.runs.create(tid, "echo", input={"text": "t", "wait": "again?"})
    eventually_sync(lambda: client.threads.get(tid)["status"] == "interrupted")
    with pytest.raises(httpx.HTTPStatusError, match="not waiting") as refused:
        client.runs.wait(tid, "echo", command={"resume": {interrupt_id: "stale"}})
    assert refused.value.response.status_code == 409
    assert client.threads.get(tid)["status"] == "interrupted"
    # an answer keyed by ids that are not this thread's interrupts is just an answer
    item = str(uuid.uuid4())
    answered = client.runs.wait(tid, "echo", command={"resume": {item: True}})
    assert item in contents(answered)[-1][1]


def test_after_seconds_delays_the_start(client: SyncLangGraphClient, native: httpx.Client) -> None:
    tid = _thread(client)
    run = client.runs.create(tid, "echo", input={"text": "later"}, after_seconds=600)
    assert run["status"] == "pending"
    stored = native.get(f"/v1/runs/{run['run_id']}").json()
    assert stored["not_before"] > stored["created_at"]
    assert client.threads.get(tid)["status"] == "busy"
    client.runs.cancel(tid, run["run_id"])
    eventually_sync(lambda: client.runs.get(tid, run["run_id"])["status"] == "interrupted")


def test_if_not_exists_create_makes_the_thread(
    client: SyncLangGraphClient, native: httpx.Client
) -> None:
    tid = str(uuid.uuid4())
    with pytest.raises(NotFoundError):
        client.runs.create(tid, "echo", input={"text": "x"})
    run = client.runs.create(tid, "echo", input=said("new"), if_not_exists="create")
    assert contents(client.runs.join(tid, run["run_id"]))[-1] == ("ai", "echo: new")
    assert native.get(f"/v1/sessions/{tid}").json()["id"] == tid


def test_join_stream_of_a_waiting_run_ends_at_its_interrupt(client: SyncLangGraphClient) -> None:
    tid = _thread(client)
    run = client.runs.create(tid, "echo", input=said("q", wait="sure?"), stream_resumable=True)
    client.runs.join(tid, run["run_id"])
    parts = list(client.runs.join_stream(tid, run["run_id"], stream_mode=["values", "updates"]))
    assert [p.event for p in parts] == ["metadata", "values", "updates", "values"]
    assert parts[-1].data["__interrupt__"][0]["value"] == "sure?"
    assert list(client.runs.join_stream(tid, run["run_id"], last_event_id=parts[-1].id)) == []
    client.runs.wait(tid, "echo", command={"resume": "yes"})
    rest = list(client.runs.join_stream(tid, run["run_id"], last_event_id=parts[-1].id))
    assert contents(rest[-1].data)[-1] == ("ai", "echo: q yes")


def test_messages_already_in_the_conversation_are_not_added_twice(
    client: SyncLangGraphClient,
) -> None:
    tid = _thread(client)
    first = client.runs.wait(tid, "echo", input=holding({**user("hi"), "id": "m1"}))
    history = wire(first)["messages"]
    assert history[0]["id"] == "m1"
    again = client.runs.wait(
        tid, "echo", input={"messages": [*history, {**user("more"), "id": "m2"}]}
    )
    assert contents(again) == [
        ("human", "hi"),
        ("ai", "echo: hi"),
        ("human", "more"),
        ("ai", "echo: more"),
    ]
    with pytest.raises(UnprocessableEntityError, match="append-only"):
        client.runs.create(tid, "echo", input=holding({**user("edited"), "id": "m1"}))
