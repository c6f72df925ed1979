"""The coder agent: a tool-calling loop over a workspace, with memory tools and the session's
tool history, driven by whichever model the run is given (an offline policy by default)."""

from __future__ import annotations

import json
from typing import Any

from tether.runtime.builtin.coder.policy import OfflineCoderModel
from tether.runtime.builtin.coder.workspace import Workspace
from tether.runtime.run_context import RunContext
from tether.runtime.tools import Tool, ToolRegistry, tool

MAX_TURNS = 30
CONTEXT_MARKER = "Context (JSON):\n"
WORKSPACE_MARKER = "Workspace: "

SYSTEM_PROMPT = """You are tether's coding assistant, working on one project across many runs.
Use the tools to inspect and change files in the workspace and to run commands there.
Record what you find with `remember` (this run's working memory) and `promote` what the next
runs must know. Prefer minimal changes. Answer with a short plain-text report when done."""


def _memory_tools(ctx: RunContext) -> list[Tool]:
    @tool
    async def remember(key: str, value: Any) -> str:
        """Write a fact into this run's working memory."""
        ctx.memory.run[key] = value
        return f"remembered {key}"

    @tool
    async def promote(key: str) -> str:
        """Promote a working-memory item to session memory, so later runs see it."""
        item = await ctx.memory.promote(key)
        return f"promoted {item.key} to session memory"

    @tool
    async def session_tool_history(tool_name: str | None = None) -> list[dict[str, Any]]:
        """The tool calls made by every run of this session, oldest first."""
        return await ctx.tool_history(tool=tool_name)

    return [remember, promote, session_tool_history]


async def _workspace_of(ctx: RunContext) -> Workspace:
    """The workspace the run asked for, once the operator's confinement allows it."""
    requested = ctx.input.get("workspace") or ctx.session.project.get("workspace")
    return Workspace(await ctx.confinement.workspace(requested, ctx.run.owner), ctx.confinement)


async def coder(ctx: RunContext) -> dict[str, Any]:
    """The seed's coding assistant: analyses, fixes and verifies a project in a workspace."""
    workspace = await _workspace_of(ctx)
    ctx.tools = ToolRegistry([*workspace.tools(), *_memory_tools(ctx)])
    model = ctx.model or OfflineCoderModel()
    context_text = json.dumps(ctx.context, ensure_ascii=False, default=str)
    messages: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": f"{SYSTEM_PROMPT}\n\n{WORKSPACE_MARKER}{workspace.root}\n"
            f"{CONTEXT_MARKER}{context_text}",
        },
        {"role": "user", "content": ctx.goal},
    ]
    for _ in range(MAX_TURNS):
        reply = await ctx.complete(messages, model=model)
        messages.append(reply.to_message())
        if not reply.tool_calls:
            answer = reply.content or ""
            await ctx.say(answer)
            return {
                "summary": answer,
                "turns": sum(1 for m in messages if m["role"] == "assistant"),
            }
        for call in reply.tool_calls:
            outcome = await ctx.call_tool(call.name, call.arguments, call_id=call.id)
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": outcome.for_model()}
            )
    raise RuntimeError(f"the model did not finish within {MAX_TURNS} turns")
