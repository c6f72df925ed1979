"""Helpers of the HTTP tests: run ``tether serve`` for real (127.0.0.1, port 0, temp database)
with keys for two owners, read SSE off the wire, and long-poll a run until it settles."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.serving import Served, serve

OWNERS = ("alice", "bob")


@dataclass
class Server(Served):
    """A running ``tether serve`` process."""

    def client(self, owner: str | None = None, *, key: str | None = None) -> httpx.Client:
        """An HTTP client acting with owner's key (or key; neither: anonymous)."""
        key = key or (self.keys[owner] if owner else None)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


def start_server(
    folder: Path,
    *args: str,
    env: dict[str, str] | None = None,
    owners: tuple[str, ...] = OWNERS,
) -> Server:
    """Create keys for owners in a new database, start serving it, wait until it listens."""
    environment = {**os.environ, **(env or {})}
    return serve(Server, folder / "tether.db", *args, owners=owners, env=environment)


# -- SSE, read independently of tether's own client ---------------------------------------------


@dataclass
class Frame:
    """One SSE message as it came over the wire."""

    id: int
    event: str
    data: dict[str, Any]


def read_sse(
    source: httpx.Response | Iterator[str],
    *,
    until: Callable[[Frame], bool] | None = None,
    heartbeats: int | None = None,
) -> tuple[list[Frame], int]:
    """Frames (and the number of heartbeat comments) until the stream ends, until(frame) is
    true, or the given number of heartbeats arrived. Pass response.iter_lines() to read one
    stream in several calls."""
    frames: list[Frame] = []
    beats = 0
    fields: dict[str, str] = {}
    lines = source.iter_lines() if isinstance(source, httpx.Response) else source
    for line in lines:
        if line.startswith(":"):
            beats += line == ": heartbeat"
            if heartbeats is not None and beats >= heartbeats:
                break
            continue
        if line:
            name, _, value = line.partition(": ")
            fields[name] = value
            continue
        if "data" in fields:
            frame = Frame(int(fields["id"]), fields["event"], json.loads(fields["data"]))
            frames.append(frame)
            if until is not None and until(frame):
                break
        fields = {}
    return frames, beats


def events_of(client: httpx.Client, path: str, after: int | None = None) -> list[dict[str, Any]]:
    """The event log as a JSON page (stream=false)."""
    params: dict[str, Any] = {"stream": "false", "limit": 1000}
    if after is not None:
        params["after"] = after
    answer = client.get(path, params=params)
    assert answer.status_code == 200, answer.text
    data: list[dict[str, Any]] = answer.json()["data"]
    return data


def new_session(client: httpx.Client, **body: Any) -> dict[str, Any]:
    answer = client.post("/v1/sessions", json=body)
    assert answer.status_code == 201, answer.text
    session: dict[str, Any] = answer.json()
    return session


def new_run(client: httpx.Client, session_id: str, **body: Any) -> dict[str, Any]:
    body.setdefault("goal", "echo this")
    answer = client.post(f"/v1/sessions/{session_id}/runs", json=body)
    assert answer.status_code == 201, answer.text
    run: dict[str, Any] = answer.json()
    return run


def wait_run(client: httpx.Client, run_id: str, timeout: float = 15) -> dict[str, Any]:
    """Long-poll until the run is terminal or waiting."""
    answer = client.get(f"/v1/runs/{run_id}/wait", params={"timeout": timeout})
    assert answer.status_code == 200, answer.text
    run: dict[str, Any] = answer.json()
    assert run["status"] not in ("ready", "running"), run
    return run
