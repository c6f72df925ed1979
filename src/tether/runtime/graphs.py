"""Agents that are graphs with their own checkpoints (LangGraph graphs served with
``tether serve --graph``): what the LangGraph-compatible API asks of them.

Such an agent records each node execution of a run as a step whose output carries, under
``STREAM_KEY``, the stream parts the graph produced up to then (``[mode, namespace, data]``,
JSON), so a run's stream is read from the durable event log like any other; and it answers
for the state of a thread (a session) from the graph's checkpoints.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from tether.runtime.agent import AgentRegistry
from tether.runtime.service import Service

#: The key of a step's output that holds the graph's stream parts.
STREAM_KEY = "langgraph_stream"
#: The key of a run's metadata that holds its LangGraph options (``kwargs.stream_mode`` …).
OPTIONS_KEY = "langgraph"
#: The stream modes a graph run produces (the SDK's names).
GRAPH_STREAM_MODES = (
    "values",
    "updates",
    "messages-tuple",
    "messages",
    "custom",
    "debug",
    "tasks",
    "checkpoints",
    "events",
)


@runtime_checkable
class GraphAgent(Protocol):
    """An agent that runs a graph keeping its state in checkpoints of the run's session."""

    graph_id: str

    async def get_state(
        self, service: Service, session_id: str, *, checkpoint_id: str | None, subgraphs: bool
    ) -> dict[str, Any]:
        """The thread's state (LangGraph's ThreadState as JSON) at a checkpoint (None: now)."""
        ...

    async def get_history(
        self,
        service: Service,
        session_id: str,
        *,
        limit: int,
        before: str | None,
        metadata: dict[str, Any] | None,
    ) -> list[dict[str, Any]]:
        """The thread's states, newest first."""
        ...

    async def update_state(
        self,
        service: Service,
        session_id: str,
        values: Any,
        *,
        as_node: str | None,
        checkpoint_id: str | None,
    ) -> dict[str, Any]:
        """Write values as if node as_node had; the new checkpoint's reference."""
        ...


def graph_agent(agents: AgentRegistry, name: str) -> GraphAgent | None:
    """The graph agent registered under name, or None (not a graph, or not registered)."""
    if name not in agents:
        return None
    found = agents.get(name)
    return found if isinstance(found, GraphAgent) else None
