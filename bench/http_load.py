"""Load the HTTP service from a separate process and print a table.

    python bench/http_load.py [--runs 10000] [--streams 100] [--concurrency 32]
        [--durability normal|full] [--messages-only]

Starts ``tether serve`` (SQLite in a temporary folder at ``--durability``, no auth, embedded
worker) in its own process, then measures from this one (``--messages-only``: the messages per
second and their CPU only):

* sequential requests on one kept-alive connection (``httpx.Client``): ``GET /healthz`` and
  ``GET /v1/sessions/{id}`` on tether, beside ``GET /static`` on a minimal FastAPI app under
  plain uvicorn (started the same way, in its own process), alternating call by call;
* sessions created per second (POST /v1/sessions, `concurrency` requests in flight);
* runs per second end to end: POST a run (``echo``) and long-poll it to completion, each client
  with its own connection and session, until `runs` runs are done; then the server's resident
  memory. Beside it, the same workload on the in-process engine (``Service`` + ``Worker`` on one
  loop, another process, same concurrency, as many runs: a run's cost grows with its session,
  whose newest messages its context reads), the ceiling HTTP is compared with;
* messages per second: one client appending messages one after the other, then `writers`
  clients (from `writer-processes` processes) each appending to its own session;
* the delay from an event's commit (its ``created_at``) to its arrival at an SSE client, with
  `streams` session streams open, one message posted to each stream's session per round;
* CPU per operation on each side (the server's from ``/proc``, the clients' and the engine's from
  their own processes), and the ratios two cores allow at those costs (see "The goals left
  open" in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import httpx

LISTENING = "tether listening on "


def start_server(
    folder: Path, workers: int, durability: str = "normal"
) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "tether", "serve", "--no-auth", "--port", "0"]
    if durability != "normal":  # (a server without the option serves normal)
        command += ["--durability", durability]
    command += ["--db", str(folder / "bench.db"), "--workers", str(workers), "--no-access-log"]
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert server.stderr is not None
    for line in server.stderr:
        if line.startswith(LISTENING):
            # Keep reading what the server logs, so a full pipe never blocks it.
            threading.Thread(target=_echo, args=(server.stderr,), daemon=True).start()
            return server, line[len(LISTENING) :].split()[0]
    raise SystemExit("tether serve did not start")


def _echo(stream: IO[str]) -> None:
    for line in stream:
        if "WARNING" in line or "ERROR" in line or "Traceback" in line or "Error" in line:
            sys.stderr.write(f"[server] {line}")


MINIMAL_APP = """
from fastapi import FastAPI

app = FastAPI()


@app.get("/static")
def static() -> dict[str, bool]:
    return {"ok": True}
"""


def start_minimal(
    folder: Path, extra: str = "", env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """A minimal FastAPI app under plain uvicorn, in its own process (extra: more routes on
    its ``app``; env: more environment variables for it)."""
    (folder / "minimal_app.py").write_text(MINIMAL_APP + extra)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "uvicorn", "minimal_app:app", "--app-dir", str(folder)]
    command += ["--port", str(port), "--log-level", "info", "--no-access-log"]
    environment = {**os.environ, **(env or {})}
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=environment)
    assert server.stderr is not None
    for line in server.stderr:
        if "Uvicorn running on" in line:
            threading.Thread(target=_echo, args=(server.stderr,), daemon=True).start()
            return server, f"http://127.0.0.1:{port}"
    raise SystemExit("the minimal uvicorn app did not start")


def keep_alive(url: str, minimal: str, requests: int) -> dict[str, float]:
    """Median ms of sequential requests, each client on one kept-alive connection."""
    samples: dict[str, list[float]] = {"healthz": [], "session": [], "minimal": []}
    with httpx.Client(base_url=url) as tether, httpx.Client(base_url=minimal) as plain:
        session = tether.post("/v1/sessions", json={"title": "keep-alive"}).json()["id"]
        calls: dict[str, Callable[[], httpx.Response]] = {
            "healthz": lambda: tether.get("/healthz"),
            "session": lambda: tether.get(f"/v1/sessions/{session}"),
            "minimal": lambda: plain.get("/static"),
        }
        for i in range(requests + 20):
            for name, call in calls.items():
                started = time.perf_counter()
                call().raise_for_status()
                if i >= 20:  # warm-up
                    samples[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) * 1000 for name, values in samples.items()}


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def sessions_per_second(client: httpx.AsyncClient, seconds: float, concurrency: int) -> float:
    done = 0
    deadline = time.perf_counter() + seconds

    async def loop() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            (await client.post("/v1/sessions", json={"title": "bench"})).raise_for_status()
            done += 1

    started = time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(concurrency)))
    return done / (time.perf_counter() - started)


async def runs_end_to_end(url: str, total: int, concurrency: int) -> tuple[float, list[float]]:
    """runs/s of `concurrency` clients, each with its own ``httpx.AsyncClient`` (one kept-alive
    connection) and session: one pool of 32 connections would cost the load generator about three
    times the CPU, httpx's pool looking at each of its connections for every request."""
    remaining = total
    latencies: list[float] = []

    async def loop() -> None:
        nonlocal remaining
        async with httpx.AsyncClient(base_url=url, timeout=120) as client:
            session = (await client.post("/v1/sessions", json={"title": "runs"})).json()["id"]
            while remaining > 0:
                remaining -= 1
                started = time.perf_counter()
                created = await client.post(f"/v1/sessions/{session}/runs", json={"goal": "ping"})
                created.raise_for_status()
                run = created.json()["id"]
                waited = await client.get(f"/v1/runs/{run}/wait", params={"timeout": 60})
                assert waited.json()["status"] == "completed", waited.text
                latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(concurrency)))
    return total / (time.perf_counter() - started), latencies


