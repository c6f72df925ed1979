"""``tether serve`` with graphs from a langgraph.json and TETHER_GRAPHS: every stream mode a
graph run streams, subgraphs, ``update_state``, history filters, long-term memory through the
store, and what the official client is refused."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import UnprocessableEntityError

from tests.langgraph.lgkit import Server, said, wire
from tests.serving import serve

HERE = Path(__file__).resolve().parent
ASSISTANT_NAMESPACE = "6ba7b821-9dad-11d1-80b4-00c04fd430c8"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("graphs")
    config = folder / "langgraph.json"
    counter = os.path.relpath(HERE / "graphs" / "counter.py", folder)
    config.write_text(json.dumps({"graphs": {"counter": f"./{counter}:make_graph"}}))
    env = {
        **{k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
        "TETHER_GRAPHS": f"weather={HERE / 'graphs' / 'weather.py'}:graph",
    }
    running = serve(
        Server,
        folder / "tether.db",
        "--langgraph-config",
        str(config),
        owners=("alice",),
        env=env,
    )
    yield running
    running.stop()


@pytest.fixture
def client(served: Server) -> Iterator[SyncLangGraphClient]:
    with served.sdk("alice") as sdk:
        yield sdk


def _events(client: SyncLangGraphClient, tid: str, **kwargs: Any) -> list[tuple[str, Any]]:
    return [(p.event, p.data) for p in client.runs.stream(tid, "counter", **kwargs)]


def test_graphs_of_both_sources_are_assistants_with_langgraphs_ids(
    client: SyncLangGraphClient,
) -> None:
    import uuid

    found = {a["graph_id"]: a for a in client.assistants.search(limit=100)}
    for name in ("counter", "weather"):
        expected = str(uuid.uuid5(uuid.UUID(ASSISTANT_NAMESPACE), name))
        assert found[name]["assistant_id"] == expected
        assert client.assistants.get(expected)["graph_id"] == name


def test_updates_custom_tasks_checkpoints_and_debug_stream_as_the_graph_makes_them(
    client: SyncLangGraphClient,
) -> None:
    tid = client.threads.create()["thread_id"]
    modes = ["updates", "custom", "tasks", "checkpoints", "debug"]
    events = _events(client, tid, input={"count": 1, "log": []}, stream_mode=modes)
    names = [name for name, _ in events]
    assert names[0] == "metadata"
    assert ("custom", {"bumped": 2}) in events
    updates = [data for name, data in events if name == "updates"]
    assert updates[0] == {"bump": {"count": 2, "log": ["bump"]}}
    assert [list(u) for u in updates] == [["bump"], ["inner"]]
    tasks = [data for name, data in events if name == "tasks"]
    assert [t["name"] for t in tasks if "input" in t] == ["bump", "inner"]
    assert next(t["result"] for t in tasks if "result" in t) == {"count": 2, "log": ["bump"]}
    checkpoints = [data for name, data in events if name == "checkpoints"]
    assert checkpoints[-1]["values"]["count"] == 2 and checkpoints[-1]["next"] == []
    assert {d["type"] for name, d in events if name == "debug"} >= {"checkpoint", "task"}
    assert not any("|" in name for name in names)  # no subgraph parts unless asked


def test_subgraph_parts_are_named_after_their_namespace(client: SyncLangGraphClient) -> None:
    tid = client.threads.create()["thread_id"]
    events = _events(
        client, tid, input={"count": 5, "log": []}, stream_mode="custom", stream_subgraphs=True
    )
    custom = {name.split(":")[0]: data for name, data in events if name.startswith("custom")}
    assert custom == {"custom": {"bumped": 6}, "custom|inner": {"inner": 6}}


def test_the_graph_writes_long_term_memory_the_store_routes_show(
    client: SyncLangGraphClient,
) -> None:
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "counter", input={"count": 41, "log": []})
    item = client.store.get_item(["counter"], key="last")
    assert item is not None and item["value"] == {"count": 42}
    inner = client.store.get_item(["counter"], key="inner")  # written by a sync node
    assert inner is not None and inner["value"] == {"count": 42}


def test_update_state_writes_a_checkpoint_the_next_run_starts_from(
    client: SyncLangGraphClient,
) -> None:
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "counter", input={"count": 1, "log": []})
    written = client.threads.update_state(tid, {"count": 10}, as_node="bump")
    state: dict[str, Any] = dict(client.threads.get_state(tid))
    assert state["checkpoint"]["checkpoint_id"] == written["checkpoint"]["checkpoint_id"]
    assert state["values"]["count"] == 10 and state["next"] == ["inner"]
    assert state["metadata"]["source"] == "update"
    updates: list[Any] = client.threads.get_history(tid, metadata={"source": "update"})
    assert [s["values"]["count"] for s in updates] == [10]
    older = client.threads.get_history(tid, before=state["checkpoint"], limit=1)
    assert older[0]["checkpoint"] == state["parent_checkpoint"]
    at = client.threads.get_state(tid, checkpoint_id=older[0]["checkpoint"]["checkpoint_id"])
    assert at["values"] == older[0]["values"]


def test_the_runs_configurable_reaches_the_graph_but_not_its_internals(
    client: SyncLangGraphClient,
) -> None:
    tid = client.threads.create()["thread_id"]
    config: Any = {"configurable": {"step": 5, "__pregel_checkpointer": "x", "thread_id": "t"}}
    done = wire(client.runs.wait(tid, "counter", input={"count": 1, "log": []}, config=config))
    assert done["count"] == 6
    assert client.threads.get_state(tid)["checkpoint"]["thread_id"] == tid


def test_a_breakpoint_before_a_node_waits_until_the_run_is_resumed(
    client: SyncLangGraphClient,
) -> None:
    tid = client.threads.create()["thread_id"]
    stopped = wire(
        client.runs.wait(tid, "counter", input={"count": 1, "log": []}, interrupt_before=["inner"])
    )
    assert stopped["count"] == 2 and stopped["log"] == ["bump"]
    assert client.threads.get(tid)["status"] == "interrupted"
    assert client.threads.get_state(tid)["next"] == ["inner"]
    done = wire(client.runs.wait(tid, "counter", input=None))  # as LangGraph goes on from one
    assert done["log"] == ["bump", "bump", "inner"]
    assert [r["status"] for r in client.runs.list(tid)] == ["success"]


def test_a_thread_made_for_a_graph_takes_its_state_before_any_run(
    client: SyncLangGraphClient,
) -> None:
    tid = client.threads.create(graph_id="counter")["thread_id"]
    client.threads.update_state(tid, {"count": 3, "log": []}, as_node="inner")
    assert client.threads.get_state(tid)["values"] == {"count": 3, "log": []}
    done = wire(client.runs.wait(tid, "counter", input={"count": 4, "log": []}))
    assert done["count"] == 5


def test_deleting_a_graphs_run_takes_the_thread_back_to_before_it(
    client: SyncLangGraphClient,
) -> None:
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "counter", input={"count": 1, "log": []})
    before = client.threads.get_state(tid)
    client.runs.wait(tid, "counter", input={"count": 7, "log": []})
    [last, _] = client.runs.list(tid)
    client.runs.delete(tid, last["run_id"])
    assert client.threads.get_state(tid) == before
    assert client.threads.get(tid)["values"] == before["values"]


def test_messages_mode_sends_partial_messages_with_their_metadata(
    client: SyncLangGraphClient,
) -> None:
    tid = client.threads.create()["thread_id"]
    parts = client.runs.stream(
        tid, "weather", input=said("weather in Oslo?"), stream_mode="messages"
    )
    events = [(p.event, p.data) for p in parts]
    [meta] = [data for name, data in events if name == "messages/metadata"]
    assert next(iter(meta.values()))["metadata"]["langgraph_node"] == "agent"
    partial = [data[0]["content"] for name, data in events if name == "messages/partial"]
    assert partial[:2] == ["Checking", "Checking Oslo"]
    [complete] = [data[0] for name, data in events if name == "messages/complete"]
    assert complete["content"] == "Checking Oslo"


def test_events_mode_streams_the_graphs_langchain_events(client: SyncLangGraphClient) -> None:
    tid = client.threads.create()["thread_id"]
    parts = client.runs.stream(
        tid, "weather", input=said("weather in Lima?"), stream_mode=["events"]
    )
    events = [data for name, data in ((p.event, p.data) for p in parts) if name == "events"]
    seen = {(e["event"], e["name"]) for e in events}
    assert ("on_chain_start", "agent") in seen and ("on_chat_model_end", "ScriptedModel") in seen
    streamed = [
        e["data"]["chunk"]["content"] for e in events if e["event"] == "on_chat_model_stream"
    ]
    assert "".join(streamed) == "Checking Lima"


def test_modes_and_options_a_graph_run_cannot_honour_are_refused(
    client: SyncLangGraphClient,
) -> None:
    tid = client.threads.create()["thread_id"]
    with pytest.raises(UnprocessableEntityError, match="tools"):
        client.runs.create(tid, "counter", input={"count": 1}, stream_mode="tools")
    with pytest.raises(UnprocessableEntityError, match="events"):
        client.runs.create(tid, "echo", input={"messages": []}, stream_mode="events")
    with pytest.raises(UnprocessableEntityError, match="subgraphs"):
        client.runs.create(tid, "echo", input={"messages": []}, stream_subgraphs=True)
