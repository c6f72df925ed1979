"""A graph run's chat-model and tool calls as tether steps (a LangChain callback handler):
a chat-model call is a ``model_call`` step with its token usage, a tool call a ``tool_call``
step with its arguments and result (a call stopped by an ``interrupt()`` in the tool: with
``{"interrupted": …}`` as its output, and called again when the run is resumed)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langgraph.errors import GraphBubbleUp

from tether.core.step import Step, StepKind
from tether.core.usage import Usage
from tether.integrations.langgraph._wire import wire
from tether.runtime.run_context import RunContext


class StepRecorder(AsyncCallbackHandler):
    """Records the model and tool calls of one run as steps of its RunContext."""

    run_inline = True

    def __init__(self, ctx: RunContext) -> None:
        self._ctx = ctx
        self._open: dict[UUID, Step] = {}

    async def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        name = _name(serialized, kwargs, "chat_model")
        sent = messages[0] if messages else []
        self._open[run_id] = await self._ctx.begin_step(
            StepKind.MODEL_CALL,
            name,
            {"messages": wire(sent[-1:]), "message_count": len(sent)},
        )

    async def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        step = self._open.pop(run_id, None)
        if step is None:
            return
        first = (
            response.generations[0][0] if response.generations and response.generations[0] else None
        )
        message = first.message if isinstance(first, ChatGeneration) else None
        output = wire(message) if message is not None else {"text": first.text if first else ""}
        await self._ctx.end_step(step, output=output, usage=_usage(message))

    async def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        await self._fail(run_id, error)

    async def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        arguments = wire(inputs) if inputs is not None else input_str
        call = (kwargs.get("metadata") or {}).get("tool_call_id")
        self._open[run_id] = await self._ctx.begin_step(
            StepKind.TOOL_CALL,
            _name(serialized, kwargs, "tool"),
            {"arguments": arguments, "call_id": call},
        )

    async def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        step = self._open.pop(run_id, None)
        if step is not None:
            content = getattr(output, "content", output)
            await self._ctx.end_step(step, output=wire(content))

    async def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        await self._fail(run_id, error)

    async def _fail(self, run_id: UUID, error: BaseException) -> None:
        step = self._open.pop(run_id, None)
        if step is None:
            return
        if isinstance(error, GraphBubbleUp):  # an interrupt() in a tool: no failure
            await self._ctx.end_step(step, output={"interrupted": wire(error.args)})
        else:
            await self._ctx.end_step(step, error=error)


def _name(serialized: dict[str, Any] | None, kwargs: dict[str, Any], default: str) -> str:
    name = kwargs.get("name") or (serialized or {}).get("name")
    if not name:
        ids = (serialized or {}).get("id") or [default]
        name = ids[-1]
    return str(name)[:200]


def _usage(message: BaseMessage | None) -> Usage:
    found = getattr(message, "usage_metadata", None) or {}
    return Usage(
        input_tokens=int(found.get("input_tokens") or 0),
        output_tokens=int(found.get("output_tokens") or 0),
        requests=1,
    )