async def engine_runs(
    folder: str, total: int, concurrency: int, workers: int, durability: str = "normal"
) -> tuple[float, float]:
    """runs/s of the in-process engine (the same create-and-wait workload, no HTTP), and its
    CPU seconds per run."""
    from tether.runtime.service import Service
    from tether.runtime.settings import RuntimeSettings
    from tether.runtime.worker import Worker
    from tether.store.sqlite.store import SqliteStore

    store = SqliteStore(Path(folder) / "engine.db", durability=durability)  # type: ignore[arg-type]
    settings = RuntimeSettings(concurrency=workers)
    service = Service(store, settings=settings)
    worker = Worker(store, service.agents, settings=settings, clock=service.clock)
    worker.start()
    remaining = total

    async def loop() -> None:
        nonlocal remaining
        session = (await service.create_session(title="runs")).id
        while remaining > 0:
            remaining -= 1
            run = await service.create_run(session, "ping", agent="echo")
            done = await service.wait_run(run.id, timeout=60)
            assert done.status.value == "completed", done

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(loop() for _ in range(concurrency)))
    rate = total / (time.perf_counter() - started)
    cpu = (time.process_time() - cpu) / total
    await worker.stop(grace=5)
    await store.close()
    return rate, cpu


def _engine_process(
    folder: str, total: int, concurrency: int, workers: int, durability: str
) -> tuple[float, float]:
    return asyncio.run(engine_runs(folder, total, concurrency, workers, durability))


def sequential_messages(url: str, seconds: float) -> tuple[float, int, float]:
    """messages/s of one client appending one message after the other; the messages; the
    client's CPU seconds per message."""
    with httpx.Client(base_url=url) as client:
        session = client.post("/v1/sessions", json={"title": "writer"}).json()["id"]
        done = 0
        started, cpu = time.perf_counter(), time.process_time()
        while time.perf_counter() - started < seconds:
            sent = client.post(
                f"/v1/sessions/{session}/messages", json={"role": "user", "content": "x" * 200}
            )
            sent.raise_for_status()
            done += 1
        rate = done / (time.perf_counter() - started)
        return rate, done, (time.process_time() - cpu) / done


async def _writers(url: str, writers: int, seconds: float, start_at: float) -> tuple[int, float]:
    """Each writer a client of its own (one kept-alive connection): one httpx pool shared by all
    would cost the load generator far more CPU per request than the server (it scans its
    connections on every request)."""
    clients = [httpx.AsyncClient(base_url=url, timeout=120) for _ in range(writers)]
    try:
        sessions = [
            (await client.post("/v1/sessions", json={"title": "writer"})).json()["id"]
            for client in clients
        ]
        await asyncio.sleep(max(0.0, start_at - time.time()))
        deadline = time.perf_counter() + seconds
        done, cpu = 0, time.process_time()

        async def write(client: httpx.AsyncClient, session: str) -> None:
            nonlocal done
            while time.perf_counter() < deadline:
                sent = await client.post(
                    f"/v1/sessions/{session}/messages",
                    json={"role": "user", "content": "x" * 200},
                )
                sent.raise_for_status()
                done += 1

        await asyncio.gather(*(write(c, s) for c, s in zip(clients, sessions, strict=True)))
        return done, time.process_time() - cpu
    finally:
        for client in clients:
            await client.aclose()


