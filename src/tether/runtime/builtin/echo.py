"""echo: a deterministic agent for tests and trials.

Its text is ``input.text``, else the last user message in ``input.messages``, else the goal.
``input.steps = n`` records n notes; ``input.emit = [value, …]`` writes each value as an event
of its own stream (``ctx.emit``); ``input.sleep = s`` sleeps s seconds (cancellable);
``input.wait = "prompt"`` waits for a person and appends what they answer; ``input.fail = true``
(or a message) fails with ValueError("boom") (or that message). Otherwise the run completes
with ``{"text": "echo: <text>"}`` and the assistant message ``echo: <text>`` joins the
conversation.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tether.core.errors import UsageError
from tether.runtime.run_context import RunContext

#: echo is for tests and trials: it records at most this many notes.
MAX_STEPS = 10_000


def _text_of(ctx: RunContext) -> str:
    data = ctx.input
    if isinstance(data.get("text"), str):
        return str(data["text"])
    messages = data.get("messages")
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role") in ("user", "human"):
                content = message.get("content")
                return content if isinstance(content, str) else str(content)
    return ctx.goal


def _answer_text(answer: Any) -> str:
    if isinstance(answer, dict) and "text" in answer:
        return str(answer["text"])
    return answer if isinstance(answer, str) else str(answer)


async def echo(ctx: RunContext) -> dict[str, Any]:
    """Echoes its input; can record steps, sleep, wait for a person or fail, on request."""
    data = ctx.input
    text = _text_of(ctx)
    steps = data.get("steps", 0)
    if isinstance(steps, bool) or not isinstance(steps, int) or not 0 <= steps <= MAX_STEPS:
        raise UsageError(f"input.steps must be a whole number from 0 to {MAX_STEPS}")
    for i in range(1, steps + 1):
        await ctx.note(f"step {i}", {"i": i, "of": steps})
    emitted = data.get("emit", [])
    if not isinstance(emitted, list) or len(emitted) > MAX_STEPS:
        raise UsageError(f"input.emit must be a list of at most {MAX_STEPS} values")
    for value in emitted:
        await ctx.emit(value)
    sleep = data.get("sleep")
    if sleep:
        if isinstance(sleep, bool) or not isinstance(sleep, int | float) or sleep < 0:
            raise UsageError("input.sleep must be a number of seconds")
        async with ctx.step("note", "sleep", {"seconds": sleep}) as step:
            if not step.replayed:
                await asyncio.sleep(float(sleep))
                step.output = {"slept": sleep}
    prompt = data.get("wait")
    if prompt:
        answer = await ctx.wait_for_input(str(prompt))
        text = f"{text} {_answer_text(answer)}"
    fail = data.get("fail")
    if fail:
        raise ValueError(fail if isinstance(fail, str) else "boom")
    reply = f"echo: {text}"
    await ctx.say(reply)
    return {"text": reply}
