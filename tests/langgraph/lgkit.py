"""Helpers of the LangGraph-compatibility tests: a real ``tether serve`` on 127.0.0.1 (port 0,
temporary database, keys made by ``tether keys create``), clients for it, and waiting on
observable state with a deadline (never a fixed sleep)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.client import LangGraphClient, SyncLangGraphClient

T = TypeVar("T")
TETHER = [sys.executable, "-m", "tether"]
LISTENING = "tether listening on "
#: A thread id nobody has.
MISSING = "0c6f5d2e-0000-4000-8000-000000000000"


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TETHER, *map(str, args)], capture_output=True, text=True, timeout=60, check=False
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
    """A running ``tether serve``."""

    process: subprocess.Popen[str]
    keys: dict[str, str]
    url: str = ""
    log: list[str] = field(default_factory=list)

    def sdk(self, owner: str = "alice", *, key: str | None = None) -> SyncLangGraphClient:
        """The official sync client, with owner's key (sent as x-api-key)."""
        return get_sync_client(url=self.url, api_key=key or self.keys[owner])

    def async_sdk(self, owner: str = "alice") -> LangGraphClient:
        return get_client(url=self.url, api_key=self.keys[owner])

    def native(self, owner: str = "alice") -> httpx.Client:
        """A plain client of the native /v1 API (Authorization: Bearer)."""
        headers = {"Authorization": f"Bearer {self.keys[owner]}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def raw(self, owner: str = "alice") -> httpx.Client:
        """A plain client sending x-api-key, for what the SDK does not show (headers, bytes)."""
        return httpx.Client(base_url=self.url, headers={"x-api-key": self.keys[owner]}, timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(20)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


def start_server(folder: Path, owners: tuple[str, ...] = ("alice", "bob")) -> Server:
    db = folder / "tether.db"
    keys = {}
    for owner in owners:
        made = cli("keys", "create", "--owner", owner, "--db", db)
        assert made.returncode == 0, made.stderr
        keys[owner] = made.stdout.strip()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY")
    }
    process = subprocess.Popen(
        [*TETHER, "serve", "--port", "0", "--db", str(db), "--no-access-log"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
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


def user(text: str) -> dict[str, Any]:
    """A user message as LangGraph callers write it."""
    return {"role": "user", "content": text}


def contents(values: dict[str, Any]) -> list[tuple[str, str]]:
    """(type, content) of the messages in a thread's values."""
    return [(m["type"], m["content"]) for m in values.get("messages", [])]