def _writer_process(url: str, writers: int, seconds: float, start_at: float) -> tuple[int, float]:
    return asyncio.run(_writers(url, writers, seconds, start_at))


def parallel_messages(
    url: str, writers: int, processes: int, seconds: float
) -> tuple[float, int, float]:
    """messages/s of `writers` clients at once, each on its own session, spread over processes
    (one process of httpx would measure its own CPU, not the server's); the messages; the
    clients' CPU seconds per message."""
    share = [writers // processes + (i < writers % processes) for i in range(processes)]
    start_at = time.time() + 3.0  # every process has made its sessions by then
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes) as pool:
        results = pool.starmap(_writer_process, [(url, n, seconds, start_at) for n in share])
    done = sum(n for n, _ in results)
    return done / seconds, done, sum(cpu for _, cpu in results) / done


async def sse_delays(url: str, streams: int, rounds: int) -> list[float]:
    limits = httpx.Limits(max_connections=streams + 16)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        sessions = [
            (await client.post("/v1/sessions", json={"title": "sse"})).json()["id"]
            for _ in range(streams)
        ]
        delays: list[float] = []
        arrived = [asyncio.Event() for _ in range(streams)]
        connected = [asyncio.Event() for _ in range(streams)]

        async def listen(index: int) -> None:
            path = f"/v1/sessions/{sessions[index]}/events"
            async with client.stream("GET", path) as response:
                async for line in response.aiter_lines():
                    if not line.startswith("data: "):
                        continue
                    now = datetime.now(UTC)
                    event = json.loads(line[6:])
                    if event["type"] == "session.created":
                        connected[index].set()
                    elif event["type"] == "message.added":
                        committed = datetime.fromisoformat(event["created_at"])
                        delays.append((now - committed).total_seconds())
                        arrived[index].set()

        listeners = [asyncio.create_task(listen(i)) for i in range(streams)]
        await asyncio.wait_for(asyncio.gather(*(c.wait() for c in connected)), 60)
        for _ in range(rounds):
            for event in arrived:
                event.clear()
            await asyncio.gather(
                *(
                    client.post(f"/v1/sessions/{s}/messages", json={"role": "user", "content": "x"})
                    for s in sessions
                )
            )
            await asyncio.wait_for(asyncio.gather(*(a.wait() for a in arrived)), 60)
        for task in listeners:
            task.cancel()
        await asyncio.gather(*listeners, return_exceptions=True)
        return delays


async def measure(
    args: argparse.Namespace, url: str, pid: int, engine: tuple[float, float]
) -> list[tuple[str, str]]:
    engine_rate, engine_cpu = engine
    limits = httpx.Limits(max_connections=args.concurrency + 8)
    rows: list[tuple[str, str]] = [("server RSS at start", f"{rss_mib(pid):.0f} MiB")]
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        rate = await sessions_per_second(client, args.seconds, args.concurrency)
        rows.append(("sessions created / s", f"{rate:,.0f}"))
        server_cpu, client_cpu = cpu_seconds(pid), time.process_time()
        rate, latencies = await runs_end_to_end(url, args.runs, args.concurrency)
        server_cpu = (cpu_seconds(pid) - server_cpu) / args.runs
        client_cpu = (time.process_time() - client_cpu) / args.runs
        rows.append((f"runs / s end to end (create + wait, {args.runs:,} runs)", f"{rate:,.0f}"))
        rows.append(
            (
                f"  in-process engine, same workload ({args.runs:,} runs); HTTP / engine",
                f"{engine_rate:,.0f}; {rate / engine_rate:.2f}",
            )
        )
        rows.append(("run latency p50 / p99 (create → completed seen)", _ms(latencies)))
        rows.append(
            (
                "CPU per run: server; client (one process); in-process engine",
                f"{server_cpu * 1000:.2f} ms; {client_cpu * 1000:.2f} ms; "
                f"{engine_cpu * 1000:.2f} ms",
            )
        )
        busiest = max(server_cpu, client_cpu, (server_cpu + client_cpu) / 2)
        rows.append(
            (
                "  HTTP / engine two cores allow: engine / max(server, client, sum / 2)",
                f"{engine_cpu / busiest:.2f}",
            )
        )
        rows.append((f"server RSS after {args.runs:,} runs", f"{rss_mib(pid):.0f} MiB"))
    delays = await sse_delays(url, args.streams, args.rounds)
    rows.append(
        (
            f"SSE commit → client delay p50 / p99 ({args.streams} streams, {len(delays):,} events)",
            _ms(delays),
        )
    )
    rows.append(("server RSS at the end", f"{rss_mib(pid):.0f} MiB"))
    return rows


