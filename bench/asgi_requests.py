"""The server's CPU per request on the hot paths, the app called in process (ASGI, no socket).

    .venv/bin/python bench/asgi_requests.py
    .venv/bin/python bench/asgi_requests.py --requests 3000 --rounds 5

``create_app`` (SQLite in a temporary folder, API keys on, no worker) is called directly on one
event loop, every request carrying a valid ``Authorization: Bearer`` key and a loopback ``Host``,
as uvicorn would pass them on. Beside it, a minimal FastAPI app (a JSON body validated into a
pydantic model, a path parameter, a ``Response`` of fixed bytes) is called the same way: the
framework's floor, as goal 1 of issue 13 compares against a minimal FastAPI app. Timed, in
rounds that take every case in turn, with ``time.thread_time`` (CPU, not wall time):

* ``POST /v1/sessions/{id}/messages`` (one message), ``GET /v1/sessions/{id}`` and
  ``GET /v1/sessions/{id}/messages?order=desc&limit=20`` (of a session of a few thousand);
* ``POST /v1/runs`` and ``GET /v1/runs/{id}/wait?timeout=0`` (no worker: the run stays ready);
* ``GET /healthz`` (middleware, routing to the first route, the store's ping);
* the minimal app's ``POST /items/{id}`` and ``GET /items/{id}``.

Each figure is the median of the rounds' CPU per request; every ratio is of two medians of the
same run. Uvicorn's HTTP parsing and the socket are left out: ``bench/http_load.py`` measures
them (its "CPU per append" rows).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from fastapi import FastAPI
from pydantic import BaseModel
from starlette.responses import Response
from starlette.types import ASGIApp, Message

from tether.api import create_app
from tether.api.settings import ApiSettings

Case = Callable[[], Awaitable[None]]


async def call(
    app: ASGIApp, method: str, path: str, *, secret: str = "", body: bytes = b"", query: bytes = b""
) -> tuple[int, bytes]:
    """One request through app, as uvicorn passes it on: (status, body)."""
    headers = [(b"host", b"127.0.0.1:8000")]
    if secret:
        headers.append((b"authorization", f"Bearer {secret}".encode()))
    if body:
        headers += [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    messages: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> Message:
        if messages:
            return messages.pop()
        await asyncio.Event().wait()  # (no request here reads past its body)
        return {"type": "http.disconnect"}

    status = 0
    chunks: list[bytes] = []

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(chunks)


class Item(BaseModel):
    """The minimal app's body."""

    role: str
    content: str


def minimal_app() -> FastAPI:
    """The floor: a JSON body into a model, a path parameter, fixed bytes back."""
    app = FastAPI()

    @app.post("/items/{item_id}", status_code=201)
    async def add(item_id: str, item: Item) -> Response:
        return Response(b'{"ok":true}', 201, media_type="application/json")

    @app.get("/items/{item_id}")
    async def get(item_id: str) -> Response:
        return Response(b'{"ok":true}', media_type="application/json")

    return app


def expect(status: int, wanted: int, body: bytes) -> None:
    if status != wanted:
        raise RuntimeError(f"{status} instead of {wanted}: {body[:300]!r}")


async def cases(app: FastAPI, history: int) -> dict[str, Case]:
    """The timed requests, on a session of history messages (app's lifespan running)."""
    _, secret = await app.state.keys.create("bench")
    status, out = await call(app, "POST", "/v1/sessions", secret=secret, body=b"{}")
    expect(status, 201, out)
    sid = json.loads(out)["id"]
    batch = json.dumps({"messages": [{"role": "user", "content": "m" * 200}] * 500}).encode()
    for _ in range(history // 500):
        status, out = await call(
            app, "POST", f"/v1/sessions/{sid}/messages/batch", secret=secret, body=batch
        )
        expect(status, 201, out)
    message = json.dumps({"role": "user", "content": "a message of some length " * 4}).encode()
    run = json.dumps({"goal": "echo this"}).encode()
    minimal = minimal_app()

    async def post_message() -> None:
        path = f"/v1/sessions/{sid}/messages"
        status, out = await call(app, "POST", path, secret=secret, body=message)
        expect(status, 201, out)

    async def get_session() -> None:
        status, out = await call(app, "GET", f"/v1/sessions/{sid}", secret=secret)
        expect(status, 200, out)

    async def get_messages() -> None:
        path, query = f"/v1/sessions/{sid}/messages", b"order=desc&limit=20"
        status, out = await call(app, "GET", path, secret=secret, query=query)
        expect(status, 200, out)

    async def run_and_wait() -> None:
        status, out = await call(app, "POST", "/v1/runs", secret=secret, body=run)
        expect(status, 201, out)
        path = f"/v1/runs/{json.loads(out)['id']}/wait"
        status, out = await call(app, "GET", path, secret=secret, query=b"timeout=0")
        expect(status, 200, out)

    async def healthz() -> None:
        status, out = await call(app, "GET", "/healthz")
        expect(status, 200, out)

    async def minimal_post() -> None:
        status, out = await call(minimal, "POST", "/items/abc", body=message)
        expect(status, 201, out)

    async def minimal_get() -> None:
        status, out = await call(minimal, "GET", "/items/abc")
        expect(status, 200, out)

    return {
        "POST /v1/sessions/{id}/messages": post_message,
        "GET /v1/sessions/{id}": get_session,
        "GET /v1/sessions/{id}/messages?order=desc&limit=20": get_messages,
        "POST /v1/runs + GET /v1/runs/{id}/wait?timeout=0": run_and_wait,
        "GET /healthz": healthz,
        "minimal app: POST /items/{id}": minimal_post,
        "minimal app: GET /items/{id}": minimal_get,
    }


async def measure(args: argparse.Namespace) -> dict[str, float]:
    """Median CPU µs per request of each case."""
    with tempfile.TemporaryDirectory() as folder:
        app = create_app(ApiSettings(db=str(Path(folder) / "bench.db"), auth=True, workers=0))
        async with app.router.lifespan_context(app):
            timed = await cases(app, args.history)
            for case in timed.values():  # warm: every route's first call, caches
                for _ in range(50):
                    await case()
            samples: dict[str, list[float]] = {name: [] for name in timed}
            for _ in range(args.rounds):
                for name, case in timed.items():
                    started = time.thread_time()
                    for _ in range(args.requests):
                        await case()
                    spent = time.thread_time() - started
                    samples[name].append(spent / args.requests * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests a case per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--history", type=int, default=2000, help="messages in the session")
    args = parser.parse_args()
    figures = asyncio.run(measure(args))
    floor = {"POST": figures["minimal app: POST /items/{id}"]}
    floor["GET"] = figures["minimal app: GET /items/{id}"]
    print(f"CPU per request, in process (median of {args.rounds} rounds of {args.requests})")
    for name, micros in figures.items():
        ratio = "" if name.startswith("minimal") else f"{micros / floor[name.split()[0]]:6.2f}x"
        print(f"  {name:<58} {micros:8.1f} µs {ratio}")
    print("  (x: of the minimal app's request with the same method)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
