"""ScriptedModel: replies from a script, for tests; fails loudly on surprises."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tether.runtime.models.base import ModelResponse, TextSink

#: A scripted reply: a response, a text (a reply with that content and no tool calls), or a
#: function of the transcript returning a response.
Reply = ModelResponse | str | Callable[[list[dict[str, Any]]], ModelResponse]


class UnexpectedRequest(AssertionError):
    """The model was asked for more replies than its script holds."""


class UnconsumedResponses(AssertionError):
    """The script still holds replies nobody asked for."""


class ScriptedModel:
    """Answers each request with the next scripted reply (or what a scripted function returns).

    With ``chunk_size=n`` it streams: ``complete_stream`` hands each answer's text on in pieces
    of n characters (the last one shorter) before returning the reply."""

    def __init__(
        self, replies: Sequence[Reply], *, name: str = "scripted", chunk_size: int | None = None
    ) -> None:
        if isinstance(replies, str):
            raise TypeError('replies is a list of replies: ScriptedModel(["hello"])')
        if chunk_size is not None and (isinstance(chunk_size, bool) or chunk_size < 1):
            raise TypeError("chunk_size is a number of characters, at least 1")
        self.name = name
        self.chunk_size = chunk_size
        self._replies = [_reply(r, i) for i, r in enumerate(replies)]
        self.requests: list[list[dict[str, Any]]] = []

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelResponse:
        self.requests.append(list(messages))
        if not self._replies:
            raise UnexpectedRequest(
                f"{self.name}: request {len(self.requests)} has no scripted reply"
            )
        reply = self._replies.pop(0)
        return reply(messages) if callable(reply) else reply

    async def complete_stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], on_text: TextSink
    ) -> ModelResponse:
        reply = await self.complete(messages, tools)
        size = self.chunk_size
        if size is not None and reply.content:
            for start in range(0, len(reply.content), size):
                await on_text(reply.content[start : start + size])
        return reply

    def assert_consumed(self) -> None:
        """Raise if scripted replies were never asked for."""
        if self._replies:
            raise UnconsumedResponses(f"{self.name}: {len(self._replies)} replies never used")


def _reply(
    reply: Reply, index: int
) -> ModelResponse | Callable[[list[dict[str, Any]]], ModelResponse]:
    """A scripted reply as a response or a function; anything else is refused up front."""
    if isinstance(reply, str):
        return ModelResponse(content=reply, finish_reason="stop")
    if isinstance(reply, ModelResponse) or callable(reply):
        return reply
    raise TypeError(
        f"reply {index} is a {type(reply).__name__}: give a text, a ModelResponse, or a "
        "function of the transcript returning one"
    )
