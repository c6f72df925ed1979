"""Load the HTTP service from a separate process and print a table.

    python bench/http_load.py [--runs 10000] [--streams 100] [--concurrency 32]

Starts ``tether serve`` (SQLite in a temporary folder, no auth, embedded worker) in its own
process, then measures from this one:

* sessions created per second (POST /v1/sessions, `concurrency` requests in flight);
* runs per second end to end: POST a run (``echo``) and long-poll it to completion, each client
  on its own session, until `runs` runs are done; then the server's resident memory;
* the delay from an event's commit (its ``created_at``) to its arrival at an SSE client, with
  `streams` session streams open, one message posted to each stream's session per round.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import httpx

LISTENING = "tether listening on "


def start_server(folder: Path, workers: int) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "tether", "serve", "--no-auth", "--port", "0"]
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


async def runs_end_to_end(
    client: httpx.AsyncClient, total: int, concurrency: int
) -> tuple[float, list[float]]:
    remaining = total
    latencies: list[float] = []

    async def loop() -> None:
        nonlocal remaining
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


async def measure(args: argparse.Namespace, url: str, pid: int) -> list[tuple[str, str]]:
    limits = httpx.Limits(max_connections=args.concurrency + 8)
    rows: list[tuple[str, str]] = [("server RSS at start", f"{rss_mib(pid):.0f} MiB")]
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        rate = await sessions_per_second(client, args.seconds, args.concurrency)
        rows.append(("sessions created / s", f"{rate:,.0f}"))
        rate, latencies = await runs_end_to_end(client, args.runs, args.concurrency)
        rows.append((f"runs / s end to end (create + wait, {args.runs:,} runs)", f"{rate:,.0f}"))
        rows.append(("run latency p50 / p99 (create → completed seen)", _ms(latencies)))
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


def _ms(values: list[float]) -> str:
    return f"{percentile(values, 50) * 1000:.1f} ms / {percentile(values, 99) * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=20, help="messages per SSE stream")
    parser.add_argument("--concurrency", type=int, default=32, help="requests in flight")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of the sessions test")
    parser.add_argument("--workers", type=int, default=8, help="tether serve --workers")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        server, url = start_server(Path(folder), args.workers)
        try:
            rows = asyncio.run(measure(args, url, server.pid))
        finally:
            server.terminate()
            server.wait(30)
    width = max(len(name) for name, _ in rows)
    print(
        f"\nHTTP service: tether serve (SQLite, {args.workers} worker slots), load from another "
        f"process, {args.concurrency} requests in flight; {os.cpu_count()} CPUs"
    )
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")


if __name__ == "__main__":
    main()
