"""How the HTTP service answers while another process holds SQLite's write lock (issue 12, §3).

    python bench/lock_wait.py [--hold 8] [--probe-every 0.1]

Starts ``tether serve`` (SQLite in a temporary folder, no auth) in its own process and opens an
SSE stream with a heartbeat every 0.2 s. Then another process takes the database's write lock
(``BEGIN IMMEDIATE``) and keeps it for ``--hold`` seconds, while this one sends one write
(``POST /v1/sessions``, which has to wait for the lock) and probes ``GET /healthz`` every
``--probe-every`` seconds. It prints the ``/healthz`` latencies measured while the lock was held,
the longest gap between SSE heartbeats, and how the write ended.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

LISTENING = "tether listening on "
HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("ROLLBACK")
print("released", flush=True)
"""


def start_server(db: Path) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "tether", "serve", "--no-auth", "--port", "0"]
    command += ["--db", str(db), "--no-access-log", "--heartbeat-seconds", "0.2"]
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert server.stderr is not None
    for line in server.stderr:
        if line.startswith(LISTENING):
            threading.Thread(target=server.stderr.read, daemon=True).start()
            return server, line[len(LISTENING) :].split()[0]
    raise SystemExit("tether serve did not start")


def heartbeats(
    url: str, session_id: str, gaps: list[float], beating: threading.Event, stop: threading.Event
) -> None:
    """Record the time between consecutive heartbeats (beating is set at the first one) until
    stop is set."""
    with (
        httpx.Client(timeout=None) as client,
        client.stream("GET", f"{url}/v1/sessions/{session_id}/events") as response,
    ):
        last = time.monotonic()
        for line in response.iter_lines():
            now = time.monotonic()
            if line.startswith(":"):
                gaps.append(now - last)
                last = now
                beating.set()
            if stop.is_set():
                return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hold", type=float, default=8.0, help="seconds the lock is held")
    parser.add_argument("--probe-every", type=float, default=0.1, help="seconds between probes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.db"
        server, url = start_server(db)
        try:
            with httpx.Client(base_url=url, timeout=60) as client:
                session_id = client.post("/v1/sessions", json={}).json()["id"]
                gaps: list[float] = []
                beating, stop = threading.Event(), threading.Event()
                threading.Thread(
                    target=heartbeats, args=(url, session_id, gaps, beating, stop), daemon=True
                ).start()
                assert beating.wait(30), "the SSE stream sent no heartbeat"

                holder = subprocess.Popen(
                    [sys.executable, "-c", HOLDER, str(db), str(args.hold)],
                    stdout=subprocess.PIPE,
                    text=True,
                )
                assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
                held_from = time.monotonic()
                gaps.clear()
                outcome: list[str] = []

                def write() -> None:
                    started = time.monotonic()
                    with httpx.Client(base_url=url, timeout=60) as writer:
                        answer = writer.post("/v1/sessions", json={"title": "waits"})
                    took = time.monotonic() - started
                    outcome.append(f"{answer.status_code} after {took:.2f} s")

                writing = threading.Thread(target=write)
                writing.start()
                latencies: list[float] = []
                while holder.poll() is None:  # every probe sent while the lock is held
                    started = time.monotonic()
                    assert client.get("/healthz").status_code == 200
                    latencies.append(time.monotonic() - started)
                    time.sleep(args.probe_every)
                held = time.monotonic() - held_from
                writing.join()
                stop.set()
        finally:
            server.terminate()
            server.wait(30)
    print(f"lock held {held:.2f} s by another process; one write waited for it")
    print(
        f"/healthz while held: n={len(latencies)}"
        f" median={statistics.median(latencies) * 1000:.1f} ms"
        f" max={max(latencies) * 1000:.1f} ms"
        if latencies
        else "/healthz while held: no probe"
    )
    print(
        f"SSE heartbeat (every 0.2 s): longest gap {max(gaps) * 1000:.0f} ms"
        if gaps
        else "SSE heartbeat (every 0.2 s): none arrived from the lock on"
    )
    print(f"the write: {outcome[0]}")


if __name__ == "__main__":
    main()
