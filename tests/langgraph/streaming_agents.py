"""An agent whose model streams, loaded by ``tether serve --agents streaming_agents``: each answer
comes from a ScriptedModel in its chunked mode (pieces of 4 characters). Asked about the
weather, the model first calls the weather tool, then answers with what it said."""

from __future__ import annotations

from typing import Any

from tether.runtime.agent import agent
from tether.runtime.models import ModelResponse, ScriptedModel, ToolCall
from tether.runtime.models.base import TextSink


def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


class StreamingScript:
    """For each request, the reply the transcript calls for, streamed by a ScriptedModel."""

    name = "streaming-script"

    def _reply(self, messages: list[dict[str, Any]]) -> ModelResponse:
        last = messages[-1]
        if last["role"] == "tool":
            return ModelResponse(content=f"It is {last['content']}.")
        if "weather" in str(last["content"]):
            return ModelResponse(tool_calls=[ToolCall("call_w1", "weather", {"city": "Oslo"})])
        return ModelResponse(content=f"You said: {last['content']}")

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelResponse:
        return self._reply(messages)

    async def complete_stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], on_text: TextSink
    ) -> ModelResponse:
        model = ScriptedModel([self._reply(messages)], name=self.name, chunk_size=4)
        return await model.complete_stream(messages, tools, on_text)


agent("streamer", instructions="Answer briefly.", model=StreamingScript(), tools=[weather])