def _runs_and_streams(
    args: argparse.Namespace, folder: str, url: str, pid: int
) -> list[tuple[str, str]]:
    """The rows of the runs (beside the in-process engine's) and of the SSE streams."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        engine = pool.apply(
            _engine_process,
            (folder, args.runs, args.concurrency, args.workers, args.durability),
        )
    return asyncio.run(measure(args, url, pid, engine))


def _ms(values: list[float]) -> str:
    return f"{percentile(values, 50) * 1000:.1f} ms / {percentile(values, 99) * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500, help="keep-alive requests of each")
    parser.add_argument("--writers", type=int, default=64, help="clients appending at once")
    parser.add_argument("--writer-processes", type=int, default=4)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=20, help="messages per SSE stream")
    parser.add_argument("--concurrency", type=int, default=32, help="requests in flight")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of the sessions test")
    parser.add_argument("--workers", type=int, default=8, help="tether serve --workers")
    parser.add_argument("--durability", choices=("normal", "full"), default="normal")
    parser.add_argument("--messages-only", action="store_true", help="only messages / s")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        minimal, minimal_url = start_minimal(Path(folder))
        server, url = start_server(Path(folder), args.workers, args.durability)
        try:
            times = {} if args.messages_only else keep_alive(url, minimal_url, args.requests)
            minimal.terminate()
            minimal.wait(30)
            served = cpu_seconds(server.pid)
            alone, count, client_alone = sequential_messages(url, args.seconds)
            server_alone = (cpu_seconds(server.pid) - served) / count
            served = cpu_seconds(server.pid)
            together, count, client_together = parallel_messages(
                url, args.writers, args.writer_processes, args.seconds
            )
            server_together = (cpu_seconds(server.pid) - served) / count
            rows = [] if args.messages_only else _runs_and_streams(args, folder, url, server.pid)
        finally:
            if minimal.poll() is None:
                minimal.terminate()
                minimal.wait(30)
            server.terminate()
            server.wait(30)
    # 64 clients at most this many appends a second; one client at most 1 / its own costs.
    bound = min(1 / server_together, 2 / (server_together + client_together))
    inserted = (
        [
            ("keep-alive GET /healthz, median", f"{times['healthz']:.2f} ms"),
            ("keep-alive GET /v1/sessions/{id}, median", f"{times['session']:.2f} ms"),
            (
                "keep-alive GET /static, minimal FastAPI on uvicorn; session / static",
                f"{times['minimal']:.2f} ms; {times['session'] / times['minimal']:.2f}",
            ),
        ]
        if times
        else []
    )
    inserted += [
        ("messages / s, one client, one after the other", f"{alone:,.0f}"),
        (
            f"messages / s, {args.writers} clients on {args.writers} sessions; x one client",
            f"{together:,.0f}; {together / alone:.2f}",
        ),
        (
            f"CPU per append: server, client (one client); server, clients ({args.writers})",
            f"{server_alone * 1000:.2f}, {client_alone * 1000:.2f} ms; "
            f"{server_together * 1000:.2f}, {client_together * 1000:.2f} ms",
        ),
        (
            "  x one client two cores allow: min(1 / server, 2 / sum) x one client's sum",
            f"{bound * (server_alone + client_alone):.2f}",
        ),
    ]
    rows[1:1] = inserted
    width = max(len(name) for name, _ in rows)
    print(
        f"\nHTTP service: tether serve (SQLite at {args.durability}, {args.workers} worker "
        f"slots), load from another process, {args.concurrency} requests in flight; "
        f"{os.cpu_count()} CPUs"
    )
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")


if __name__ == "__main__":
    main()
