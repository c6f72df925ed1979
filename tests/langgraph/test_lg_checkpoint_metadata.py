"""A run's metadata reaches the metadata of the checkpoints it made (with its graph_id and the
assistant it was started with), so history can be filtered by it."""

from __future__ import annotations

from langgraph_sdk.client import SyncLangGraphClient

from tests.langgraph.lgkit import said


def test_run_metadata_is_in_its_checkpoints(client: SyncLangGraphClient) -> None:
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "echo", input=said("hi"), metadata={"user": "ada"})
    client.runs.wait(tid, "echo", input=said("again"))
    history = client.threads.get_history(tid, limit=20)
    by_run: dict[str, list[dict[str, object]]] = {}
    for state in history:
        metadata = state["metadata"] or {}
        if "run_id" in metadata:
            by_run.setdefault(str(metadata["run_id"]), []).append(dict(metadata))
    first, second = (r["run_id"] for r in reversed(client.runs.list(tid)))
    assert all(m["user"] == "ada" for m in by_run[first])
    assert all(m["graph_id"] == "echo" and m["assistant_id"] == "echo" for m in by_run[first])
    assert all("user" not in m for m in by_run[second])
    assert {m["source"] for m in by_run[first]} == {"input", "loop"}  # its own keys stay
    found = client.threads.get_history(tid, limit=20, metadata={"user": "ada"})
    assert found and all((s["metadata"] or {})["run_id"] == first for s in found)
    assert (client.threads.get_state(tid)["metadata"] or {})["run_id"] == second
