"""A LangGraph graph served by tether as an agent (``tether serve --graph NAME=module:attr``).

A run of it executes the graph in the run's session (the thread) with TetherCheckpointSaver and
TetherStore on the server's database; the checkpoints it writes carry the tether run's id. Each
node execution is a ``note`` step named after the node, and the graph's stream parts ride on
those steps (see ``tether.runtime.graphs``); chat-model and tool calls are ``model_call`` and
``tool_call`` steps. An ``interrupt()`` makes the run wait for a person (its value is what the
run waits for); resuming the run continues the graph with ``Command(resume=answer)``, in any
process, since everything it needs is in the checkpoints.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.pregel import Pregel as _Pregel
from langgraph.types import Command, StateSnapshot

from tether.core.status import StepStatus
from tether.core.step import WAIT_PREFIX, Step, StepKind
from tether.integrations.langgraph._bridge import Bridge
from tether.integrations.langgraph._observe import StepRecorder
from tether.integrations.langgraph._wire import interrupt, thread_state, wire
from tether.integrations.langgraph.saver import TetherCheckpointSaver
from tether.integrations.langgraph.store import TetherStore
from tether.runtime.graphs import OPTIONS_KEY, STREAM_KEY
from tether.runtime.run_context import RunContext
from tether.runtime.service import Service

#: A compiled graph, whatever its state, input, output and context.
Pregel = _Pregel[Any, Any, Any, Any]

#: The stream modes always asked of the graph (the others when the run asks for them): values
#: end a superstep, tasks are the node steps.
_ALWAYS = ("values", "tasks")
#: The graph's stream modes behind the SDK's names.
_GRAPH_MODE = {"messages-tuple": "messages", "messages": "messages"}
#: Keys of a run's ``configurable`` that are the run's own, never the caller's (as are the
#: ``__``-prefixed ones LangGraph keeps for itself).
_RESERVED = frozenset({"thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map"})
#: The note a run starts with: how many messages its thread had then.
_INPUT_NOTE = "graph_input"
_RECORDABLE = frozenset({"updates", "custom", "debug", "checkpoints", "messages"})


class ServedGraph:
    """A compiled graph as a tether agent (and as the state of the threads it runs in)."""

    def __init__(self, graph_id: str, graph: Pregel, description: str | None = None) -> None:
        self.graph_id = graph_id
        self.graph = graph
        self.__doc__ = description or f"LangGraph graph {graph_id}"

    def bound(self, service: Service) -> Pregel:
        """The graph checkpointing to, and storing in, service's database."""
        bridge = Bridge.on_loop(service, asyncio.get_running_loop())
        update = {"checkpointer": TetherCheckpointSaver(bridge), "store": TetherStore(bridge)}
        return self.graph.copy(update=update)

    async def __call__(self, ctx: RunContext) -> Any:
        recorded = ctx.continue_after_recorded()
        graph = self.bound(ctx.service)
        options = (ctx.run.metadata.get(OPTIONS_KEY) or {}).get("kwargs") or {}
        before = await _messages_before(graph, ctx, recorded)
        given = await _input(graph, _thread(ctx.session.id, None), ctx, recorded)
        config = self._config(ctx, options)
        stream = _Recorder(ctx, options.get("stream_mode") or ())
        extra: dict[str, Any] = {}
        if options.get("context"):
            extra["context"] = options["context"]
        for key in ("interrupt_before", "interrupt_after"):
            if options.get(key):
                extra[key] = options[key]
        async for ns, mode, chunk in _parts(graph, given, config, stream, extra):
            await stream.part(ns, mode, chunk)
        await stream.close()  # (a run that fails has its open steps closed as failed)
        snapshot = await graph.aget_state(_thread(ctx.session.id, None))
        await self._wait_if_stopped(ctx, snapshot)
        return _output(wire(snapshot.values), before)

    async def _wait_if_stopped(self, ctx: RunContext, snapshot: StateSnapshot) -> None:
        """Make the run wait for a person when the graph stopped at an ``interrupt()`` (its
        value is what the run waits for) or at a breakpoint (``interrupt_before/after``)."""
        if snapshot.interrupts:
            first = snapshot.interrupts[0]
            value = wire(first.value)
            prompt = value if isinstance(value, str) else f"graph {self.graph_id} was interrupted"
            await ctx.wait_for_input(prompt, interrupt_id=first.id, value=value)
        elif snapshot.next and not any(t.error for t in snapshot.tasks):
            nodes = ", ".join(snapshot.next)
            checkpoint = (snapshot.config.get("configurable") or {}).get("checkpoint_id")
            await ctx.wait_for_input(
                f"graph {self.graph_id} stopped before {nodes}",
                interrupt_id=checkpoint,
                value=None,
                breakpoint=list(snapshot.next),
            )

    def _config(self, ctx: RunContext, options: dict[str, Any]) -> RunnableConfig:
        given = dict(options.get("config") or {})
        configurable = {
            key: value
            for key, value in (given.get("configurable") or {}).items()
            if not key.startswith("__") and key not in _RESERVED
        }
        configurable["thread_id"] = ctx.session.id
        lg_options = ctx.run.metadata.get(OPTIONS_KEY) or {}
        metadata = {  # (what the graph's checkpoints keep in their metadata)
            **{k: v for k, v in ctx.run.metadata.items() if k != OPTIONS_KEY},
            **(given.get("metadata") or {}),
            "run_id": ctx.run.id,
            "thread_id": ctx.session.id,
            "graph_id": self.graph_id,
        }
        if lg_options.get("assistant_id") is not None:
            metadata["assistant_id"] = lg_options["assistant_id"]
        config: dict[str, Any] = {
            "configurable": configurable,
            "metadata": metadata,
            "callbacks": [StepRecorder(ctx)],
        }
        for key in ("recursion_limit", "tags", "max_concurrency"):
            if given.get(key) is not None:
                config[key] = given[key]
        return cast(RunnableConfig, config)

    # -- the state of threads (tether.runtime.graphs.GraphAgent) --------------------------------

    async def get_state(
        self, service: Service, session_id: str, *, checkpoint_id: str | None, subgraphs: bool
    ) -> dict[str, Any]:
        config = _thread(session_id, checkpoint_id)
        snapshot = await self.bound(service).aget_state(config, subgraphs=subgraphs)
        return thread_state(snapshot)

    async def get_history(
        self,
        service: Service,
        session_id: str,
        *,
        limit: int,
        before: str | None,
        metadata: dict[str, Any] | None,
    ) -> list[dict[str, Any]]:
        graph = self.bound(service)
        states = graph.aget_state_history(
            _thread(session_id, None),
            filter=metadata or None,
            before=_thread(session_id, before) if before else None,
            limit=limit,
        )
        return [thread_state(snapshot) async for snapshot in states]

    async def update_state(
        self,
        service: Service,
        session_id: str,
        values: Any,
        *,
        as_node: str | None,
        checkpoint_id: str | None,
    ) -> dict[str, Any]:
        config = _thread(session_id, checkpoint_id)
        written = await self.bound(service).aupdate_state(config, values, as_node=as_node)
        conf = written.get("configurable") or {}
        return {
            "checkpoint": {
                "thread_id": session_id,
                "checkpoint_ns": conf.get("checkpoint_ns", ""),
                "checkpoint_id": conf.get("checkpoint_id"),
                "checkpoint_map": conf.get("checkpoint_map"),
            }
        }


