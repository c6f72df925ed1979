"""A wait's details go into waiting_for beside its kind, prompt and step id, never over them
(nor make a worker's run look held by its caller)."""

from __future__ import annotations

from pathlib import Path

import pytest

import tether
from tests.support import TEST_SETTINGS
from tests.waiting import WAIT
from tether.runtime.agent import AgentRegistry
from tether.runtime.run_context import RunContext


async def forging(ctx: RunContext) -> object:
    """Waits with details named by its input."""
    name = str(ctx.run.input["name"])
    return await ctx.wait_for_input("Which file?", **{name: "forged", "path": "a.py"})


@pytest.mark.parametrize("name", ["kind", "step_id", "held"])
def test_details_cannot_replace_what_waiting_for_holds(
    tmp_path: Path, agents: AgentRegistry, name: str
) -> None:
    agents.register("forging", forging)
    with tether.open(tmp_path / "t.db", agents=agents, settings=TEST_SETTINGS) as tt:
        session = tt.sessions.create()
        run = session.runs.create("ask", agent="forging", input={"name": name}).wait(WAIT)
        assert run.status is tether.RunStatus.FAILED and run.waiting_for is None
        assert run.error is not None and run.error.type == "UsageError"
        assert f"details cannot be named {name}" in run.error.message
        assert [step.name for step in run.steps] == []


def test_other_details_go_beside_them(tmp_path: Path, agents: AgentRegistry) -> None:
    agents.register("forging", forging)
    with tether.open(tmp_path / "t.db", agents=agents, settings=TEST_SETTINGS) as tt:
        run = tt.sessions.create().runs.create("ask", agent="forging", input={"name": "choice"})
        waiting = run.wait(WAIT)
        assert waiting.status is tether.RunStatus.WAITING
        step_id = waiting.steps[-1].id
        assert waiting.waiting_for == {
            "kind": "input",
            "prompt": "Which file?",
            "step_id": step_id,
            "choice": "forged",
            "path": "a.py",
        }
