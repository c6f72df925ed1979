"""Errors are application/problem+json with a stable code: 413 by declared and by streamed size,
422 naming the field, 404 for unknown routes, never a 500 nor a traceback."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest

from tests.api.httpkit import Server, new_session, start_server
from tether.api import create_app
from tether.api.auth import PUBLIC_PATHS

PROBLEM_MEMBERS = {"type", "title", "status", "detail", "code"}


def _problem(answer: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    problem: dict[str, object] = answer.json()
    assert problem.keys() >= PROBLEM_MEMBERS and problem["status"] == status
    assert problem["code"] == code
    assert "Traceback" not in answer.text
    return problem


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server whose body limit is 2000 bytes, set through the environment."""
    running = start_server(
        tmp_path_factory.mktemp("small"), env={"TETHER_MAX_BODY_BYTES": "2000"}, owners=("alice",)
    )
    yield running
    running.stop()


@pytest.mark.slow
def test_bodies_over_the_limit_get_413(server: Server, small: Server, alice: httpx.Client) -> None:
    big = json.dumps({"title": "x" * (1024 * 1024)}).encode()
    declared = alice.post("/v1/sessions", content=big, headers={"content-type": "application/json"})
    _problem(declared, 413, "payload_too_large")

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams in
        yield b'{"title": "'
        for _ in range(40):
            yield b"y" * 32_768
        yield b'"}'

    streamed = alice.post(
        "/v1/sessions", content=chunks(), headers={"content-type": "application/json"}
    )
    assert "content-length" not in streamed.request.headers
    _problem(streamed, 413, "payload_too_large")

    with small.client("alice") as client:
        fits = client.post("/v1/sessions", json={"metadata": {"note": "t" * 1900}})
        assert fits.status_code == 201
        _problem(
            client.post("/v1/sessions", json={"metadata": {"note": "t" * 2100}}),
            413,
            "payload_too_large",
        )


def test_malformed_json_and_wrong_types_get_422_naming_the_field(alice: httpx.Client) -> None:
    sid = new_session(alice)["id"]
    runs = f"/v1/sessions/{sid}/runs"
    headers = {"content-type": "application/json"}
    problem = _problem(
        alice.post(runs, content=b'{"goal": ', headers=headers), 422, "validation_error"
    )
    assert "invalid JSON" in str(problem["detail"])

    problem = _problem(alice.post(runs, json={"goal": 5}), 422, "validation_error")
    assert "body.goal" in str(problem["detail"])
    assert problem["errors"] == [
        {"field": "body.goal", "message": "Input should be a valid string", "type": "string_type"}
    ]
    problem = _problem(alice.post(runs, json={}), 422, "validation_error")
    assert "body.goal" in str(problem["detail"])
    problem = _problem(
        alice.post(runs, json={"goal": "g", "if_busy": "later"}), 422, "validation_error"
    )
    assert "body.if_busy" in str(problem["detail"])
    problem = _problem(alice.post(runs, json={"goal": "g", "goa1": 1}), 422, "validation_error")
    assert "body.goa1" in str(problem["detail"])
    problem = _problem(alice.post(runs, json=["goal"]), 422, "validation_error")
    problem = _problem(
        alice.post("/v1/sessions", json={"ttl_seconds": "soon"}), 422, "validation_error"
    )
    assert "body.ttl_seconds" in str(problem["detail"])
    problem = _problem(alice.get("/v1/sessions", params={"limit": "many"}), 422, "validation_error")
    assert "query.limit" in str(problem["detail"])
    _problem(alice.get("/v1/sessions", params={"status": "sleeping"}), 422, "validation_error")
    _problem(alice.get("/v1/sessions", params={"cursor": "not-a-cursor"}), 422, "validation_error")
    _problem(alice.post(runs, json={"goal": "g", "agent": "nobody"}), 404, "agent_not_found")
    lone = b'{"title": "\\ud800"}'
    _problem(alice.post("/v1/sessions", content=lone, headers=headers), 422, "validation_error")
    for body in ({"title": "a\x00b"}, {"metadata": {"k": ["\x00"]}}):
        problem = _problem(alice.post("/v1/sessions", json=body), 422, "validation_error")
        assert "NUL" in str(problem["detail"])
    _problem(
        alice.post(f"/v1/sessions/{sid}/messages", json={"role": "user", "content": "\x00"}),
        422,
        "validation_error",
    )
    deep = b"[" * 100_000 + b"]" * 100_000
    _problem(alice.post("/v1/sessions", content=deep, headers=headers), 422, "validation_error")
    message = alice.post(f"/v1/sessions/{sid}/memory/k", content=b"{}", headers=headers)
    assert message.status_code == 405  # memory is PUT, not POST
    _problem(alice.put(f"/v1/sessions/{sid}/memory/k", json={}), 422, "validation_error")
    for bare in ("3.9", {"python": "3.9"}):  # the value itself, not {"value": …}
        refused = _problem(
            alice.put(f"/v1/sessions/{sid}/memory/python", json=bare), 422, "validation_error"
        )
        assert 'a memory write is sent as {"value": …}' in str(refused["detail"])
    written = alice.put(f"/v1/sessions/{sid}/memory/python", json={"value": {"v": "3.9"}})
    assert written.status_code == 200 and written.json()["value"] == {"v": "3.9"}


