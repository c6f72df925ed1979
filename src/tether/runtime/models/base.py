"""The Model protocol: chat messages and tool specs in, a reply (text and/or tool calls) out.

Messages use the widespread chat-completions shape: ``{"role", "content"}``, assistant messages
may carry ``tool_calls``, tool results carry ``tool_call_id``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from tether.core.usage import Usage


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model asks for a tool to be called."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


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
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        return message


@runtime_checkable
class Model(Protocol):
    """Something that answers a chat transcript."""

    #: Shown on model-call steps.
    name: str

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelResponse:
        """The next reply to messages, given the tools the agent offers."""
