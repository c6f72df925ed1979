"""A ReAct-style graph for the tests of ``tether serve --graph``: a deterministic chat model
(it calls the weather tool for a question, and answers with the tool's result), one tool, and
an ``interrupt()`` asking a person to approve each tool call before it runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


class ScriptedModel(GenericFakeChatModel):
    """Asks for the weather of the city the last question names; then answers with it."""

    messages: Any = iter(())

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(content=f"The weather: {last.content}.")
        elif isinstance(last, HumanMessage):
            city = str(last.content).rstrip("?").split()[-1]
            call = {"name": "get_weather", "args": {"city": city}, "id": f"call_{len(messages)}"}
            reply = AIMessage(content=f"Checking {city}", tool_calls=[call])
        else:
            reply = AIMessage(content="Anything else?")
        reply.usage_metadata = UsageMetadata(
            input_tokens=10 * len(messages),
            output_tokens=5,
            total_tokens=10 * len(messages) + 5,
        )
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _stream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        """The reply word by word, then its tool calls and usage."""
        reply = self._generate(messages).generations[0].message
        assert isinstance(reply, AIMessage)
        for index, word in enumerate(str(reply.content).split(" ")):
            text = word if index == 0 else " " + word
            yield ChatGenerationChunk(message=AIMessageChunk(content=text, id=reply.id))
        calls = [
            tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
            for i, c in enumerate(reply.tool_calls)
        ]
        last = AIMessageChunk(
            content="", tool_call_chunks=calls, usage_metadata=reply.usage_metadata
        )
        yield ChatGenerationChunk(message=last)


model = ScriptedModel().bind_tools([get_weather])


async def agent(state: MessagesState) -> dict[str, Any]:
    return {"messages": [await model.ainvoke(state["messages"])]}


def approve(state: MessagesState) -> dict[str, Any]:
    last = state["messages"][-1]
    calls = getattr(last, "tool_calls", [])
    answer = interrupt({"question": "Run these tools?", "tool_calls": calls})
    if answer not in ("yes", True, {"approved": True}):
        return {"messages": [AIMessage(content="Not run.")]}
    return {}


def route(state: MessagesState) -> Literal["approve", "__end__"]:
    last = state["messages"][-1]
    return "approve" if getattr(last, "tool_calls", None) else "__end__"


def after_approval(state: MessagesState) -> Literal["tools", "__end__"]:
    last = state["messages"][-1]
    return "tools" if getattr(last, "tool_calls", None) else "__end__"


builder = StateGraph(MessagesState)
builder.add_node("agent", agent)
builder.add_node("approve", approve)
builder.add_node("tools", ToolNode([get_weather]))
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", route)
builder.add_conditional_edges("approve", after_approval)
builder.add_edge("tools", "agent")
graph = builder.compile()
