"""Durability across a process restart: what one process committed, another reads back equal,
and carries on from (sequences continue, a waiting run resumes)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.contract.durability_script import snapshot
from tests.support import LEASE_SECONDS, Backend, Factory
from tether.core.clock import ManualClock
from tether.core.memory import MemoryScope
from tether.core.status import RunStatus, SessionStatus
from tether.store.base import Store

ROOT = Path(__file__).resolve().parents[2]


def _write_in_another_process(url: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.contract.durability_script", url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.fixture
def reopen(backend: Backend, db_url: str, loop: asyncio.AbstractEventLoop) -> Iterator[Reopen]:
    """Opens the database again in this process (after the writer died), closed at the end."""
    opened: list[Store] = []

    def open_again() -> Store:
        opened.append(backend.open(db_url))
        return opened[-1]

    yield open_again
    for store in opened:
        loop.run_until_complete(store.close())


Reopen = Callable[[], Store]


async def test_everything_written_by_a_killed_process_reads_back_equal(
    db_url: str, reopen: Reopen
) -> None:
    written = _write_in_another_process(db_url)  # creates the database, writes, is killed
    ids = written["ids"]

    store = reopen()
    seen = await snapshot(store, ids)

    assert seen == written["snapshot"]
    # Not just two empty lists agreeing: the history is all there.
    main, closed = seen["sessions"]
    assert main["session"]["status"] == "active"
    assert closed["session"]["status"] == "closed"
    assert [r["status"] for r in main["runs"]] == ["completed", "waiting", "ready"]
    assert [r["seq"] for r in main["runs"]] == [1, 2, 3]
    analyse = ids["runs"][0]
    assert [s["kind"] for s in main["steps"][analyse]] == ["tool_call", "model_call", "message"]
    assert main["steps"][analyse][1]["usage"]["input_tokens"] == 120
    assert main["runs"][0]["usage"]["input_tokens"] == 120
    assert main["session"]["usage"]["requests"] == 1
    assert [m["content"] for m in main["messages"]] == [
        "First find out why the tests fail.",
        "requests is missing",
    ]
    assert [(i["key"], i["source_run_id"]) for i in main["session_memory"]] == [
        ("hypothesis", analyse)
    ]
    assert [i["key"] for i in main["run_memory"][analyse]] == ["hypothesis"]
    assert [t["name"] for t in main["tool_calls"]] == ["run_command"]
    assert [i["namespace"] for i in seen["user_memory"]] == [["prefs"]]
    assert len(main["events"]) >= 15
    ids_in_log = [e["id"] for e in main["events"]]
    assert ids_in_log == sorted(ids_in_log)


async def test_a_reopened_database_carries_on(db_url: str, reopen: Reopen) -> None:
    written = _write_in_another_process(db_url)
    store = reopen()
    session_id = written["ids"]["sessions"][0]
    analyse, waiting_id, queued_id = written["ids"]["runs"]
    # The writer's manual clock started here too; move on a little.
    clock = ManualClock()
    clock.advance(60)
    make = Factory(store, clock)

    message = await make.message(session_id, "OK, fix it the way you proposed.")
    assert message.seq == 3

    resumed = await store.resume_run(waiting_id, owner=None, now=clock.now(), input="yes")
    assert resumed.status is RunStatus.RUNNING
    claimed = await store.claim_run(worker_id="w2", now=clock.now(), lease_seconds=LEASE_SECONDS)
    assert claimed is not None and claimed.id == waiting_id
    await store.finish_run(waiting_id, worker_id="w2", status=RunStatus.COMPLETED, now=clock.now())
    nxt = await store.claim_run(worker_id="w2", now=clock.now(), lease_seconds=LEASE_SECONDS)
    assert nxt is not None and nxt.id == queued_id

    fourth = await make.run(session_id)
    assert fourth.seq == 4
    promoted = await store.promote_memory(
        run_id=analyse, key="hypothesis", owner=None, now=clock.now(), as_key="again"
    )
    assert promoted.source_run_id == analyse
    session = await store.get_session(session_id)
    assert session is not None and session.status is SessionStatus.ACTIVE
    assert session.run_count == 4
    items = await store.list_memory(scope=MemoryScope.SESSION, scope_id=session_id)
    assert {i.key for i in items} == {"hypothesis", "again"}