def test_unknown_routes_and_methods_are_problems(alice: httpx.Client) -> None:
    _problem(alice.get("/v1/nothing-here"), 404, "not_found")
    _problem(alice.get("/nothing-here"), 404, "not_found")
    _problem(alice.put("/v1/sessions"), 405, "method_not_allowed")


def test_openapi_and_docs_are_served(server: Server) -> None:
    with server.client() as anonymous:
        spec = anonymous.get("/openapi.json").json()
        assert spec["info"]["title"] == "tether"
        assert "/v1/runs/{run_id}/events" in spec["paths"]
        assert "HTTPBearer" in spec["components"]["securitySchemes"]
        docs = anonymous.get("/docs")
        assert docs.status_code == 200 and "swagger" in docs.text.lower()


def test_the_spec_declares_the_api_key_on_every_operation_that_needs_one() -> None:
    spec = create_app().openapi()
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            keyed = path not in PUBLIC_PATHS
            assert (operation.get("security") == [{"HTTPBearer": []}]) == keyed, (method, path)
            assert ("401" in operation["responses"]) == keyed, (method, path)


def test_no_body_is_needed_where_every_field_is_optional(alice: httpx.Client) -> None:
    created = alice.post("/v1/sessions")
    assert created.status_code == 201 and created.json()["title"] is None


def test_steps_and_memory_lists_are_paginated(alice: httpx.Client) -> None:
    """Steps and memory lists honour ?limit= and hand out a cursor for the rest."""
    sid = alice.post("/v1/sessions", json={}).json()["id"]
    for i in range(5):
        alice.put(f"/v1/sessions/{sid}/memory/k{i}", json={"value": i}).raise_for_status()
    run = alice.post(
        f"/v1/sessions/{sid}/runs", json={"goal": "g", "agent": "echo", "input": {"steps": 5}}
    ).json()
    alice.get(f"/v1/runs/{run['id']}/wait", params={"timeout": 30}).raise_for_status()
    for path, total in ((f"/v1/sessions/{sid}/memory", 5), (f"/v1/runs/{run['id']}/steps", 6)):
        seen: list[dict[str, object]] = []
        cursor = None
        while True:
            params: dict[str, str | int] = {"limit": 2}
            if cursor:
                params["cursor"] = cursor
            page = alice.get(path, params=params).json()
            assert len(page["data"]) <= 2
            seen.extend(page["data"])
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert len(seen) == total
        assert len({json.dumps(item, sort_keys=True) for item in seen}) == total


