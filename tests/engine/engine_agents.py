"""Agents for the engine tests, importable by a ``tether worker --agents engine_agents`` process.

Importing the module registers the agents in tether's default registry (what the CLI worker
uses); ``registry()`` builds a private registry with the built-ins for in-process workers.

Side effects go to files named in the run input, so a test in another process can count them:
every tool call appends one line to ``input.log``. Agents block on *gates* (a file that does not
exist yet) instead of sleeping, so a test decides exactly when a run may go on.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from tether.runtime import builtin
from tether.runtime.agent import AgentRegistry, default_registry
from tether.runtime.run_context import RunContext, ToolInDoubt
from tether.runtime.tools import Tool, ToolError, ToolRegistry, tool

GATE_POLL = 0.01


def _is_open(path: str) -> bool:
    return os.path.exists(path)


async def gate(path: str) -> None:
    """Return once the file at path exists (the test opens the gate by creating it). A file,
    not an asyncio.Event: whoever opens the gate may live in another process."""
    while not _is_open(path):  # noqa: ASYNC110
        await asyncio.sleep(GATE_POLL)


def _write_now(path: str) -> None:
    Path(path).write_text(repr(time.time()), encoding="utf-8")


def append_line(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def lines_of(path: str | Path) -> list[str]:
    """The lines appended so far ([] when nothing was)."""
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []


def log_tools(log: str, gate_path: str | None = None) -> list[Tool]:
    """append (one line per call) and hang (one line, then blocks on the gate)."""

    @tool
    def append(line: str) -> str:
        """Append a line to the log."""
        append_line(log, line)
        return f"appended {line}"

    @tool
    async def hang(line: str) -> str:
        """Append a line, then block until the gate opens."""
        append_line(log, line)
        if gate_path is None:
            await asyncio.Event().wait()
        else:
            await gate(gate_path)
        return f"hung {line}"

    return [append, hang]


async def worklog(ctx: RunContext) -> dict[str, Any]:
    """Tool calls before and after a blocking point, with a message on each side.

    input: log (file), gate (file), before/after (counts of appends), block = "tool" (the
    blocking point is a tool call: in_doubt if its worker dies) or "step" (a plain step:
    interrupted and executed again).
    """
    data = ctx.input
    ctx.tools = ToolRegistry(log_tools(data["log"], data.get("gate")))
    for i in range(1, int(data.get("before", 2)) + 1):
        await ctx.tool("append", line=f"before {i}")
    await ctx.say("halfway there")
    await ctx.set_output({"progress": "halfway"})
    in_doubt = None
    if data.get("block", "tool") == "tool":
        try:
            await ctx.tool("hang", line="hang")
        except ToolInDoubt as exc:
            in_doubt = str(exc)
            await ctx.note("hang was in doubt", {"message": in_doubt})
    else:
        async with ctx.step("note", "think") as step:
            if not step.replayed:
                await gate(data["gate"])
                step.output = {"thought": "done"}
    for i in range(1, int(data.get("after", 2)) + 1):
        await ctx.tool("append", line=f"after {i}")
    await ctx.say("all done")
    return {"done": True, "in_doubt": in_doubt, "attempt": ctx.run.attempt}


async def cancellable(ctx: RunContext) -> dict[str, Any]:
    """Records a note and partial output, then blocks in a step on a gate. When cancelled, it
    writes the wall-clock time it saw CancelledError to ``input.observed``."""
    data = ctx.input
    await ctx.note("started", {"at": "the beginning"})
    await ctx.set_output({"partial": "half of the answer"})
    try:
        async with ctx.step("note", "blocked") as step:
            if not step.replayed:
                await gate(data["gate"])
                step.output = {"released": True}
    except asyncio.CancelledError:
        observed = data.get("observed")
        if observed:
            _write_now(observed)
        raise
    return {"complete": "the whole answer"}


async def ordered(ctx: RunContext) -> dict[str, Any]:
    """Appends its run seq to ``input.log`` on start and end (execution order, cross-process)."""
    log = ctx.input["log"]
    append_line(log, f"start {ctx.run.seq}")
    await ctx.note("working", {"seq": ctx.run.seq})
    if ctx.input.get("gate"):
        await gate(ctx.input["gate"])
    append_line(log, f"end {ctx.run.seq}")
    return {"seq": ctx.run.seq}


async def asks(ctx: RunContext) -> dict[str, Any]:
    """A tool call and a note, then waits for a person, then one more tool call."""
    data = ctx.input
    ctx.tools = ToolRegistry(log_tools(data["log"]))
    await ctx.tool("append", line="before the question")
    await ctx.note("asking", {"prompt": data.get("prompt", "Apply the fix?")})
    answer = await ctx.wait_for_input(data.get("prompt", "Apply the fix?"), choices=["yes", "no"])
    await ctx.tool("append", line=f"answer {answer}")
    return {"answer": answer}


def approval_tools(log: str) -> list[Tool]:
    @tool(needs_approval=True)
    def delete_branch(name: str) -> str:
        """Delete a git branch (a person must approve)."""
        append_line(log, f"deleted {name}")
        return f"deleted {name}"

    return [delete_branch]


async def approver(ctx: RunContext) -> dict[str, Any]:
    """Calls a tool that needs a person's approval, through call_tool (a model's path) or
    ctx.tool (input.raising = true)."""
    data = ctx.input
    ctx.tools = ToolRegistry(approval_tools(data["log"]))
    await ctx.note("about to ask", None)
    if data.get("raising"):
        try:
            result = await ctx.tool("delete_branch", name="old")
        except ToolError as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": True, "result": result}
    outcome = await ctx.call_tool("delete_branch", {"name": "old"}, call_id="call_1")
    return {"ok": outcome.ok, "for_model": outcome.for_model(), "step_id": outcome.step_id}


async def doubter(ctx: RunContext) -> dict[str, Any]:
    """Two appends; reports what it was told about each (for runs whose worker died)."""
    data = ctx.input
    ctx.tools = ToolRegistry(log_tools(data["log"]))
    first = await ctx.tool("append", line="one")
    if data.get("via") == "call_tool":
        outcome = await ctx.call_tool("append", {"line": "two"}, call_id="c2")
        return {
            "first": first,
            "ok": outcome.ok,
            "in_doubt": outcome.in_doubt,
            "for_model": outcome.for_model(),
        }
    try:
        second = await ctx.tool("append", line="two")
    except ToolInDoubt as exc:
        return {"first": first, "in_doubt": str(exc)}
    return {"first": first, "second": second}


async def chat(ctx: RunContext) -> dict[str, Any]:
    """A tool-calling loop on the run's model, with append and an approval-gated tool."""
    data = ctx.input
    ctx.tools = ToolRegistry([*log_tools(data["log"])[:1], *approval_tools(data["log"])])
    if ctx.model is None:
        raise RuntimeError("engine_chat needs a model")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful assistant."},
        {"role": "user", "content": ctx.goal},
    ]
    for _ in range(10):
        reply = await ctx.complete(messages)
        messages.append(reply.to_message())
        if not reply.tool_calls:
            await ctx.say(reply.content or "")
            return {"answer": reply.content}
        for call in reply.tool_calls:
            outcome = await ctx.call_tool(call.name, call.arguments, call_id=call.id)
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": outcome.for_model()}
            )
    raise RuntimeError("too many turns")


AGENTS = {
    "engine_chat": chat,
    "engine_worklog": worklog,
    "engine_cancellable": cancellable,
    "engine_ordered": ordered,
    "engine_asks": asks,
    "engine_approver": approver,
    "engine_doubter": doubter,
}


def register(registry: AgentRegistry) -> AgentRegistry:
    for name, fn in AGENTS.items():
        if name not in registry:
            registry.register(name, fn)
    return registry


def registry() -> AgentRegistry:
    """A fresh registry: the built-ins and the engine test agents."""
    return register(builtin.register(AgentRegistry()))


register(default_registry)