def _thread(session_id: str, checkpoint_id: str | None) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": session_id}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


async def _parts(
    graph: Pregel, given: Any, config: RunnableConfig, stream: _Recorder, extra: dict[str, Any]
) -> AsyncIterator[tuple[tuple[str, ...], str, Any]]:
    """The graph's stream parts; with ``events`` asked for, its LangChain events too (as
    ``events`` parts), from ``astream_events``."""
    modes: Any = stream.modes
    if not stream.events:
        parts: Any = graph.astream(given, config, stream_mode=modes, subgraphs=True, **extra)
        async for part in parts:
            yield part
        return
    events = graph.astream_events(
        given, config, version="v2", stream_mode=modes, subgraphs=True, **extra
    )
    root = None
    async for event in events:
        root = root or event["run_id"]
        if event["event"] == "on_chain_stream" and event["run_id"] == root:
            yield event["data"]["chunk"]
        else:
            yield (), "events", event


async def _messages_before(graph: Pregel, ctx: RunContext, recorded: list[Step]) -> int:
    """How many messages the thread had when the run started (recorded by its first step)."""
    for step in recorded:
        if step.kind is StepKind.NOTE and step.name == _INPUT_NOTE:
            return int((step.input or {}).get("messages_before") or 0)
    values = (await graph.aget_state(_thread(ctx.session.id, None))).values
    messages = values.get("messages") if isinstance(values, dict) else None
    count = len(messages) if isinstance(messages, list) else 0
    await ctx.note(_INPUT_NOTE, {"messages_before": count})
    return count


