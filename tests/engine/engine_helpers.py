"""Helpers of the execution-engine tests (tests/engine; fixtures are in its conftest.py).

* ``Engine``: a SQLite file, a Service and in-process workers, with fast settings.
* ``WorkerProcess``: ``tether worker`` in a subprocess, importing ``engine_agents``.
* ``wait_status`` / ``wait_step``: wait for a run's state with tests/waiting.py's ``eventually``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

from tests.engine import engine_agents
from tests.waiting import WAIT, eventually
from tether.core.event import Event
from tether.core.run import Run
from tether.core.status import RunStatus
from tether.runtime.agent import AgentRegistry
from tether.runtime.executor import ModelResolver
from tether.runtime.service import Service
from tether.runtime.settings import RuntimeSettings
from tether.runtime.worker import Worker
from tether.store.sqlite.store import SqliteStore

HERE = Path(__file__).resolve().parent
T = TypeVar("T")


FAST = RuntimeSettings(
    lease_seconds=2.0,
    poll_interval=0.05,
    watch_interval=0.05,
    reap_interval=0.1,
    shutdown_grace=1.0,
)


# -- waiting on observable state ---------------------------------------------------------------


async def run_status(service: Service, run_id: str, *statuses: RunStatus) -> Run | None:
    run = await service.get_run(run_id)
    return run if run.status in statuses else None


async def wait_status(
    service: Service, run_id: str, *statuses: RunStatus, timeout: float = WAIT
) -> Run:
    """The run once it has one of statuses."""
    return await eventually(
        lambda: run_status(service, run_id, *statuses),
        timeout=timeout,
        what=f"run {run_id} to be {'/'.join(s.value for s in statuses)}",
    )


async def wait_step(
    service: Service, run_id: str, name: str, status: str = "running", timeout: float = WAIT
) -> Any:
    """The run's step called name once it has status."""

    async def probe() -> Any:
        for step in await service.list_steps(run_id):
            if step.name == name and step.status.value == status:
                return step
        return None

    return await eventually(probe, timeout=timeout, what=f"step {name} of {run_id} {status}")


# -- in-process engine ------------------------------------------------------------------------


class Engine:
    """One SQLite file, a Service over it and any number of in-process workers."""

    def __init__(
        self,
        path: Path,
        *,
        settings: RuntimeSettings = FAST,
        agents: AgentRegistry | None = None,
        models: ModelResolver | None = None,
    ) -> None:
        self.path = path
        self.settings = settings
        self.agents = agents or engine_agents.registry()
        self.models = models
        self.store = SqliteStore(path)
        self.service = Service(self.store, agents=self.agents, settings=settings, models=models)
        self.workers: list[Worker] = []
        self._extra_stores: list[SqliteStore] = []

    def worker(self, *, own_store: bool = False, reap: bool = True, **overrides: Any) -> Worker:
        """Start a worker (on this engine's store, or on its own connection to the file);
        overrides change its RuntimeSettings."""
        store = self.store
        if own_store:
            store = SqliteStore(self.path)
            self._extra_stores.append(store)
        worker = Worker(
            store,
            self.agents,
            settings=replace(self.settings, **overrides),
            models=self.models,
            reap=reap,
        )
        worker.start()
        self.workers.append(worker)
        return worker

    async def stop_workers(self, grace: float = 0.0) -> None:
        for worker in self.workers:
            await worker.stop(grace)
        self.workers.clear()

    async def close(self) -> None:
        await self.stop_workers()
        for store in self._extra_stores:
            await store.close()
        await self.store.close()

    async def __aenter__(self) -> Engine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def events(self, session_id: str) -> list[Event]:
        """Every event of the session, oldest first."""
        found: list[Event] = []
        after = None
        while True:
            page = await self.service.list_events(session_id=session_id, after_id=after)
            found.extend(page)
            if len(page) < 500:
                return found
            after = page[-1].id


# -- a worker in another process --------------------------------------------------------------


