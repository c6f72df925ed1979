"""Threads of served LangGraph graphs: their state is the graph's checkpoints, and their runs'
streams are the parts the graph produced (``tether.runtime.graphs``)."""

from __future__ import annotations

from typing import Any

from tether.core.step import Step
from tether.runtime.checkpoints import Checkpoints
from tether.runtime.graphs import STREAM_KEY, GraphAgent, graph_agent
from tether.runtime.service import Service


async def graph_of_thread(svc: Service, thread_id: str) -> GraphAgent | None:
    """The graph whose checkpoints are the thread's state: that of its latest run, or, before
    any, the one it was made for (``threads.create(graph_id=…)``). None: not a graph's thread;
    nothing is read when no graph is served."""
    if not any(graph_agent(svc.agents, name) for name in svc.agents):
        return None
    page = await svc.list_runs(thread_id, limit=1, newest_first=True, with_context=False)
    if page.data:
        return graph_agent(svc.agents, page.data[0].agent)
    made_for = (await svc.get_session(thread_id)).metadata.get("graph_id")  # (404: no thread)
    return graph_agent(svc.agents, made_for) if isinstance(made_for, str) else None


async def delete_run(svc: Service, run_id: str) -> None:
    """Remove a finished run and what it wrote: a graph's run, its checkpoints too (the thread's
    state goes back to where it was before the run)."""
    run = await svc.get_run(run_id)
    await svc.delete_run(run_id)
    if graph_agent(svc.agents, run.agent) is not None:
        await Checkpoints(svc).delete_for_runs([run_id])


class GraphParts:
    """A graph run's stream parts (carried by its steps) as SSE events for the modes asked. In
    ``messages`` mode, a model's chunks are sent as ``messages/partial`` with the text so far,
    its last chunk and a node's whole messages as ``messages/complete``."""

    def __init__(self, modes: tuple[str, ...], subgraphs: bool) -> None:
        self.modes = modes
        self.subgraphs = subgraphs
        self._text: dict[str, str] = {}

    def of(self, step: Step) -> list[tuple[str, Any]]:
        output = step.output if isinstance(step.output, dict) else {}
        out: list[tuple[str, Any]] = []
        for mode, ns, data in output.get(STREAM_KEY) or ():
            if ns and not self.subgraphs:
                continue
            suffix = "".join(f"|{n}" for n in ns)
            if mode == "messages":
                out += self._messages(data, suffix)
            elif mode in self.modes:
                out.append((mode + suffix, data))
        return out

    def _messages(self, data: list[Any], suffix: str) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        if "messages-tuple" in self.modes:
            out.append(("messages" + suffix, data))
        if "messages" in self.modes:
            chunk, meta = data
            message_id = str(chunk.get("id"))
            if message_id not in self._text:
                self._text[message_id] = ""
                out.append(("messages/metadata", {message_id: {"metadata": meta}}))
            whole = not str(chunk.get("type", "")).endswith("Chunk")
            content = chunk.get("content")
            if isinstance(content, str) and not whole:
                self._text[message_id] += content
                chunk = {**chunk, "content": self._text[message_id]}
            if whole or chunk.get("chunk_position") == "last":
                out.append(("messages/complete", [chunk]))
            else:
                out.append(("messages/partial", [chunk]))
        return out
