"""The custom stream mode: what an agent writes with ctx.emit reaches runs.stream(…,
stream_mode="custom") in order, is recorded as the run's steps, and stays out of the other
modes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import UnprocessableEntityError


def test_emitted_events_stream_in_custom_mode(
    client: SyncLangGraphClient, native: httpx.Client
) -> None:
    tid = client.threads.create()["thread_id"]
    emitting: dict[str, Any] = {"text": "hi", "emit": [{"progress": 0.5}, "done"]}
    parts = list(
        client.runs.stream(
            tid,
            "echo",
            input=emitting,
            stream_mode=["custom", "updates"],
        )
    )
    events = [(p.event, p.data) for p in parts]
    assert [d for e, d in events if e == "custom"] == [{"progress": 0.5}, "done"]
    updates = [d for e, d in events if e == "updates"]
    assert all("custom" not in u for u in updates)
    assert updates  # the echo's message step
    [run] = client.runs.list(tid)
    steps = native.get(f"/v1/runs/{run['run_id']}/steps").json()["data"]
    assert [s["input"] for s in steps if s["name"] == "custom"] == [{"progress": 0.5}, "done"]

    quiet: dict[str, Any] = {"text": "x", "emit": ["quiet"]}
    values = list(client.runs.stream(tid, "echo", input=quiet))
    assert "custom" not in [p.event for p in values]  # only when asked for


def test_other_modes_are_still_refused(client: SyncLangGraphClient) -> None:
    tid = client.threads.create()["thread_id"]
    with pytest.raises(UnprocessableEntityError, match="debug"):
        list(client.runs.stream(tid, "echo", input={}, stream_mode="debug"))
