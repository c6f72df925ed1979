"""A graph for the tests of ``tether serve --graph`` beside the ReAct one: a factory (not a
compiled graph), a node writing ``custom`` stream parts and long-term memory (the store), and
a subgraph."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore


class Count(TypedDict):
    count: int
    log: Annotated[list[str], operator.add]


def inner_step(state: Count, *, store: BaseStore) -> dict[str, Any]:
    get_stream_writer()({"inner": state["count"]})
    store.put(("counter",), "inner", {"count": state["count"]})
    return {"log": ["inner"]}


async def bump(state: Count, config: RunnableConfig, *, store: BaseStore) -> dict[str, Any]:
    count = state["count"] + int(config["configurable"].get("step", 1))
    get_stream_writer()({"bumped": count})
    await store.aput(("counter",), "last", {"count": count})
    return {"count": count, "log": ["bump"]}


def make_graph() -> Any:
    """The counter graph: bump, then the inner subgraph."""
    inner = StateGraph(Count)
    inner.add_node("inner_step", inner_step)
    inner.add_edge(START, "inner_step")
    inner.add_edge("inner_step", END)
    outer = StateGraph(Count)
    outer.add_node("bump", bump)
    outer.add_node("inner", inner.compile())
    outer.add_edge(START, "bump")
    outer.add_edge("bump", "inner")
    outer.add_edge("inner", END)
    return outer.compile()