class WorkerProcess:
    """``tether worker`` in a subprocess, with the engine test agents."""

    def __init__(
        self,
        db: Path,
        logs: Path,
        *,
        concurrency: int = 2,
        lease_seconds: float = 2.0,
        grace_seconds: float = 3.0,
        env: dict[str, str] | None = None,
    ) -> None:
        logs.mkdir(parents=True, exist_ok=True)
        self.log_path = logs / f"worker-{time.monotonic_ns()}.log"
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("TETHER_", "PYTHONPATH"))}
        path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from tether.cli.main import main; main()",
                "worker",
                "--db",
                str(db),
                "--concurrency",
                str(concurrency),
                "--lease-seconds",
                str(lease_seconds),
                "--grace-seconds",
                str(grace_seconds),
                "--agents",
                "engine_agents",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**clean, "PYTHONPATH": path, **(env or {})},
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def holds(self, run: Run) -> bool:
        """True when this process holds the run's lease (worker ids are host:pid:random)."""
        return run.worker_id is not None and f":{self.pid}:" in run.worker_id

    def output(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def terminate(self) -> None:
        self.proc.send_signal(signal.SIGTERM)

    async def exited(self, timeout: float = WAIT) -> int:
        """The exit code, once the process has exited."""
        await eventually(
            lambda: self.proc.poll() is not None,
            timeout=timeout,
            every=0.05,
            what=f"worker process {self.pid} to exit",
        )
        return self.proc.returncode

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._log.close()


async def in_threads(path: Path, jobs: list[Callable[[Service], Awaitable[T]]]) -> list[T]:
    """Run each job at the same moment in its own thread, on its own connection to the file
    (what separate processes or API nodes do); their results in order."""
    barrier = threading.Barrier(len(jobs))

    def thread_main(job: Callable[[Service], Awaitable[T]]) -> T:
        async def main() -> T:
            store = SqliteStore(path)
            try:
                service = Service(store, agents=engine_agents.registry(), settings=FAST)
                barrier.wait(timeout=WAIT)
                return await job(service)
            finally:
                await store.close()

        return asyncio.run(main())

    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        return list(
            await asyncio.gather(*(loop.run_in_executor(pool, thread_main, j) for j in jobs))
        )


# -- a fake OpenAI-compatible server ---------------------------------------------------------


@dataclass
class Reply:
    """One scripted answer of the fake server."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Received:
    """One request the fake server got."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


def completion(
    content: str | None = None,
    *,
    tool_calls: Sequence[tuple[str, str, dict[str, Any]]] = (),
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    model: str = "fake-model",
) -> Reply:
    """A chat.completion answer; tool calls as (id, name, arguments), sent as JSON strings."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for call_id, name, arguments in tool_calls
        ]
    return Reply(
        body={
            "id": f"chatcmpl-{time.monotonic_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if tool_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


def streamed_completion(
    *pieces: str,
    tool_calls: Sequence[tuple[str, str, dict[str, Any]]] = (),
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
) -> Reply:
    """A ``stream: true`` answer as OpenAI sends it: Server-Sent Events, one chunk per piece of
    text, each tool call in two chunks (its name, then its arguments in two halves), a last
    chunk with the usage, then ``[DONE]``."""
    chunks: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    chunks += [{"content": piece} for piece in pieces]
    for index, (call_id, name, arguments) in enumerate(tool_calls):
        text = json.dumps(arguments)
        half = len(text) // 2
        chunks.append(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": text[:half]},
                    }
                ]
            }
        )
        chunks.append({"tool_calls": [{"index": index, "function": {"arguments": text[half:]}}]})
    frames = []
    for i, delta in enumerate(chunks):
        last = i == len(chunks) - 1
        finish = ("tool_calls" if tool_calls else "stop") if last else None
        body = {
            "id": "chatcmpl-s",
            "object": "chat.completion.chunk",
            "model": "fake-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        frames.append(f"data: {json.dumps(body)}\n\n")
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
    frames.append(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n")
    frames.append("data: [DONE]\n\n")
    return Reply(body="".join(frames), headers={"Content-Type": "text/event-stream"})


def provider_error(status: int, message: str, **headers: str) -> Reply:
    """An error answer shaped like OpenAI's."""
    return Reply(
        status=status,
        body={"error": {"message": message, "type": "invalid_request_error", "code": None}},
        headers=headers,
    )


class FakeOpenAI:
    """``POST /v1/chat/completions`` on 127.0.0.1 (ephemeral port), answering from a script
    and recording every request."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.received: list[Received] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw.decode(errors="replace")
                with fake._lock:
                    fake.received.append(
                        Received(
                            "POST",
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            body,
                        )
                    )
                    if self.path != "/v1/chat/completions":
                        reply = provider_error(404, f"no route {self.path}")
                    elif fake.replies:
                        reply = fake.replies.pop(0)
                    else:
                        reply = provider_error(500, "the fake server ran out of replies")
                streamed = isinstance(reply.body, str)  # Server-Sent Events, as they are
                data = reply.body.encode() if streamed else json.dumps(reply.body).encode()
                self.send_response(reply.status)
                if not streamed:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=10)


def active_overlaps(events: list[Event]) -> list[tuple[str, str]]:
    """Replay run lifecycle events of one session; pairs (active run, run that started while it
    was active). A run is active from run.started/run.resumed until it waits no more, ends or is
    handed back."""
    active: str | None = None
    overlaps: list[tuple[str, str]] = []
    ending = {
        "run.completed",
        "run.failed",
        "run.timed_out",
        "run.cancelled",
        "run.requeued",
    }
    for event in events:
        if event.type in ("run.started", "run.resumed"):
            if active is not None and active != event.run_id:
                overlaps.append((active, event.run_id or ""))
            active = event.run_id
        elif event.type in ending and event.run_id == active:
            active = None
    return overlaps
