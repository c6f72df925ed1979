"""Secrets a run meets are redacted before they are stored: a tool that reads an env file puts
its token in no step, tool call, event, message, memory item, output or error; turned off, the
same run stores the token as it was."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.support import TEST_SETTINGS
from tether.core.redaction import NO_REDACTION
from tether.core.status import RunStatus
from tether.runtime.agent import AgentRegistry
from tether.runtime.run_context import RunContext
from tether.runtime.service import Service
from tether.runtime.tools import ToolRegistry, tool
from tether.runtime.worker import Worker
from tether.store.base import Store

TOKEN = "tk_" + "Zq9" * 14 + "x"
ENV = f"HOME=/home/me\nexport TETHER_API_KEY={TOKEN}\nAuthorization: Bearer {TOKEN}\n"


@tool
def read_env(path: str) -> str:
    """Read an env file."""
    return Path(path).read_text()


async def env_reader(ctx: RunContext) -> dict[str, Any]:
    """Reads the env file of input.path with a tool and repeats it everywhere it can."""
    ctx.tools = ToolRegistry([read_env])
    text = await ctx.tool("read_env", path=ctx.input["path"])
    ctx.memory.run["env"] = text
    await ctx.note("seen", {"text": text})
    async with ctx.step("note", "parse") as step:
        step.output = {"lines": text.splitlines()}
    await ctx.say(f"I found {TOKEN}")
    if ctx.input.get("fail"):
        raise ValueError(f"bad key {TOKEN}")
    return {"env": text}


async def _everything(service: Service, run_id: str) -> str:
    """Every record of the run and its session, as one JSON text."""
    run = await service.get_run(run_id)
    records: list[Any] = [run, await service.list_steps(run_id)]
    records.append(await service.list_tool_calls(session_id=run.session_id))
    records.append(await service.list_events(session_id=run.session_id))
    records.append(await service.list_messages(run.session_id))
    records.append(await service.list_run_memory(run_id))
    return json.dumps(records, default=repr)


@pytest.fixture(autouse=True)
def reader(agents: AgentRegistry) -> None:
    agents.register("env_reader", env_reader)


@pytest.mark.usefixtures("worker")
@pytest.mark.parametrize("fail", [False, True])
async def test_a_token_read_by_a_tool_is_stored_nowhere(
    service: Service, tmp_path: Path, fail: bool
) -> None:
    (tmp_path / ".env").write_text(ENV)
    session = await service.create_session()
    run = await service.create_run(
        session.id,
        "read it",
        agent="env_reader",
        input={"path": str(tmp_path / ".env"), "fail": fail},
    )
    done = await service.wait_run(run.id, timeout=30)
    assert done.status is (RunStatus.FAILED if fail else RunStatus.COMPLETED)
    stored = await _everything(service, run.id)
    assert TOKEN not in stored
    assert "[REDACTED:secret-variable]" in stored
    assert "[REDACTED:credential]" in stored
    assert "[REDACTED:tether-key]" in stored
    calls = await service.list_tool_calls(session_id=session.id)
    assert "HOME=/home/me" in calls.data[0].output


async def test_turned_off_the_token_is_stored_as_read(
    store: Store, agents: AgentRegistry, tmp_path: Path
) -> None:
    (tmp_path / ".env").write_text(ENV)
    settings = replace(TEST_SETTINGS, redactor=NO_REDACTION)
    service = Service(store, agents=agents, settings=settings)
    worker = Worker(store, agents, settings=settings, worker_id="plain")
    worker.start()
    try:
        session = await service.create_session()
        run = await service.create_run(
            session.id, "read it", agent="env_reader", input={"path": str(tmp_path / ".env")}
        )
        await service.wait_run(run.id, timeout=30)
        assert TOKEN in await _everything(service, run.id)
    finally:
        await worker.stop(grace=2.0)
