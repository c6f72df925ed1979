"""Write a bit of everything into a tether database, print what a reader sees, and die.

Run as ``python -m tests.contract.durability_script <url>`` (from the repository root). The
process ends with ``os._exit`` without closing the store, like a process that is killed: what it
committed must be there when the database is opened again.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from tests.support import WORKER, Factory
from tether.core.clock import ManualClock
from tether.core.memory import MemoryScope
from tether.core.message import Role
from tether.core.run import ErrorInfo
from tether.core.serde import to_data
from tether.core.status import RunStatus, StepStatus
from tether.core.step import StepKind
from tether.core.usage import Usage
from tether.store.base import Store
from tether.store.factory import open_store


async def write(store: Store) -> dict[str, Any]:
    """A small, complete history: two sessions, finished and unfinished runs, steps of every
    kind, messages, memory in all three scopes, a closed session."""
    clock = ManualClock()
    make = Factory(store, clock)
    session = await make.session(title="keep helping me", project={"workspace": "/w"})
    other = await make.session(title="closed one", ttl_seconds=None)
    await make.message(session.id, "First find out why the tests fail.")

    analyse = await make.held(session.id, goal="analyse", input={"text": "x"})
    step = await store.start_step(
        run_id=analyse.id,
        worker_id=WORKER,
        position=1,
        kind=StepKind.TOOL_CALL,
        name="run_command",
        input={"arguments": {"command": "python -m unittest"}},
        now=clock.advance(1),
    )
    await store.finish_step(
        step.id,
        worker_id=WORKER,
        status=StepStatus.FAILED,
        now=clock.advance(1),
        error=ErrorInfo("ToolError", "exit 1", step.id),
    )
    await store.record_step(
        run_id=analyse.id,
        worker_id=WORKER,
        position=2,
        kind=StepKind.MODEL_CALL,
        name="model",
        input={"messages": []},
        output={"content": "the module is missing"},
        usage=Usage(120, 30, 1),
        now=clock.advance(1),
    )
    await store.record_step(
        run_id=analyse.id,
        worker_id=WORKER,
        position=3,
        kind=StepKind.MESSAGE,
        name="assistant_message",
        input={"role": "assistant", "content": "requests is missing"},
        message=(Role.ASSISTANT, "requests is missing", {}),
        now=clock.advance(1),
    )
    await store.put_memory(
        scope=MemoryScope.RUN,
        scope_id=analyse.id,
        key="hypothesis",
        value={"module": "requests"},
        owner=None,
        now=clock.advance(1),
    )
    await store.promote_memory(run_id=analyse.id, key="hypothesis", owner=None, now=clock.now())
    await store.finish_run(
        analyse.id,
        worker_id=WORKER,
        status=RunStatus.COMPLETED,
        now=clock.advance(1),
        output={"summary": "requests is missing"},
    )
    fix = await make.waiting(session.id, goal="fix it")
    queued = await make.run(session.id, goal="verify")
    await store.put_memory(
        scope=MemoryScope.USER,
        scope_id="alice",
        key="tone",
        value="brief",
        owner="alice",
        now=clock.now(),
        namespace=("prefs",),
    )
    await make.message(other.id, "hello")
    await store.close_session(other.id, owner=None, now=clock.advance(1))
    return {
        "sessions": [session.id, other.id],
        "runs": [analyse.id, fix.id, queued.id],
    }


async def snapshot(store: Store, ids: dict[str, Any]) -> dict[str, Any]:
    """Everything a reader can see about the sessions in ids, as plain JSON data."""
    sessions = []
    for session_id in ids["sessions"]:
        runs = (await store.list_runs(session_id=session_id, limit=1000)).data
        sessions.append(
            {
                "session": await store.get_session(session_id),
                "messages": await store.list_messages(session_id, limit=1000),
                "runs": runs,
                "steps": {r.id: await store.list_steps(r.id) for r in runs},
                "run_memory": {
                    r.id: await store.list_memory(scope=MemoryScope.RUN, scope_id=r.id)
                    for r in runs
                },
                "session_memory": await store.list_memory(
                    scope=MemoryScope.SESSION, scope_id=session_id
                ),
                "tool_calls": (await store.list_tool_calls(session_id=session_id)).data,
                "events": await store.list_events(session_id=session_id, limit=10_000),
            }
        )
    listed = await store.list_sessions(owner="alice", now=ManualClock().now(), limit=1000)
    data: dict[str, Any] = to_data(
        {
            "sessions": sessions,
            "listed": listed.data,
            "user_memory": await store.list_memory(
                scope=MemoryScope.USER, scope_id="alice", namespace_prefix=None
            ),
        }
    )
    return data


async def main(url: str) -> None:
    store = open_store(url)
    ids = await write(store)
    print(json.dumps({"ids": ids, "snapshot": await snapshot(store, ids)}))
    sys.stdout.flush()
    os._exit(0)  # no close(), no cleanup: committed means durable


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