def _output(values: Any, before: int) -> Any:
    """A run's output: the graph's final values, of its messages only those the run added (the
    thread's state has them all: a run's output does not repeat the history)."""
    if isinstance(values, dict) and isinstance(values.get("messages"), list):
        return {**values, "messages": values["messages"][before:]}
    return values


async def _input(
    graph: Pregel, config: RunnableConfig, ctx: RunContext, recorded: list[Step]
) -> Any:
    """What the graph is run with: the answer to its interrupt (a resumed run), nothing (a run
    retried after its worker was lost: the graph goes on from its checkpoint), or the input."""
    waits = [s for s in recorded if s.kind is StepKind.MESSAGE and s.name.startswith(WAIT_PREFIX)]
    snapshot = await graph.aget_state(config)
    pending = {i.id: i for i in snapshot.interrupts}
    if waits and pending:
        last = waits[-1]
        asked = (last.input or {}).get("interrupt_id")
        if last.status is StepStatus.COMPLETED and asked in pending:
            answer = (last.output or {}).get("input")
            if isinstance(answer, dict) and answer and set(answer) <= set(pending):
                return Command(resume=answer)
            return Command(resume=answer if len(pending) == 1 else {asked: answer})
    if recorded and snapshot.next and (snapshot.metadata or {}).get("run_id") == ctx.run.id:
        return None
    if OPTIONS_KEY in ctx.run.metadata:  # a LangGraph API run: its input is the graph's
        return ctx.input or None
    return ctx.input or {"messages": [{"role": "user", "content": ctx.goal}]}


class _Recorder:
    """Node executions as steps, with the stream parts produced up to each superstep's end."""

    def __init__(self, ctx: RunContext, requested: Any) -> None:
        self._ctx = ctx
        asked = {_GRAPH_MODE.get(m, m) for m in requested if isinstance(m, str)}
        self.modes = [*_ALWAYS, *sorted(asked & _RECORDABLE)]
        #: What the steps keep: the modes asked for (a superstep's values hold the whole
        #: state: kept for every superstep only when they are streamed).
        self._kept = asked or {"values"}
        #: The graph's LangChain events are streamed too.
        self.events = "events" in asked
        self._parts: list[list[Any]] = []
        self._running: dict[tuple[tuple[str, ...], str], Step] = {}
        self._ended: list[tuple[Step, dict[str, Any]]] = []

    async def part(self, ns: tuple[str, ...], mode: str, chunk: Any) -> None:
        if mode == "tasks":
            await self._task(ns, chunk)
        if mode in self._kept:
            data = [wire(chunk[0]), wire(chunk[1])] if mode == "messages" else wire(chunk)
            self._parts.append([mode, list(ns), data])
        if mode == "values" and not ns:
            await self._flush()

    async def _task(self, ns: tuple[str, ...], chunk: dict[str, Any]) -> None:
        key = (ns, str(chunk.get("id")))
        if "input" in chunk:
            triggers = wire(chunk.get("triggers") or [])
            self._running[key] = await self._ctx.begin_step(
                StepKind.NOTE, str(chunk.get("name")), {"task_id": key[1], "triggers": triggers}
            )
            return
        step = self._running.pop(key, None)
        if step is not None:
            result = {
                "update": wire(chunk.get("result")),
                "error": wire(chunk.get("error")),
                "interrupts": [interrupt(i) for i in chunk.get("interrupts") or ()],
            }
            self._ended.append((step, result))

    async def _flush(self) -> None:
        """End the nodes that finished, the parts riding on the last of them; when none did,
        the parts wait for a node still running, or (none running: the graph's input) ride on
        a step of their own."""
        if not self._ended and self._running:
            return
        ended, self._ended = self._ended, []
        parts, self._parts = self._parts, []
        if not ended and parts:
            carrier = await self._ctx.begin_step(StepKind.NOTE, "__start__", {})
            ended = [(carrier, {})]
        for index, (step, output) in enumerate(ended):
            if index == len(ended) - 1:
                output = {**output, STREAM_KEY: parts}
            await self._ctx.end_step(step, output=output)

    async def close(self) -> None:
        """End what is left: the nodes still open (interrupted, or cut off) end too."""
        for step in self._running.values():
            self._ended.append((step, {"update": None, "error": None, "interrupts": []}))
        self._running = {}
        await self._flush()  # (nothing is running now: everything is written)
