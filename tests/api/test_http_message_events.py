"""Over HTTP, a message.added event carries its message exactly as the append returned it (same
keys in the same order, same values, removed_at null) in the event listing and the SSE stream,
though SQLite stores the event by reference to the message's row (schema 15): whether the
message came alone, in a batch or from a run, and after it was popped or cleared."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import httpx

from tests.api.httpkit import Server, events_of, new_run, new_session, read_sse, wait_run

ODD = 'quote " backslash \\ newline \n tab \t \x01 \x1f ü 日本 \u2028 🎉'
METADATA = {"b": [1, 2.5, None, True, 2**70], "a": {"é": ODD}, "z": 1.0}
ITEM = {"type": "function_call_output", "call_id": "c1", "output": ODD, "n": 1e21}


def _texts(data: list[dict[str, Any]]) -> list[str]:
    """Each value as JSON text in its own key order (a dict comparison would ignore order)."""
    return [json.dumps(d, ensure_ascii=False) for d in data]


def _added(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["data"]["message"] for e in events if e["type"] == "message.added"]


def test_message_events_carry_each_message_as_its_append_returned_it(
    server: Server, alice: httpx.Client
) -> None:
    sid = new_session(alice)["id"]
    one = alice.post(
        f"/v1/sessions/{sid}/messages",
        json={"role": "user", "content": ODD, "metadata": METADATA},
    )
    assert one.status_code == 201, one.text
    batch = alice.post(
        f"/v1/sessions/{sid}/messages/batch",
        json={
            "messages": [
                {"role": "assistant", "content": "", "metadata": {}},
                {"role": "tool", "content": ODD, "item": ITEM, "metadata": METADATA},
                {"content": "plain"},
            ]
        },
    )
    assert batch.status_code == 201, batch.text
    run = new_run(alice, sid, input={"steps": 1})
    wait_run(alice, run["id"])
    by_run = [
        m
        for m in alice.get(f"/v1/sessions/{sid}/messages", params={"limit": 100}).json()["data"]
        if m["run_id"] == run["id"]
    ]
    assert by_run
    assert alice.post(f"/v1/sessions/{sid}/messages/pop").status_code == 200
    assert alice.post(f"/v1/sessions/{sid}/messages/clear").status_code == 200
    returned = [one.json(), *batch.json()["data"]]
    assert all(m["removed_at"] is None for m in returned)

    listed = _added(events_of(alice, f"/v1/sessions/{sid}/events"))
    assert _texts([m for m in listed if m["run_id"] is None]) == _texts(returned)
    assert _texts([m for m in listed if m["run_id"] == run["id"]]) == _texts(by_run)

    with alice.stream("GET", f"/v1/runs/{run['id']}/events") as response:
        frames, _ = read_sse(response)
    assert _texts(_added([f.data for f in frames])) == _texts(by_run)

    with sqlite3.connect(server.db) as conn:  # what the file holds: references only
        stored = conn.execute(
            "SELECT data FROM events WHERE session_id = ? AND type = 'message.added' ORDER BY id",
            (sid,),
        ).fetchall()
    assert [d for (d,) in stored] == [
        f'{{"message_seq":{m["seq"]}}}' for m in sorted(listed, key=lambda m: m["seq"])
    ]
