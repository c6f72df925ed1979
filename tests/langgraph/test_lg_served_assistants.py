"""Served graphs with what the LangGraph API keeps for any agent: a stored assistant's config
reaches the graph and its run's metadata the graph's checkpoints, a run without a thread
(stateless) answers with the graph's values and its thread goes, and a copied thread carries
the graph's state on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.langgraph.lgkit import Server, wire
from tests.serving import serve
from tests.waiting import eventually_sync

GRAPH = f"counter={Path(__file__).resolve().parent / 'graphs' / 'counter.py'}:make_graph"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("served")
    running = serve(Server, folder / "tether.db", "--graph", GRAPH, owners=("alice",))
    yield running
    running.stop()


@pytest.fixture
def client(served: Server) -> Iterator[SyncLangGraphClient]:
    with served.sdk("alice") as sdk:
        yield sdk


def _values(client: SyncLangGraphClient, thread_id: str) -> dict[str, Any]:
    return wire(client.threads.get_state(thread_id)["values"])


def _count(start: int) -> dict[str, Any]:
    return {"count": start, "log": []}


def test_a_stored_assistant_configures_the_graph_and_marks_its_checkpoints(
    client: SyncLangGraphClient,
) -> None:
    made = client.assistants.create("counter", config={"configurable": {"step": 5}}, name="by5")
    tid = client.threads.create()["thread_id"]
    result = client.runs.wait(tid, made["assistant_id"], input=_count(1), metadata={"user": "ada"})
    assert isinstance(result, dict)
    assert result["count"] == 6
    [run] = client.runs.list(tid)
    history = client.threads.get_history(tid, limit=20)
    mine = [h["metadata"] or {} for h in history if (h["metadata"] or {}).get("run_id")]
    assert mine and all(m["run_id"] == run["run_id"] for m in mine)
    assert all(m["user"] == "ada" for m in mine)
    assert all(m["assistant_id"] == made["assistant_id"] for m in mine)
    found = client.threads.get_history(tid, limit=20, metadata={"user": "ada"})
    assert len(found) == len(mine)


def test_a_stateless_graph_run_answers_its_values_and_its_thread_goes(
    served: Server, client: SyncLangGraphClient
) -> None:
    with served.raw() as raw, served.native() as native:
        answer = raw.post("/runs/wait", json={"assistant_id": "counter", "input": _count(2)})
        assert answer.status_code == 200, answer.text
        assert answer.json()["count"] == 3
        thread_id = answer.headers["Content-Location"].split("/")[2]
        eventually_sync(
            lambda: native.get(f"/v1/sessions/{thread_id}").status_code == 404,
            what="the stateless thread deleted",
        )
        with pytest.raises(httpx.HTTPStatusError):
            client.threads.get_state(thread_id)


def test_a_copied_graph_thread_has_the_graph_state_and_goes_on_from_it(
    client: SyncLangGraphClient,
) -> None:
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "counter", input=_count(10))
    copy = cast("dict[str, Any]", client.threads.copy(tid))  # (typed None in the SDK)
    cid = copy["thread_id"]
    assert copy["metadata"]["copied_from"] == tid
    original = _values(client, tid)
    assert _values(client, cid) == original
    assert original["count"] == 11
    result = client.runs.wait(cid, "counter", input={"count": 20})
    assert isinstance(result, dict)
    assert result["count"] == 21
    assert result["log"][: len(original["log"])] == original["log"]  # the copy's log went on
    assert len(result["log"]) > len(original["log"])
    assert _values(client, tid) == original
