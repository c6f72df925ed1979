"""``tether serve --graph``: the official client against a real server running a LangGraph
graph (tests/langgraph/graphs/weather.py): stream, interrupt, resume (also after a restart),
state and history from the graph's checkpoints, and the run's steps."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.langgraph.lgkit import Server, said, wire
from tests.serving import serve

GRAPH = f"weather={Path(__file__).resolve().parent / 'graphs' / 'weather.py'}:graph"

pytestmark = pytest.mark.slow


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Server]:
    running = serve(Server, tmp_path / "tether.db", "--graph", GRAPH, owners=("alice",))
    yield running
    running.stop()


def _stream(client: SyncLangGraphClient, tid: str, **kwargs: Any) -> list[tuple[str, Any]]:
    parts = client.runs.stream(tid, "weather", stream_mode=["values", "messages-tuple"], **kwargs)
    return [(part.event, part.data) for part in parts]


def _types(values: dict[str, Any]) -> list[str]:
    return [m["type"] for m in values["messages"]]


def test_a_graph_streams_waits_for_approval_and_resumes_after_a_restart(
    served: Server, tmp_path: Path
) -> None:
    with served.sdk("alice") as client:
        assistant = client.assistants.get("weather")
        assert assistant["graph_id"] == "weather"
        tid = client.threads.create()["thread_id"]
        parts = _stream(client, tid, input=said("weather in Paris?"))
        events = [name for name, _ in parts]
        assert events[0] == "metadata"
        chunks = [data for name, data in parts if name == "messages"]
        assert chunks and chunks[0][1]["langgraph_node"] == "agent"
        assert "".join(c[0]["content"] for c in chunks) == "Checking Paris"
        values = [data for name, data in parts if name == "values"]
        assert _types(values[0]) == ["human"]
        assert _types(values[-1]) == ["human", "ai"]
        assert client.threads.get(tid)["status"] == "interrupted"
        state = client.threads.get_state(tid)
        assert state["next"] == ["approve"]
        [asked] = state["interrupts"]
        assert asked["value"]["question"] == "Run these tools?"
        assert asked["value"]["tool_calls"][0]["args"] == {"city": "Paris"}
    db, keys = served.db, served.keys
    assert served.stop() == 0
    again = serve(Server, db, "--graph", GRAPH)
    again.keys = keys
    try:
        with again.sdk("alice") as client:
            assert client.threads.get(tid)["status"] == "interrupted"
            parts = _stream(client, tid, command={"resume": "yes"})
            final = [data for name, data in parts if name == "values"][-1]

            assert _types(final) == ["human", "ai", "tool", "ai"]
            assert final["messages"][-1]["content"] == "The weather: sunny in Paris."
            state = client.threads.get_state(tid)
            assert state["next"] == [] and state["interrupts"] == []
            assert state["values"] == final
            [run] = [r for r in client.runs.list(tid) if r["status"] == "success"]
            history = client.threads.get_history(tid, limit=50)
            assert history[0]["checkpoint"] == state["checkpoint"]
            assert {(h["metadata"] or {}).get("run_id") for h in history} == {run["run_id"]}
            assert len(history) >= 5
            # the conversation goes on in the same thread
            answer = wire(client.runs.wait(tid, "weather", input=said("and Rome?")))
            assert answer["__interrupt__"][0]["value"]["tool_calls"][0]["args"] == {"city": "Rome"}
            done = wire(client.runs.wait(tid, "weather", command={"resume": "yes"}))
            assert _types(done) == ["human", "ai", "tool", "ai"] * 2
            assert done["messages"][-1]["content"] == "The weather: sunny in Rome."
        with again.native("alice") as native:
            steps = native.get(f"/v1/runs/{run['run_id']}/steps").json()["data"]
            kinds = [(s["kind"], s["name"]) for s in steps]
            assert ("note", "agent") in kinds and ("note", "tools") in kinds
            model_calls = [s for s in steps if s["kind"] == "model_call"]
            assert model_calls and all(s["usage"]["output_tokens"] == 5 for s in model_calls)
            [tool] = [s for s in steps if s["kind"] == "tool_call"]
            assert tool["name"] == "get_weather"
            assert tool["input"]["arguments"] == {"city": "Paris"}
            assert "sunny in Paris" in str(tool["output"])
    finally:
        again.stop()
