"""The Model protocol: chat messages and tool specs in, a reply (text and/or tool calls) out.

Messages use the widespread chat-completions shape: ``{"role", "content"}``, assistant messages
may carry ``tool_calls``, tool results carry ``tool_call_id``. ``ModelResponse.to_message()``
turns a reply into its assistant message and ``ToolOutcome.to_message(call)`` a tool's result
into its tool message; ``as_messages`` also accepts replies and ToolCall objects where dicts
belong.

A model that can stream its answer also has ``complete_stream``: the same reply, with each piece
of its text handed to ``on_text`` as it arrives (``StreamingModel``); ``ctx.complete`` uses it
when it is there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from tether.core.errors import UsageError
from tether.core.usage import Usage


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model asks for a tool to be called."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def for_message(self) -> dict[str, Any]:
        """The call as it appears in an assistant message's ``tool_calls``."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """One reply of a model."""

    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str | None = None

    def to_message(self) -> dict[str, Any]:
        """The assistant message this reply adds to a transcript."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [c.for_message() for c in self.tool_calls]
        return message


def as_messages(messages: Sequence[Mapping[str, Any] | ModelResponse]) -> list[dict[str, Any]]:
    """Chat messages in the one shape models get: a ModelResponse becomes its assistant
    message, and an entry of ``tool_calls`` may be a ToolCall, ``{"id", "name", "arguments"}``
    or the chat-completions ``{"id", "type", "function": {"name", "arguments"}}``. UsageError,
    naming the message, for anything else."""
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise UsageError("messages must be a list of chat messages ({'role': …, 'content': …})")
    shaped = []
    for i, message in enumerate(messages):
        if isinstance(message, ModelResponse):
            shaped.append(message.to_message())
            continue
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise UsageError(
                f"messages[{i}] must be a dict with a role, like {{'role': 'user', 'content': "
                f"'…'}} (or a ModelResponse), not {_shown(message)}"
            )
        out = dict(message)
        if out.get("tool_calls"):
            out["tool_calls"] = [_call_data(i, c) for c in out["tool_calls"]]
        shaped.append(out)
    return shaped


def _call_data(i: int, call: Any) -> dict[str, Any]:
    if isinstance(call, ToolCall):
        return call.for_message()
    if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
        return {"type": "function", **call}
    if isinstance(call, Mapping) and isinstance(call.get("name"), str):
        return ToolCall(
            str(call.get("id") or ""), call["name"], call.get("arguments") or {}
        ).for_message()
    raise UsageError(
        f"messages[{i}].tool_calls holds {_shown(call)}: give ToolCall objects (reply.tool_calls) "
        "or dicts like {'id': …, 'name': …, 'arguments': {…}}"
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"


@runtime_checkable
class Model(Protocol):
    """Something that answers a chat transcript."""

    #: Shown on model-call steps.
    name: str

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelResponse:
        """The next reply to messages, given the tools the agent offers."""


#: Receives each piece of a streamed answer's text, in order.
TextSink = Callable[[str], Awaitable[None]]


@runtime_checkable
class StreamingModel(Model, Protocol):
    """A model that can also stream the text of its answer while it comes."""

    async def complete_stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], on_text: TextSink
    ) -> ModelResponse:
        """The next reply, as complete() gives it; on_text gets each piece of its text first."""