def test_a_form_body_is_told_to_be_json(alice: httpx.Client) -> None:
    # what `curl -d '{...}'` sends without a Content-Type of its own
    form = alice.post(
        "/v1/sessions",
        content=b'{"title": "demo"}',
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    problem = _problem(form, 422, "validation_error")
    assert "application/json" in str(problem["detail"])
    assert "application/x-www-form-urlencoded" in str(problem["detail"])


def test_event_pages_follow_their_cursor(alice: httpx.Client) -> None:
    sid = new_session(alice)["id"]
    for n in range(5):
        alice.post(f"/v1/sessions/{sid}/messages", json={"role": "user", "content": f"m{n}"})
    seen: list[int] = []
    params: dict[str, str] = {"stream": "false", "limit": "2"}
    for _ in range(10):
        page = alice.get(f"/v1/sessions/{sid}/events", params=params).json()
        seen.extend(event["id"] for event in page["data"])
        if page["next_cursor"] is None:
            break
        params["cursor"] = page["next_cursor"]
    assert len(seen) == 6 and seen == sorted(set(seen))  # session.created + 5 messages
    both = alice.get(
        f"/v1/sessions/{sid}/events", params={"stream": "false", "cursor": "1", "after": "1"}
    )
    _problem(both, 422, "validation_error")
    _problem(
        alice.get(f"/v1/sessions/{sid}/events", params={"stream": "false", "cursor": "x"}),
        422,
        "validation_error",
    )


def test_an_empty_query_value_means_not_given(alice: httpx.Client) -> None:
    sid = new_session(alice)["id"]
    everything = alice.get("/v1/sessions").json()
    assert alice.get("/v1/sessions?status=&limit=&cursor=").json() == everything
    assert alice.get(f"/v1/sessions/{sid}/runs?status=").status_code == 200
    assert alice.get(f"/v1/sessions/{sid}/context?budget_tokens=").status_code == 200
    assert alice.get(f"/v1/sessions/{sid}/tool-calls?tool=&run_id=").status_code == 200
    calls = f"/v1/sessions/{sid}/tool-calls"
    assert alice.get(calls, params={"since": "2026-01-01T00:00:00Z"}).status_code == 200
    for bad in ("yesterday", "2026-01-01T00:00:00"):  # a time needs its zone
        _problem(alice.get(calls, params={"since": bad}), 422, "validation_error")
    _problem(alice.get("/v1/sessions?status=bogus"), 422, "validation_error")
    # an empty namespace is the root one, never "every namespace"
    alice.put("/v1/users/me/memory/k", params={"namespace": "docs"}, json={"value": 1})
    _problem(alice.get("/v1/users/me/memory/k?namespace="), 404, "not_found")
    listed = alice.get("/v1/users/me/memory?namespace=").json()["data"]
    assert all(item["namespace"] == [] for item in listed)


def test_health_answers_head_too(server: Server) -> None:
    with server.client() as anonymous:
        assert anonymous.head("/healthz").status_code == 200


def _raw_post(server: Server, head: str, body: bytes) -> bytes:
    """Send a request by hand (a body shorter than declared, then silence); the answer's start."""
    url = httpx.URL(server.url)
    with socket.create_connection((url.host, url.port), timeout=20) as conn:
        conn.sendall(head.encode() + b"\r\n\r\n" + body)
        return conn.recv(4096)


@pytest.mark.slow
def test_a_body_declared_too_large_is_refused_even_if_it_never_arrives(small: Server) -> None:
    key = small.keys["alice"]
    head = (
        "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {key}\r\nContent-Length: 1000000"
    )
    # answered once the drain gives up, not never (the raw connection would time out first)
    stalled = _raw_post(small, head, b'{"title": "')
    assert stalled.startswith(b"HTTP/1.1 413"), stalled
    # a client waiting for 100 Continue is refused at once, without being invited to send
    waiting = _raw_post(small, head + "\r\nExpect: 100-continue", b"")
    assert waiting.startswith(b"HTTP/1.1 413"), waiting
