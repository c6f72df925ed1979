"""Every benchmark under bench/ still runs and prints its tables, at a tiny size. Nothing is
timed here: the figures belong to `make bench` (docs/benchmarks.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.pg import ADMIN_URL, require_server

BENCH = Path(__file__).resolve().parents[2] / "bench"

SMALL = {
    "store_append.py": (
        "--sizes 100,200 --durability normal,full --iterations 20 --full-iterations 10"
        " --round 10 --context-every 2",
        ["durability=normal", "durability=full", "add_message", "record_step", "assemble_context"],
    ),
    "append_floor.py": (
        "--history 100 --iterations 20 --warmup 5",
        ["bare", "shipped", "leanest, no event", "frames / commit"],
    ),
    "conversation.py": (
        "--history 300 --tail 20 --batch 10 --rounds 5 --whole-rounds 2 --warmup 1",
        ["messages.tail(20)", "messages.list()", "add_many, per message", "tether.open_async"],
    ),
    "engine.py": (
        "--runs 20 --parallel-runs 20 --rounds 1 --breakdown-runs 5 --warmup 2 --clients 4",
        ["runs", "Where the time goes", "record_step", "claim_run"],
    ),
    "http_load.py": (
        "--runs 20 --streams 4 --rounds 1 --seconds 1 --requests 5 --writers 4"
        " --writer-processes 2",
        [
            "keep-alive GET /static",
            "sessions created / s",
            "runs / s end to end",
            "in-process engine",
            "messages / s, 4 clients",
            "SSE commit",
            "server RSS",
        ],
    ),
    "http_reads.py": (
        "--history 120 --tail 20 --rounds 3 --whole-rounds 1 --warmup 1"
        " --sessions 30 --list-rounds 1",
        [
            "?order=desc&limit=20",
            "&before=61",
            "pages of 1000",
            "30 sessions",
            "tether.connect",
            "GET /healthz",
        ],
    ),
    "asgi_requests.py": (
        "--requests 20 --rounds 1 --history 500",
        ["POST /v1/sessions/{id}/messages", "GET /v1/runs/{id}/wait", "minimal app: GET"],
    ),
    "peers.py": (
        "--quick",
        ["append one message", "the newest 50", "whole conversation", "tether library"],
    ),
    "langgraph_threads.py": (
        "--sizes 3,6 --repeat 1",
        ["owner's threads", "search status=idle", "count status=idle"],
    ),
    "run_storage.py": (
        "--runs 5",
        ["run events", "the context it started from", "beyond its steps"],
    ),
    "lock_wait.py": (
        "--hold 1 --probe-every 0.05",
        ["lock held", "/healthz while held", "SSE heartbeat", "the write: 201"],
    ),
    "telemetry.py": (
        "--runs 10 --rounds 1",
        ["CPU per run", "metrics", "tracing", "both"],
    ),
    "postgres.py": (
        "--runs 12 --sessions 3 --processes 1,2 --sizes 100 --iterations 10",
        ["sqlite embedded", "postgres, 1 worker", "postgres, 2 worker", "add_message"],
    ),
    "pg_statements.py": ("--runs 2", ["worker     statements per run", "submitter"]),
}
#: The scripts that need the PostgreSQL server (given --admin-url).
ON_POSTGRES = frozenset({"postgres.py", "pg_statements.py"})


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SMALL))
def test_the_benchmark_runs_and_prints_its_tables(script: str, tmp_path: Path) -> None:
    if script in ON_POSTGRES:
        require_server()
    args, expected = SMALL[script]
    if script in ON_POSTGRES:
        args += f" --admin-url {ADMIN_URL}"
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args.split()],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    for text in expected:
        assert text in done.stdout, f"{text!r} missing from:\n{done.stdout[-3000:]}"
