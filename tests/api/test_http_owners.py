"""Two owners cannot see or touch each other's sessions, runs, streams or memory: 404, exactly
as for objects that do not exist."""

from __future__ import annotations

from typing import Any

import httpx

from tests.api.httpkit import new_run, new_session, wait_run

MISSING = "01a22000-0000-7000-8000-000000000000"


def _shape(answer: httpx.Response) -> tuple[int, str, str]:
    problem = answer.json()
    return answer.status_code, answer.headers["content-type"], problem["code"]


def test_another_owners_objects_answer_404_like_missing_ones(
    alice: httpx.Client, bob: httpx.Client
) -> None:
    session = new_session(alice, title="alice's", external_key="alice-key", app="owners-shop")
    sid = session["id"]
    assert alice.put("/v1/apps/owners-shop/memory/plan", json={"value": "gold"}).status_code == 200
    waiting = new_run(alice, sid, input={"wait": "go?"})
    rid = waiting["id"]
    assert wait_run(alice, rid)["status"] == "waiting"
    assert alice.put(f"/v1/sessions/{sid}/memory/secret", json={"value": 42}).status_code == 200
    assert alice.put("/v1/users/me/memory/name", json={"value": "Alice"}).status_code == 200

    requests: list[tuple[str, str, dict[str, Any] | None]] = [
        ("GET", "/v1/sessions/{sid}", None),
        ("PATCH", "/v1/sessions/{sid}", {"title": "mine now"}),
        ("POST", "/v1/sessions/{sid}/close", None),
        ("DELETE", "/v1/sessions/{sid}", None),
        ("GET", "/v1/sessions/{sid}/messages", None),
        ("POST", "/v1/sessions/{sid}/messages", {"role": "user", "content": "hi"}),
        ("POST", "/v1/sessions/{sid}/messages/batch", {"messages": [{"content": "hi"}]}),
        ("GET", "/v1/sessions/{sid}/messages?order=desc&before=5", None),
        ("POST", "/v1/sessions/{sid}/messages/pop", None),
        ("POST", "/v1/sessions/{sid}/messages/clear", None),
        ("GET", "/v1/sessions/{sid}/runs", None),
        ("POST", "/v1/sessions/{sid}/runs", {"goal": "hijack", "if_busy": "interrupt"}),
        ("GET", "/v1/sessions/{sid}/tool-calls", None),
        ("GET", "/v1/sessions/{sid}/memory", None),
        ("GET", "/v1/sessions/{sid}/memory/secret", None),
        ("PUT", "/v1/sessions/{sid}/memory/secret", {"value": 0}),
        ("DELETE", "/v1/sessions/{sid}/memory/secret", None),
        ("GET", "/v1/sessions/{sid}/context", None),
        ("GET", "/v1/sessions/{sid}/events", None),
        ("GET", "/v1/runs/{rid}", None),
        ("GET", "/v1/runs/{rid}/wait?timeout=0", None),
        ("POST", "/v1/runs/{rid}/cancel", None),
        ("POST", "/v1/runs/{rid}/resume", {"input": "bob says yes"}),
        ("GET", "/v1/runs/{rid}/steps", None),
        ("GET", "/v1/runs/{rid}/tool-calls", None),
        ("GET", "/v1/runs/{rid}/memory", None),
        ("POST", "/v1/runs/{rid}/memory/secret/promote", None),
        ("GET", "/v1/runs/{rid}/events", None),
    ]
    for method, template, body in requests:
        theirs = bob.request(method, template.format(sid=sid, rid=rid), json=body)
        missing = bob.request(method, template.format(sid=MISSING, rid=MISSING), json=body)
        assert (
            _shape(theirs) == _shape(missing) == (404, "application/problem+json", "not_found")
        ), (
            method,
            template,
            theirs.text,
        )

    assert sid not in [s["id"] for s in bob.get("/v1/sessions").json()["data"]]
    theirs_by_key = bob.get("/v1/sessions/by-key", params={"key": "alice-key"})
    missing_by_key = bob.get("/v1/sessions/by-key", params={"key": "no-such-key"})
    assert (
        _shape(theirs_by_key)
        == _shape(missing_by_key)
        == (
            404,
            "application/problem+json",
            "not_found",
        )
    )
    assert bob.get("/v1/apps/owners-shop/memory/plan").status_code == 404
    assert bob.get("/v1/apps/owners-shop/memory").json()["data"] == []
    # The same key and app names are bob's own to use: nothing is shared with alice.
    bobs = new_session(bob, external_key="alice-key", app="owners-shop")
    assert bobs["id"] != sid
    assert bob.put("/v1/apps/owners-shop/memory/plan", json={"value": "free"}).status_code == 200
    assert bob.get("/v1/users/me/memory/name").status_code == 404
    assert "name" not in [i["key"] for i in bob.get("/v1/users/me/memory").json()["data"]]

    # Nothing bob tried changed alice's objects.
    assert alice.get(f"/v1/sessions/{sid}").json()["status"] == "active"
    assert alice.get(f"/v1/runs/{rid}").json()["status"] == "waiting"
    assert alice.get(f"/v1/sessions/{sid}/memory/secret").json()["value"] == 42
    assert alice.get("/v1/users/me/memory/name").json()["value"] == "Alice"
    assert alice.get(f"/v1/sessions/{sid}/messages").json()["data"] == []
    assert alice.get("/v1/apps/owners-shop/memory/plan").json()["value"] == "gold"
    assert alice.get("/v1/sessions/by-key", params={"key": "alice-key"}).json()["id"] == sid


def test_an_assistant_id_another_owner_holds_is_taken_not_a_500(
    alice: httpx.Client, bob: httpx.Client
) -> None:
    made = alice.post("/v1/assistants", json={"graph_id": "echo", "name": "alice's"})
    assert made.status_code == 201
    aid = made.json()["id"]
    for path, body in (
        ("/v1/assistants", {"graph_id": "echo", "assistant_id": aid}),
        ("/v1/assistants", {"graph_id": "echo", "assistant_id": aid, "if_exists": "do_nothing"}),
        ("/assistants", {"graph_id": "echo", "assistant_id": aid}),
        ("/assistants", {"graph_id": "echo", "assistant_id": aid, "if_exists": "do_nothing"}),
    ):
        answer = bob.post(path, json=body)
        assert _shape(answer) == (409, "application/problem+json", "already_exists"), answer.text
        assert "UNIQUE" not in answer.text
    assert alice.get(f"/v1/assistants/{aid}").json()["name"] == "alice's"
