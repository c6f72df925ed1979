"""Clear errors that reveal nothing, over real HTTP: numeric overflow is a 422 naming the field,
integral floats are integers, a path or query that is not UTF-8 is refused, a 405 lists every
method of its path, /docs loads nothing from elsewhere (or is off), and a half-sent request is
cut off."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest

from tests.api.httpkit import Server, new_run, new_session, start_server

PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server without /docs, giving request heads 1 s to arrive."""
    running = start_server(
        tmp_path_factory.mktemp("strict"), "--header-timeout", "1", "--no-docs", owners=("alice",)
    )
    yield running
    running.stop()


def _refused(answer: httpx.Response, field: str, status: int = 422) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == PROBLEM
    assert field in answer.json()["detail"], answer.json()


@pytest.mark.parametrize("ttl", [1.7e307, {"ttl": 1e308}, {"ttl": 1.7e307, "strategy": "delete"}])
def test_a_thread_ttl_that_overflows_is_a_422_naming_it(alice: httpx.Client, ttl: object) -> None:
    field = "body.ttl.ttl" if isinstance(ttl, dict) else "body.ttl"
    _refused(alice.post("/threads", json={"ttl": ttl}), field)
    thread = alice.post("/threads", json={}).json()["thread_id"]
    _refused(alice.patch(f"/threads/{thread}", json={"ttl": ttl}), field)


def test_numbers_too_large_anywhere_are_422s(alice: httpx.Client) -> None:
    sid = new_session(alice)["id"]
    for path, body, field in (
        ("/v1/sessions", {"ttl_seconds": 1.7e307}, "body.ttl_seconds"),
        ("/v1/sessions", {"ttl_seconds": 10**400}, "body.ttl_seconds"),
        (f"/v1/sessions/{sid}/runs", {"goal": "g", "timeout_seconds": 1e308}, "timeout_seconds"),
        (f"/v1/sessions/{sid}/runs", {"goal": "g", "max_attempts": 1e308}, "max_attempts"),
        (f"/v1/sessions/{sid}/runs", {"goal": "g", "after_seconds": 1e308}, "after_seconds"),
    ):
        _refused(alice.post(path, json=body), field)
    _refused(alice.patch(f"/v1/sessions/{sid}", json={"ttl_seconds": 1e308}), "ttl_seconds")
    for path, body in (
        ("/store/items/search", {"namespace_prefix": ["a"], "offset": 10**30}),
        ("/store/namespaces", {"offset": 10**30}),
        ("/threads/search", {"offset": 10**30}),
    ):
        _refused(alice.post(path, json=body), "body.offset")
    _refused(alice.get("/v1/sessions", params={"limit": "1e308"}), "limit")
    json_header = {"content-type": "application/json"}
    for raw in (b'{"value": 1e400}', b'{"value": {"deep": [-1e999]}}'):
        big = alice.put(f"/v1/sessions/{sid}/memory/big", content=raw, headers=json_header)
        _refused(big, "value")
    meta = alice.patch(
        f"/v1/sessions/{sid}", content=b'{"metadata": {"n": 1e999}}', headers=json_header
    )
    _refused(meta, "metadata")


def test_a_search_text_longer_than_a_key_is_refused(alice: httpx.Client) -> None:
    """A session search scans every session's title and metadata for its text: a long one
    held the server for seconds (no other request answered meanwhile), so it is capped as the
    runs' search is."""
    assert alice.get("/v1/sessions", params={"query": "a" * 256}).status_code == 200
    _refused(alice.get("/v1/sessions", params={"query": "a" * 257}), "query")
    _refused(alice.get("/v1/runs", params={"q": "a" * 257}), "query")


def test_digits_that_are_not_ascii_or_too_many_are_422s(
    server: Server, alice: httpx.Client
) -> None:
    """str.isdigit takes "²", which int() refuses, and int() refuses more than 4300 digits:
    such ids, cursors and paths were 500s."""
    sid = new_session(alice)["id"]
    run = new_run(alice, sid, goal="g", agent="echo")
    alice.get(f"/v1/runs/{run['id']}/wait", params={"timeout": 10})
    odd = b"\xb2"  # ² in the latin-1 of a header
    for path in (f"/v1/sessions/{sid}/events", f"/v1/runs/{run['id']}/events"):
        answer = alice.get(path, params={"stream": "false"}, headers={b"Last-Event-ID": odd})
        _refused(answer, "Last-Event-ID")
        _refused(alice.get(path, params={"stream": "false", "cursor": "²"}), "cursor")
    for path in (f"/threads/{sid}/stream", f"/threads/{sid}/runs/{run['id']}/stream"):
        for header in (odd, b"1-" + odd):
            _refused(alice.get(path, headers={b"Last-Event-ID": header}), "Last-Event-ID")
    for cursor in ("²", "9" * 5000):
        _refused(alice.get("/v1/users/me/memory", params={"cursor": cursor}), "cursor")
    deep = {"ids": [sid], "extract": {"e": f"values.messages[{'9' * 5000}]"}}
    _refused(alice.post("/threads/search", json=deep), "body.extract")
    form = {"key": server.keys["alice"], "next": "/ui"}
    login = httpx.post(f"{server.url}/ui/login", data=form, headers={"Origin": server.url})
    cookie = login.headers["set-cookie"].split(";")[0]
    ui = httpx.get(
        f"{server.url}/ui/runs/{run['id']}/events",
        headers={b"Cookie": cookie.encode(), b"Last-Event-ID": odd},
    )
    assert ui.status_code == 422, ui.text


