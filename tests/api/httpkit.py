"""Helpers of the HTTP tests: run ``tether serve`` for real (127.0.0.1, port 0, temp database)
with keys for two owners, read SSE off the wire, and wait on observable state with a deadline."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

T = TypeVar("T")
TETHER = [sys.executable, "-m", "tether"]
OWNERS = ("alice", "bob")
LISTENING = "tether listening on "


def cli(
    *args: str | Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run the tether command; its exit code, stdout and stderr."""
    return subprocess.run(
        [*TETHER, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def eventually(check: Callable[[], T | None], *, timeout: float = 15.0, what: str = "") -> T:
    """Poll check until it returns something truthy, or fail at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what or check}")
        time.sleep(0.01)


@dataclass
class Server:
    """A running ``tether serve`` process."""

    process: subprocess.Popen[str]
    db: Path
    keys: dict[str, str]
    url: str = ""
    log: list[str] = field(default_factory=list)

    def client(self, owner: str | None = None, *, key: str | None = None) -> httpx.Client:
        """An HTTP client acting with owner's key (or key; neither: anonymous)."""
        key = key or (self.keys[owner] if owner else None)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        """Ask the server to stop; its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


def start_server(
    folder: Path,
    *args: str,
    env: dict[str, str] | None = None,
    owners: tuple[str, ...] = OWNERS,
) -> Server:
    """Create keys for owners in a new database, start serving it, wait until it listens."""
    db = folder / "tether.db"
    keys = {}
    for owner in owners:
        made = cli("keys", "create", "--owner", owner, "--db", db)
        assert made.returncode == 0, made.stderr
        keys[owner] = made.stdout.strip()
    process = subprocess.Popen(
        [*TETHER, "serve", "--port", "0", "--db", str(db), "--no-access-log", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    server = Server(process, db, keys)
    ready = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        with process.stderr:
            for line in process.stderr:
                server.log.append(line)
                if line.startswith(LISTENING):
                    server.url = line[len(LISTENING) :].split()[0]
                    ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(30) or not server.url:
        server.stop()
        pytest.fail("tether serve did not start:\n" + "".join(server.log))
    return server


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


class Proxy:
    """A TCP proxy in front of the server whose connections can be cut, to drop streams."""

    def __init__(self, target: str) -> None:
        host, port = target.removeprefix("http://").split(":")
        self._target = (host, int(port))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        #: Connections accepted so far.
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self._target)
            with self._lock:
                self.connections += 1
                self._open += [downstream, upstream]
            for source, sink in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """Drop every open connection (new ones are still accepted)."""
        with self._lock:
            doomed, self._open = self._open, []
        for sock in doomed:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        self._listener.close()
        self.cut()
