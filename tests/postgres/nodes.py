"""``tether serve`` and ``tether worker`` processes for the multi-node tests and the benchmark."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from tests.waiting import eventually_sync

_LISTENING = re.compile(r"tether listening on (http://\S+)")


class Node:
    """One tether process, its output in a log file."""

    def __init__(self, name: str, args: list[str], logs: Path) -> None:
        logs.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.log_path = logs / f"{name}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
        with self.log_path.open("w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tether", *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to hand anything back."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, and the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=10)


class Server(Node):
    """``tether serve --no-auth`` on a free loopback port, without an embedded worker."""

    def __init__(self, name: str, db: str, logs: Path, *, workers: int = 0) -> None:
        args = ["serve", "--no-auth", "--port", "0", "--db", db, "--workers", str(workers)]
        super().__init__(name, [*args, "--no-access-log"], logs)
        self.url = self._wait_for_url()

    def _wait_for_url(self) -> str:
        def url() -> str | None:
            found = _LISTENING.search(self.output())
            if found:
                return found.group(1)
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.name} did not start:\n{self.output()}")
            return None

        return eventually_sync(url, what=f"{self.name} to listen")


class WorkerNode(Node):
    """``tether worker``."""

    def __init__(
        self, name: str, db: str, logs: Path, *, concurrency: int = 8, lease: float = 3.0
    ) -> None:
        args = ["worker", "--db", db, "--concurrency", str(concurrency)]
        super().__init__(name, [*args, "--lease-seconds", str(lease), "--grace-seconds", "1"], logs)

    def holds(self, worker_id: str | None) -> bool:
        """True when a run's holder id names this process (ids are host:pid:random/claim)."""
        return worker_id is not None and f":{self.pid}:" in worker_id
