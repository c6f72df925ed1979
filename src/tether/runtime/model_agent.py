"""The built-in model-and-tools loop: an agent made of a model, instructions and tools.

``tether.agent("helper", instructions="…", tools=[…])`` registers one. Each run it calls the
model with the instructions, the session's conversation and the tools' schemas, runs the tool
calls the model asks for and hands their results back, until the model answers without a tool
call; that answer joins the conversation and is the run's output (``{"text": …}``). Every model
call and tool call is a step, so a resumed run replays them instead of repeating them; a tool's
error is a result the model sees; a tool made with ``needs_approval=True`` makes the run wait
for a person first; past ``max_steps`` the run fails with StepLimitExceeded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.core.errors import ModelError, StepLimitExceeded, UsageError
from tether.runtime.agent import DEFAULT_MAX_STEPS
from tether.runtime.models.base import Model
from tether.runtime.models.catalog import HOW_TO_CONFIGURE

if TYPE_CHECKING:
    from tether.runtime.run_context import RunContext

#: The parts of the assembled context the model is shown (the conversation goes as messages).
_CONTEXT_PARTS = ("project", "session_memory", "user_memory", "app_memory", "earlier_runs")


@dataclass(frozen=True)
class ModelAgent:
    """An agent that loops over a model and its tools (see the module's docstring)."""

    #: The name the agent is registered under (shown in errors).
    name: str
    #: The system message: what the agent is for and how it should answer.
    instructions: str
    #: The model to call; None: the run's model (``models=`` or the TETHER_MODEL_* settings).
    model: Model | None = None
    #: Model calls plus tool calls one run may make; past it the run fails.
    max_steps: int = DEFAULT_MAX_STEPS
    #: Show the model the session's project, memory and earlier runs.
    with_context: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.instructions, str):
            raise UsageError(f"agent {self.name!r}: instructions must be a text")
        if isinstance(self.max_steps, bool) or not isinstance(self.max_steps, int):
            raise UsageError(f"agent {self.name!r}: max_steps must be a whole number")
        if self.max_steps < 1:
            raise UsageError(f"agent {self.name!r}: max_steps must be at least 1")
        if self.model is not None and not isinstance(self.model, Model):
            raise UsageError(
                f"agent {self.name!r}: model must be a Model (an object with name and "
                f"complete()), not {type(self.model).__name__}"
            )

    async def __call__(self, ctx: RunContext) -> dict[str, Any]:
        model = self.model or ctx.model
        if model is None:
            raise ModelError(f"agent {self.name!r} has no model: {HOW_TO_CONFIGURE}")
        messages = self.transcript(ctx)
        used = 0
        while True:
            used = self._spend(used)
            reply = await ctx.complete(messages, model=model)
            messages.append(reply.to_message())
            if not reply.tool_calls:
                answer = reply.content or ""
                await ctx.say(answer)
                return {"text": answer}
            for call in reply.tool_calls:
                used = self._spend(used)
                outcome = await ctx.call_tool(call.name, call.arguments, call_id=call.id)
                messages.append(outcome.to_message(call))

    def transcript(self, ctx: RunContext) -> list[dict[str, Any]]:
        """The messages of the first model call: instructions (with the context), the
        conversation's user and assistant messages, and the run's goal unless the
        conversation already ends with it."""
        system = self.instructions
        shown = {k: ctx.context[k] for k in _CONTEXT_PARTS if ctx.context.get(k)}
        if self.with_context and shown:
            system += "\n\nContext (JSON):\n" + json.dumps(shown, ensure_ascii=False, default=str)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        for message in ctx.context.get("messages", []):
            if (
                message.get("role") in ("user", "assistant")
                and isinstance(message.get("content"), str)
                and not message.get("tool_calls")
            ):
                messages.append({"role": message["role"], "content": message["content"]})
        if messages[-1] != {"role": "user", "content": ctx.goal}:
            messages.append({"role": "user", "content": ctx.goal})
        return messages

    def _spend(self, used: int) -> int:
        if used >= self.max_steps:
            raise StepLimitExceeded(
                f"agent {self.name!r} made {used} model and tool calls (its max_steps) without "
                "a final answer: raise max_steps or narrow the goal"
            )
        return used + 1
