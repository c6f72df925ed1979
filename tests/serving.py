"""A real ``tether serve`` for the tests that talk to one (HTTP, browser, LangGraph client):
127.0.0.1, port 0, a temporary database, keys made beforehand as ``tether keys create`` makes
them (in this process: a command per key would cost a start-up each); a TCP proxy whose
connections can be cut. Waiting on observable state is tests/waiting.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pytest

from tether.runtime.api_keys import ApiKeys
from tether.store.factory import open_store

TETHER = [sys.executable, "-m", "tether"]
LISTENING = "tether listening on "


def cli(
    *args: str | Path, env: Mapping[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run the tether command (with env added to this environment); its exit code, stdout
    and stderr."""
    return subprocess.run(
        [*TETHER, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


@dataclass
class Served:
    """A running ``tether serve`` process, its database and the API keys made for it."""

    process: subprocess.Popen[str]
    db: Path
    keys: dict[str, str]
    url: str = ""
    log: list[str] = field(default_factory=list)

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


S = TypeVar("S", bound=Served)


def make_keys(db: Path | str, owners: tuple[str, ...]) -> dict[str, str]:
    """A new API key per owner in db (created and migrated if new): {owner: secret}."""

    async def main() -> dict[str, str]:
        store = open_store(str(db))
        try:
            keys = ApiKeys(store)
            return {owner: (await keys.create(owner))[1] for owner in owners}
        finally:
            await store.close()

    with ThreadPoolExecutor(1) as pool:  # a loop may be running on this thread (Playwright's)
        return pool.submit(asyncio.run, main()).result()


def serve(
    kind: type[S],
    db: Path,
    *args: str,
    owners: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
    url: str | None = None,
) -> S:
    """Make a key per owner, then serve db, or the database at url (PostgreSQL), with args
    (the process gets env, else this environment) until it listens."""
    database = url or str(db)
    keys = make_keys(database, owners) if owners else {}
    process = subprocess.Popen(
        [*TETHER, "serve", "--port", "0", "--db", database, "--no-access-log", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(env) if env is not None else None,
    )
    server = kind(process, db, keys)
    ready = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        with process.stderr:
            for line in process.stderr:
                server.log.append(line)
                url = listening_url(line)
                if url:
                    server.url = url
                    ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(30) or not server.url:
        server.stop()
        pytest.fail("tether serve did not start:\n" + "".join(server.log))
    return server


def listening_url(line: str) -> str | None:
    """The URL a server's "listening" line names (a text line, or a JSON log line with
    ``--log-format json``), else None."""
    if line.startswith("{"):
        with contextlib.suppress(ValueError):
            line = str(json.loads(line).get("message", ""))
    if line.startswith(LISTENING):
        return line[len(LISTENING) :].split()[0]
    return None


class Proxy:
    """A TCP proxy in front of the server whose connections can be cut, to drop streams.

    Every socket it opens is closed by ``cut`` or ``close`` (one accepted while the proxy
    closes is closed at once), and ``close`` waits for its threads: nothing is left for the
    garbage collector to find unclosed (a ResourceWarning in whatever test runs next)."""

    def __init__(self, target: str) -> None:
        host, port = target.removeprefix("http://").split(":")
        self._target = (host, int(port))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        #: Connections accepted so far.
        self.connections = 0
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._target)
            except OSError:
                downstream.close()
                continue
            with self._lock:
                if self._closed:
                    downstream.close()
                    upstream.close()
                    return
                self.connections += 1
                self._open += [downstream, upstream]
                for source, sink in ((downstream, upstream), (upstream, downstream)):
                    pump = threading.Thread(target=self._pump, args=(source, sink), daemon=True)
                    self._threads.append(pump)
                    pump.start()

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
        """Stop accepting, drop every connection, and wait for the proxy's threads to end."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self._listener.close()
        self.cut()
        for thread in threads:
            thread.join(10)
