"""An agent for the telemetry tests: a tool-calling loop on the run's model."""

from __future__ import annotations

from typing import Any

from tether.runtime.run_context import RunContext
from tether.runtime.tools import ToolRegistry, tool


@tool
def lookup(term: str) -> str:
    """Look a term up."""
    return f"{term}: found"


async def chat(ctx: RunContext) -> dict[str, Any]:
    """Ask the model, call the tools it asks for, until it answers."""
    ctx.tools = ToolRegistry([lookup])
    messages: list[dict[str, Any]] = [{"role": "user", "content": ctx.goal}]
    while True:
        reply = await ctx.complete(messages)
        messages.append(reply.to_message())
        if not reply.tool_calls:
            return {"answer": reply.content}
        for call in reply.tool_calls:
            outcome = await ctx.call_tool(call.name, call.arguments, call_id=call.id)
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": outcome.for_model()}
            )
