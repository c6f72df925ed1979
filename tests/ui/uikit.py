"""Helpers of the browser tests: Debian's Chromium driven by Playwright, a real ``tether serve``
on 127.0.0.1 (port 0, temporary database, keys made with the CLI), and a TCP proxy whose
connections can be cut to drop the page's event stream."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

TETHER = [sys.executable, "-m", "tether"]
LISTENING = "tether listening on "
#: Where the screenshots the docs show are saved.
IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
#: Playwright cannot download a browser here: it drives Debian's package.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_or_skip() -> str:
    """The path of Debian's chromium; skip without it, but fail in CI (CI=true)."""
    path = shutil.which("chromium")
    if path is not None:
        return path
    message = "Chromium is missing: apt-get install -y chromium (.ci/run installs it)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run the tether command; its exit code, stdout and stderr."""
    return subprocess.run(
        [*TETHER, *map(str, args)], capture_output=True, text=True, timeout=60, check=False
    )


@dataclass
class Server:
    """A running ``tether serve`` and the API keys made for it."""

    process: subprocess.Popen[str]
    keys: dict[str, str]
    url: str = ""
    log: list[str] = field(default_factory=list)

    def api(self, owner: str | None = None) -> httpx.Client:
        """An HTTP client of the /v1 API acting for owner (no key under --no-auth)."""
        headers = {"Authorization": f"Bearer {self.keys[owner]}"} if owner else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(20)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


def start_server(db: Path, *args: str, owners: tuple[str, ...] = ()) -> Server:
    """Make a key per owner with the CLI, then serve db on 127.0.0.1 until it listens."""
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
    )
    server = Server(process, keys)
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


def created(answer: httpx.Response) -> Any:
    """The JSON of a 200/201 answer (fails the test with the problem otherwise)."""
    assert answer.status_code in (200, 201), answer.text
    return answer.json()


class Proxy:
    """A TCP proxy in front of the server; cut() drops every open connection."""

    def __init__(self, target: str) -> None:
        host, port = target.removeprefix("http://").split(":")
        self._target = (host, int(port))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self._target)
            with self._lock:
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


def log_in(page: Page, server: Server, owner: str) -> None:
    """Log in through the form with owner's key; lands on the sessions page."""
    page.goto(f"{server.url}/ui")
    page.get_by_label("API key").fill(server.keys[owner])
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Sessions", exact=True)).to_be_visible()


def new_session(server: Server, owner: str | None, **body: Any) -> dict[str, Any]:
    """A session made through the /v1 API."""
    with server.api(owner) as api:
        session: dict[str, Any] = created(api.post("/v1/sessions", json=body))
    return session


def new_run(server: Server, owner: str | None, session_id: str, **body: Any) -> dict[str, Any]:
    """A run started through the /v1 API (goal "echo this" unless given)."""
    body.setdefault("goal", "echo this")
    with server.api(owner) as api:
        run: dict[str, Any] = created(api.post(f"/v1/sessions/{session_id}/runs", json=body))
    return run


def settled(server: Server, owner: str | None, run_id: str) -> dict[str, Any]:
    """The run once it is terminal or waiting (long-poll)."""
    with server.api(owner) as api:
        run: dict[str, Any] = created(api.get(f"/v1/runs/{run_id}/wait", params={"timeout": 20}))
    assert run["status"] not in ("ready", "running"), run
    return run
