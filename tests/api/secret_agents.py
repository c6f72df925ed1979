"""An agent for the redaction tests, loaded by ``tether serve --agents secret_agents``: its tool
reads the env file named by input.path (a test's own file) and the agent repeats what it read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tether.runtime.agent import agent
from tether.runtime.run_context import RunContext
from tether.runtime.tools import tool


@tool
def read_env(path: str) -> str:
    """Read an env file."""
    return Path(path).read_text()


@agent("env_reader", tools=[read_env])
async def env_reader(ctx: RunContext) -> dict[str, Any]:
    """Reads input.path with its tool, says what it found and returns it."""
    text = await ctx.tool("read_env", path=ctx.input["path"])
    await ctx.say(f"found: {text}")
    return {"env": text}