def test_integral_floats_are_integers(alice: httpx.Client) -> None:
    session = alice.post("/v1/sessions", json={"ttl_seconds": 99.0})
    assert session.status_code == 201 and session.json()["ttl_seconds"] == 99
    run = alice.post(
        f"/v1/sessions/{session.json()['id']}/runs", json={"goal": "g", "max_attempts": 2.0}
    )
    assert run.status_code == 201 and run.json()["max_attempts"] == 2
    _refused(alice.post("/v1/sessions", json={"ttl_seconds": 99.5}), "ttl_seconds")
    _refused(alice.post("/v1/sessions", json={"ttl_seconds": True}), "ttl_seconds")


def test_a_path_or_query_that_is_not_utf8_is_refused(alice: httpx.Client) -> None:
    sid = new_session(alice)["id"]
    _refused(alice.put(f"/v1/sessions/{sid}/memory/a%FFb", json={"value": 1}), "path")
    _refused(alice.get("/v1/sessions?q=%C3%28"), "query")
    assert alice.get(f"/v1/sessions/{sid}/memory").json()["data"] == []
    fine = alice.put(f"/v1/sessions/{sid}/memory/caf%C3%A9", json={"value": 1})
    assert fine.status_code == 200 and fine.json()["key"] == "café"


def test_a_405_lists_every_method_of_its_path(alice: httpx.Client) -> None:
    sid = new_session(alice)["id"]
    for method, path, allowed in (
        ("PUT", "/v1/sessions", "GET, POST"),
        ("POST", f"/v1/sessions/{sid}", "GET, PATCH, DELETE"),
        ("PATCH", f"/v1/sessions/{sid}/memory/k", "GET, PUT, DELETE"),
        ("POST", "/healthz", "GET, HEAD"),
    ):
        answer = alice.request(method, path)
        assert answer.status_code == 405, answer.text
        assert answer.headers["allow"] == allowed
        assert answer.json()["code"] == "method_not_allowed"


def test_docs_load_nothing_from_elsewhere(server: Server) -> None:
    with httpx.Client(base_url=server.url) as anonymous:
        page = anonymous.get("/docs")
        assert page.status_code == 200
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-frame-options"] == "DENY"
        assert "http" not in page.text  # every script and style is the server's own
        for asset in ("/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css", "/docs/docs.js"):
            loaded = anonymous.get(asset)
            assert loaded.status_code == 200 and loaded.headers["x-content-type-options"]
        assert "validatorUrl: null" in anonymous.get("/docs/docs.js").text
        assert anonymous.get("/redoc").status_code == 404
        assert anonymous.get("/docs/oauth2-redirect").status_code == 404


@pytest.mark.slow
def test_no_docs_turns_them_off(strict: Server) -> None:
    with httpx.Client(base_url=strict.url) as anonymous:
        assert anonymous.get("/docs").status_code == 404
        assert anonymous.get("/docs/swagger-ui-bundle.js").status_code == 404
        assert anonymous.get("/openapi.json").status_code == 200


def _response(sock: socket.socket) -> bytes:
    """One whole response (head and Content-Length body) read off sock."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


@pytest.mark.slow
def test_a_half_sent_request_is_cut_off(strict: Server) -> None:
    host, port = strict.url.removeprefix("http://").rsplit(":", 1)
    with (
        socket.create_connection((host, int(port)), timeout=60) as silent,
        socket.create_connection((host, int(port)), timeout=60) as half,
        socket.create_connection((host, int(port)), timeout=60) as kept,
    ):
        half.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert _response(kept).startswith(b"HTTP/1.1 200")
        kept.sendall(b"GET /healthz HTTP/1.1\r\n")  # a second request, never finished
        # Each waits for what the server does: it closes them (recv answers b"" at EOF).
        assert half.recv(65536) == b""
        assert silent.recv(65536) == b""
        assert kept.recv(65536) == b""
