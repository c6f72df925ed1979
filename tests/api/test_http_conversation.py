"""The conversation core on the wire: external keys (by-key lookups, if_exists get-or-create,
PATCH), structured items returned byte for byte as JSON, batches, tail reads with order and
before, pop and clear, app memory; every refusal a problem+json with a stable code."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.api.httpkit import new_session

RAW_ITEM = (
    '{"type":"message","role":"assistant","content":[{"type":"output_text",'
    '"text":"caf\\u00e9 \\ud83d\\ude00","annotations":[]}],"z":1.0,"a":[1,2.5e-07,-0.0,'
    '123456789012345678901234567890],"m":{"b":null,"a":false}}'
)


def _problem(answer: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    problem: dict[str, Any] = answer.json()
    assert problem["code"] == code and "Traceback" not in answer.text
    return problem


def test_an_item_comes_back_as_the_same_json(alice: httpx.Client) -> None:
    sid = new_session(alice)["id"]
    body = '{"item": ' + RAW_ITEM + "}"
    added = alice.post(
        f"/v1/sessions/{sid}/messages",
        content=body.encode(),
        headers={"content-type": "application/json"},
    )
    assert added.status_code == 201, added.text
    expected = json.loads(RAW_ITEM)
    for answer in (added.json(), alice.get(f"/v1/sessions/{sid}/messages").json()["data"][0]):
        assert answer["role"] == "assistant" and answer["content"] == "café 😀"
        # The same values, types and key order: re-encoding both gives the same text.
        assert json.dumps(answer["item"]) == json.dumps(expected)
        assert type(answer["item"]["z"]) is float and type(answer["item"]["a"][3]) is int


def test_keys_by_key_lookup_and_get_or_create(alice: httpx.Client) -> None:
    made = alice.post("/v1/sessions", json={"external_key": "wire/user 1", "app": "shop"})
    assert made.status_code == 201 and made.json()["external_key"] == "wire/user 1"
    sid = made.json()["id"]
    again = alice.post("/v1/sessions", json={"external_key": "wire/user 1", "if_exists": "return"})
    assert again.status_code == 200 and again.json()["id"] == sid
    assert again.json()["app"] == "shop"
    fresh = alice.post("/v1/sessions", json={"external_key": "wire/user 2", "if_exists": "return"})
    assert fresh.status_code == 201 and fresh.json()["id"] != sid
    _problem(
        alice.post("/v1/sessions", json={"external_key": "wire/user 1"}), 409, "already_exists"
    )
    found = alice.get("/v1/sessions/by-key", params={"key": "wire/user 1"})
    assert found.status_code == 200 and found.json()["id"] == sid
    _problem(alice.get("/v1/sessions/by-key", params={"key": sid}), 404, "not_found")
    _problem(alice.get("/v1/sessions/by-key"), 422, "validation_error")
    _problem(alice.post("/v1/sessions", json={"if_exists": "return"}), 422, "validation_error")
    _problem(
        alice.post("/v1/sessions", json={"external_key": "k", "if_exists": "maybe"}),
        422,
        "validation_error",
    )
    _problem(alice.post("/v1/sessions", json={"external_key": ""}), 422, "validation_error")
    _problem(alice.post("/v1/sessions", json={"external_key": "x" * 257}), 422, "validation_error")
    _problem(alice.post("/v1/sessions", json={"external_key": "a\u0000b"}), 422, "validation_error")
    _problem(alice.post("/v1/sessions", json={"app": "a/b"}), 422, "validation_error")

    patched = alice.patch(f"/v1/sessions/{sid}", json={"external_key": "wire/renamed", "app": None})
    assert patched.status_code == 200, patched.text
    assert (patched.json()["external_key"], patched.json()["app"]) == ("wire/renamed", None)
    _problem(
        alice.patch(f"/v1/sessions/{sid}", json={"external_key": "wire/user 2"}),
        409,
        "already_exists",
    )
    listed = alice.get("/v1/sessions", params={"query": "renamed"}).json()["data"]
    assert [s["id"] for s in listed] == [sid]
    prefixed = alice.get("/v1/sessions", params={"key_prefix": "wire/user"}).json()["data"]
    assert [s["external_key"] for s in prefixed] == ["wire/user 2"]


def test_batches_tail_reads_pop_and_clear(alice: httpx.Client) -> None:
    sid = new_session(alice)["id"]
    base = f"/v1/sessions/{sid}/messages"
    batch = alice.post(
        f"{base}/batch",
        json={"messages": [{"content": f"m{n}"} for n in range(1, 11)]},
    )
    assert batch.status_code == 201, batch.text
    assert [m["seq"] for m in batch.json()["data"]] == list(range(1, 11))

    tail = alice.get(base, params={"order": "desc", "limit": 3}).json()
    assert [m["seq"] for m in tail["data"]] == [10, 9, 8] and tail["next_cursor"]
    older = alice.get(base, params={"order": "desc", "limit": 3, "cursor": tail["next_cursor"]})
    assert [m["seq"] for m in older.json()["data"]] == [7, 6, 5]
    before = alice.get(base, params={"order": "desc", "limit": 2, "before": 5}).json()
    assert [m["seq"] for m in before["data"]] == [4, 3]
    _problem(alice.get(base, params={"order": "sideways"}), 422, "validation_error")
    _problem(alice.get(base, params={"before": 0}), 422, "validation_error")

    popped = alice.post(f"{base}/pop")
    assert popped.status_code == 200 and popped.json()["seq"] == 10
    assert popped.json()["removed_at"] is not None
    cleared = alice.post(f"{base}/clear")
    assert cleared.status_code == 200 and cleared.json() == {"removed": 9}
    assert alice.get(base).json()["data"] == []
    empty = alice.post(f"{base}/pop")
    assert empty.status_code == 204 and empty.content == b""
    assert alice.post(f"{base}/clear").json() == {"removed": 0}
    audit = alice.get(base, params={"include_removed": "true", "limit": 100}).json()["data"]
    assert len(audit) == 10 and all(m["removed_at"] for m in audit)
    events = alice.get(f"/v1/sessions/{sid}/events", params={"stream": "false"}).json()["data"]
    removed = [e for e in events if e["type"] in ("message.removed", "messages.cleared")]
    assert [e["data"] for e in removed] == [
        {"message_id": popped.json()["id"], "seq": 10},
        {"after_seq": 0, "through_seq": 10, "removed": 9},
    ]


def test_batch_refusals(alice: httpx.Client) -> None:
    sid = new_session(alice)["id"]
    path = f"/v1/sessions/{sid}/messages/batch"
    _problem(alice.post(path, json={"messages": []}), 422, "validation_error")
    too_many = {"messages": [{"content": "x"}] * 1001}
    _problem(alice.post(path, json=too_many), 422, "validation_error")
    _problem(
        alice.post(path, json={"messages": [{"content": "ok"}, {"role": "robot"}]}),
        422,
        "validation_error",
    )
    _problem(alice.post(path, json={"messages": [{"role": "user"}]}), 422, "validation_error")
    assert alice.get(f"/v1/sessions/{sid}/messages").json()["data"] == []
    alice.post(f"/v1/sessions/{sid}/close")
    _problem(alice.post(path, json={"messages": [{"content": "x"}]}), 409, "session_closed")
    _problem(alice.post(f"/v1/sessions/{sid}/messages/pop"), 409, "session_closed")
    _problem(alice.post(f"/v1/sessions/{sid}/messages/clear"), 409, "session_closed")


def test_app_memory_routes(alice: httpx.Client) -> None:
    path = "/v1/apps/wire-app/memory"
    assert alice.get(path).json() == {"data": [], "next_cursor": None}
    put = alice.put(f"{path}/greeting/en", json={"value": {"text": "hi"}})
    assert put.status_code == 200, put.text
    assert (put.json()["scope"], put.json()["scope_id"], put.json()["key"]) == (
        "app",
        "wire-app",
        "greeting/en",
    )
    assert alice.get(f"{path}/greeting/en").json()["value"] == {"text": "hi"}
    assert [i["key"] for i in alice.get(path).json()["data"]] == ["greeting/en"]
    assert alice.delete(f"{path}/greeting/en").status_code == 204
    _problem(alice.get(f"{path}/greeting/en"), 404, "not_found")
    _problem(alice.delete(f"{path}/greeting/en"), 404, "not_found")
    _problem(alice.put("/v1/apps/%20padded/memory/k", json={"value": 1}), 422, "validation_error")


def test_the_spec_documents_the_new_routes(alice: httpx.Client) -> None:
    spec = alice.get("/openapi.json").json()
    paths = spec["paths"]
    for path in (
        "/v1/sessions/by-key",
        "/v1/sessions/{session_id}/messages/batch",
        "/v1/sessions/{session_id}/messages/pop",
        "/v1/sessions/{session_id}/messages/clear",
        "/v1/apps/{app}/memory",
        "/v1/apps/{app}/memory/{key}",
    ):
        assert path in paths, path
    params = {p["name"] for p in paths["/v1/sessions/{session_id}/messages"]["get"]["parameters"]}
    assert {"order", "before", "include_removed"} <= params
    schemas = spec["components"]["schemas"]
    assert {"external_key", "app"} <= set(schemas["Session"]["properties"])
    assert {"item", "removed_at"} <= set(schemas["Message"]["properties"])
    assert "if_exists" in schemas["SessionCreate"]["properties"]
