"""Token chunks in the LangGraph view of a tether agent whose model streams (the ``streamer`` of
tests/langgraph/streaming_agents.py, pieces of 4 characters): ``messages-tuple`` sends each
piece as ``[AIMessageChunk, metadata]`` and then the whole message, with the same id;
``messages`` sends ``messages/partial`` with the text so far, then ``messages/complete``; the
native event stream carries the pieces as step.model_chunk events."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.api.httpkit import read_sse
from tests.langgraph.lgkit import Server, said
from tests.serving import serve

HERE = Path(__file__).resolve().parent
ANSWER = "You said: good morning"
PIECES = ["You ", "said", ": go", "od m", "orni", "ng"]


@pytest.fixture(scope="module")
def streaming(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)
    folder = tmp_path_factory.mktemp("streaming")
    env = {**os.environ, "PYTHONPATH": path}
    server = serve(
        Server, folder / "tether.db", "--agents", "streaming_agents", owners=("alice",), env=env
    )
    yield server
    server.stop()


def _parts(server: Server, mode: Literal["messages", "messages-tuple"]) -> list[tuple[str, Any]]:
    with server.sdk() as sdk:
        thread = sdk.threads.create()
        parts = sdk.runs.stream(
            thread["thread_id"], "streamer", input=said("good morning"), stream_mode=mode
        )
        return [(p.event, p.data) for p in parts]


def test_messages_tuple_streams_the_pieces_then_the_whole_message(streaming: Server) -> None:
    parts = _parts(streaming, "messages-tuple")
    assert parts[0][0] == "metadata"
    messages = [data for event, data in parts if event == "messages"]
    chunks, final = messages[:-1], messages[-1]
    assert [c[0]["type"] for c in chunks] == ["AIMessageChunk"] * len(PIECES)
    assert [c[0]["content"] for c in chunks] == PIECES
    assert final[0]["type"] == "ai" and final[0]["content"] == ANSWER
    # One message: the pieces and the whole have the same id, so a client merges them.
    assert {c[0]["id"] for c in chunks} == {final[0]["id"]}
    run_id = parts[0][1]["run_id"]
    assert all(c[1]["run_id"] == run_id and c[1]["langgraph_node"] == "streamer" for c in chunks)
    with streaming.sdk() as sdk:
        thread_id = chunks[0][1]["thread_id"]
        values = sdk.threads.get_state(thread_id)["values"]
        assert isinstance(values, dict)
        assert values["messages"][-1]["id"] == final[0]["id"]
        assert [m["content"] for m in values["messages"]] == ["good morning", ANSWER]


def test_messages_streams_the_text_so_far_then_the_complete_message(streaming: Server) -> None:
    parts = _parts(streaming, "messages")
    events = [event for event, _ in parts]
    assert events == [
        "metadata",
        "messages/metadata",
        *["messages/partial"] * len(PIECES),
        "messages/complete",
    ]
    partial = [data[0] for event, data in parts if event == "messages/partial"]
    so_far = ["".join(PIECES[: i + 1]) for i in range(len(PIECES))]
    assert [m["content"] for m in partial] == so_far
    assert {m["type"] for m in partial} == {"ai"}
    [complete] = [data[0] for event, data in parts if event == "messages/complete"]
    assert complete["content"] == ANSWER and complete["id"] == partial[0]["id"]
    [metadata] = [data for event, data in parts if event == "messages/metadata"]
    assert list(metadata) == [complete["id"]]


def test_a_sdk_wait_has_the_whole_answer_once(streaming: Server) -> None:
    with streaming.sdk() as sdk:
        thread = sdk.threads.create()
        output = sdk.runs.wait(thread["thread_id"], "streamer", input=said("good morning"))
        assert isinstance(output, dict)
        assert [m["content"] for m in output["messages"]] == ["good morning", ANSWER]


def test_the_native_stream_carries_the_pieces(streaming: Server) -> None:
    with streaming.native() as http:
        session = http.post("/v1/sessions", json={}).json()
        run = http.post(
            f"/v1/sessions/{session['id']}/runs",
            json={"goal": "good morning", "agent": "streamer"},
        ).json()
        with http.stream("GET", f"/v1/runs/{run['id']}/events") as response:
            frames, _ = read_sse(response)
    chunks = [f.data for f in frames if f.event == "step.model_chunk"]
    assert [c["data"]["text"] for c in chunks] == PIECES
    assert [c["data"]["index"] for c in chunks] == list(range(len(PIECES)))
    ended = [f for f in frames if f.event == "step.completed"]
    model_call = next(
        f.data["data"]["step"] for f in ended if f.data["data"]["step"]["kind"] == "model_call"
    )
    assert {c["data"]["step_id"] for c in chunks} == {model_call["id"]}
    assert model_call["output"]["content"] == ANSWER


def _shape(message: dict[str, Any]) -> tuple[Any, ...]:
    """What a chat UI shows of a message: its type, text, tool calls, the call it answers."""
    calls = [(c["id"], c["name"], c["args"]) for c in message.get("tool_calls") or []]
    return (message["type"], message["content"], calls, message.get("tool_call_id"))


WEATHER = [
    ("human", "what is the weather?", [], None),
    ("ai", "", [("call_w1", "weather", {"city": "Oslo"})], None),
    ("tool", "sunny in Oslo", [], "call_w1"),
    ("ai", "It is sunny in Oslo.", [], None),
]


def test_tool_calls_show_as_an_ai_message_with_tool_calls_then_tool_messages(
    streaming: Server,
) -> None:
    with streaming.sdk() as sdk:
        thread_id = sdk.threads.create()["thread_id"]
        parts = list(
            sdk.runs.stream(
                thread_id,
                "streamer",
                input=said("what is the weather?"),
                stream_mode=["messages-tuple", "values"],
            )
        )
        whole = [
            p.data[0]
            for p in parts
            if p.event == "messages" and p.data[0]["type"] != "AIMessageChunk"
        ]
        assert [_shape(m) for m in whole] == WEATHER[1:]
        assert whole[2]["id"] != whole[1]["id"]
        assert [_shape(m) for m in parts[-1].data["messages"]] == WEATHER  # the last values
        output = sdk.runs.wait(thread_id, "streamer", input=said("what is the weather?"))
        assert isinstance(output, dict)
        assert [_shape(m) for m in output["messages"]] == WEATHER * 2
        values = sdk.threads.get_state(thread_id)["values"]
        assert isinstance(values, dict)
        assert [_shape(m) for m in values["messages"]] == WEATHER * 2
        # The history's writes name them too: the model call's, then the tool call's.
        history = sdk.threads.get_history(thread_id, limit=100)
        writes = [(h["metadata"] or {}).get("writes") or {} for h in reversed(history)]
        shown = [
            _shape(m)
            for w in writes
            for k in ("streaming-script", "weather")
            for m in w.get(k, {}).get("messages", [])
        ]
        assert shown == WEATHER[1:3] * 2
        # Sent back whole, the messages are not added again (the tool calls neither).
        again = {"messages": [*values["messages"], {"role": "user", "content": "thanks"}]}
        after = sdk.runs.wait(thread_id, "streamer", input=again)
        assert isinstance(after, dict)
        assert [_shape(m)[:2] for m in after["messages"][8:]] == [
            ("human", "thanks"),
            ("ai", "You said: thanks"),
        ]
    with streaming.native() as http:
        conversation = http.get(f"/v1/sessions/{thread_id}/messages").json()["data"]
        # tether's own conversation has no tool messages: its tool history holds the calls.
        assert [m["role"] for m in conversation] == ["user", "assistant"] * 3
