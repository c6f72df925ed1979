"""A run's event log as LangGraph's Server-Sent Events.

``metadata`` comes first; then, per the stream modes asked for: ``values`` (the thread's values
when the run starts and after each of its steps, a person's answer included), ``updates``
(``{step name: what it wrote}``), ``messages`` (``[message, metadata]``, for
``messages-tuple``) or ``messages/metadata`` + ``messages/complete`` (for ``messages``);
while a model streams its answer, each piece as ``[AIMessageChunk, metadata]`` (``messages``
event, for ``messages-tuple``) or ``messages/partial`` with the text so far (for ``messages``),
before the whole message; a model's tool calls as an AI message with ``tool_calls`` and a
``tool`` message per result; ``custom`` (what the agent wrote with
``ctx.emit``); ``error`` when the run fails. A run that starts waiting for a person
ends the stream with its interrupt (``__interrupt__``). There is no ``end`` event: the stream
closes once the run's status is stored.

A thread's stream (``threads.join_stream``) is the stream of each run created in the thread
while it is open: ``metadata``, then the run's frames in the stream modes it was started with.

Frames come from the durable event log, so a stream can always be resumed. With
``stream_resumable`` each frame has an ``id:`` of the form ``<event id>-<n>`` (the n-th frame
made from that event); ``Last-Event-ID`` resumes right after it.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from contextlib import aclosing, suppress
from dataclasses import dataclass
from typing import Any

import anyio

from tether.api.langgraph.graphs import GraphParts
from tether.api.langgraph.options import STREAM_MODES, stream_modes
from tether.api.langgraph.shapes import (
    interrupt_of,
    is_run_output,
    lc_chunk,
    lc_message,
    lg_info,
    run_error,
    wire_id,
)
from tether.api.langgraph.state import Conversation, step_update, values_of
from tether.api.langgraph.tool_turns import step_messages
from tether.core.errors import InvalidTransition, NotFound, UsageError
from tether.core.event import STEP_END_EVENTS, TERMINAL_RUN_EVENTS, Event, EventType
from tether.core.message import Message
from tether.core.run import Run
from tether.core.status import RunStatus
from tether.core.step import Step, StepKind
from tether.runtime.graphs import GRAPH_STREAM_MODES, graph_agent
from tether.runtime.run_context import CUSTOM_STEP
from tether.runtime.service import Service
from tether.runtime.sse import Alive, Recheck

HEARTBEAT = b": heartbeat\r\n\r\n"
#: The longest the stream goes without checking whether the server is draining.
_TICK = 1.0
#: Resume position: after frame ``index`` of event ``event_id`` (None: after all of them).
Position = tuple[int, int | None]


def parse_last_event_id(text: str | None) -> Position | None:
    """``<event id>`` or ``<event id>-<n>`` (what this stream sends as ``id:``)."""
    if text is None or not text.strip():
        return None
    head, _, tail = text.strip().partition("-")
    digits = text.isascii() and head.isdigit() and (not tail or tail.isdigit())  # (not "²")
    if not digits or len(head) > 18 or len(tail) > 6:
        raise UsageError(
            "header.Last-Event-ID must be an id this stream sent (<event id> or <event id>-<n>)"
        )
    return int(head), int(tail) if tail else None


def frame(event: str, data: Any, frame_id: str | None = None) -> bytes:
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    head = f"id: {frame_id}\r\n" if frame_id is not None else ""
    return f"{head}event: {event}\r\ndata: {body}\r\n\r\n".encode()


@dataclass(frozen=True, slots=True)
class Plan:
    """What one SSE response streams."""

    run: Run
    modes: tuple[str, ...]
    #: Send ``id:`` lines.
    resumable: bool
    #: Start after this event (and frame), or from the run's first event.
    after: Position | None = None
    #: Cancel the run if the client leaves before it ends.
    cancel_on_disconnect: bool = False
    #: Where the stream starts, when it is not a resumption: after this event.
    start_after: int = 0


class _Translator:
    """Turns one run's events into LangGraph stream parts."""

    def __init__(self, svc: Service, run: Run, modes: tuple[str, ...]) -> None:
        self.svc = svc
        self.run = run
        self.modes = modes
        #: A served graph's run streams the parts the graph produced.
        subgraphs = bool((lg_info(run).get("kwargs") or {}).get("stream_subgraphs"))
        served = graph_agent(svc.agents, run.agent) is not None
        self.graph = GraphParts(modes, subgraphs) if served else None
        self.conversation = Conversation(svc, run.session_id)
        self.project: dict[str, Any] | None = None
        self.pending: list[Message] = []
        #: The text streamed so far of each model answer (by its wire id).
        self.streamed: dict[str, str] = {}

    async def values_at(self, event: Event) -> dict[str, Any]:
        if self.project is None:
            self.project = (await self.svc.get_session(self.run.session_id)).project
        return values_of(self.project, await self.conversation.as_of(event.created_at))

    def _meta(self, step_id: Any) -> dict[str, Any]:
        return {
            "run_id": self.run.id,
            "thread_id": self.run.session_id,
            "langgraph_node": self.run.agent,
            "step_id": step_id,
            "tags": [],
        }

    def _message_parts(self, message: Message) -> list[tuple[str, Any]]:
        """A message the run's agent wrote (a run's input is not streamed)."""
        out: list[tuple[str, Any]] = []
        if is_run_output(message):
            self.pending.append(message)
            wire, meta = lc_message(message), self._meta(message.metadata.get("step_id"))
            if "messages-tuple" in self.modes:
                out.append(("messages", [wire, meta]))
            if "messages" in self.modes:
                if self.streamed.pop(wire_id(message), None) is None:
                    out.append(("messages/metadata", {wire["id"]: {"metadata": meta}}))
                out.append(("messages/complete", [wire]))
        return out

    def _chunk_parts(self, event: Event) -> list[tuple[str, Any]]:
        """A piece of a model's streamed answer (step.model_chunk)."""
        step_id, text = str(event.data.get("step_id")), str(event.data.get("text") or "")
        out: list[tuple[str, Any]] = []
        if "messages-tuple" in self.modes:
            out.append(("messages", [lc_chunk(step_id, text), self._meta(step_id)]))
        if "messages" in self.modes:
            if step_id not in self.streamed:
                out.append(("messages/metadata", {step_id: {"metadata": self._meta(step_id)}}))
            so_far = self.streamed.get(step_id, "") + text
            partial = {**lc_chunk(step_id, so_far), "type": "ai"}
            del partial["tool_call_chunks"]
            out.append(("messages/partial", [partial]))
        self.streamed[step_id] = self.streamed.get(step_id, "") + text
        return out

    async def parts(self, event: Event) -> list[tuple[str, Any]]:
        if self.graph is not None:
            return self._graph_parts(event, self.graph)
        kind, modes = event.type, self.modes
        out: list[tuple[str, Any]] = []
        if kind == EventType.RUN_STARTED:
            if "values" in modes:
                out.append(("values", await self.values_at(event)))
        elif kind == EventType.MESSAGE_ADDED:
            out += self._message_parts(event.message)
        elif kind == EventType.MODEL_CHUNK:
            out += self._chunk_parts(event)
        elif kind in STEP_END_EVENTS:
            out += await self._step_parts(event)
        elif kind == EventType.RUN_WAITING:
            interrupt = interrupt_of(event.run)
            if "updates" in modes:
                out.append(("updates", {"__interrupt__": [interrupt]}))
            if "values" in modes:
                values = await self.values_at(event)
                out.append(("values", {**values, "__interrupt__": [interrupt]}))
        elif kind in (EventType.RUN_FAILED, EventType.RUN_TIMED_OUT):
            error = run_error(event.run)
            out.append(("error", error or {"error": "Error", "message": "the run failed"}))
        return out

    async def _step_parts(self, event: Event) -> list[tuple[str, Any]]:
        """A finished step: what it wrote (updates) and the values after it, or, for an event
        the agent wrote into its stream (ctx.emit), that event (custom)."""
        step, modes = event.step, self.modes
        out: list[tuple[str, Any]] = []
        if _is_custom(step):
            if "custom" in modes:
                out.append(("custom", step.input))
            return out
        out += [part for m in step_messages(step) for part in self._message_parts(m)]
        if "updates" in modes:
            out.append(("updates", {step.name: step_update(step, self.pending)}))
        if "values" in modes:
            out.append(("values", await self.values_at(event)))
        self.pending = []
        return out

    def _graph_parts(self, event: Event, graph: GraphParts) -> list[tuple[str, Any]]:
        if event.type in STEP_END_EVENTS:
            return graph.of(event.step)
        if event.type in (EventType.RUN_FAILED, EventType.RUN_TIMED_OUT):
            error = run_error(event.run)
            return [("error", error or {"error": "Error", "message": "the run failed"})]
        return []


def _is_custom(step: Step) -> bool:
    """Whether the step is an event the agent wrote into its stream (ctx.emit)."""
    return step.kind is StepKind.NOTE and step.name == CUSTOM_STEP


async def frames(
    svc: Service,
    plan: Plan,
    *,
    heartbeat: float,
    draining: threading.Event,
    alive: Alive | None = None,
) -> AsyncIterator[bytes]:
    """The SSE body of one run's stream (see the module docstring); it ends when alive() stops
    being true (checked at every heartbeat interval: the key was revoked)."""
    run = plan.run
    loop = asyncio.get_running_loop()
    finished = False
    if plan.after is None:
        after_id, skip = plan.start_after, None
    else:
        event_id, index = plan.after
        after_id, skip = (event_id, None) if index is None else (event_id - 1, (event_id, index))
    translator = _Translator(svc, run, plan.modes)
    try:
        if plan.after is None:
            yield frame(
                "metadata",
                {"run_id": run.id, "attempt": run.attempt},
                str(plan.start_after) if plan.resumable else None,
            )
        if await _caught_up_waiting(svc, run.id, after_id):
            finished = True
            return
        last_sent = loop.time()
        check = Recheck(alive, heartbeat, last_sent)
        stream = svc.stream_events(
            run_id=run.id, after_id=after_id, heartbeat=min(heartbeat, _TICK)
        )
        async with aclosing(stream):
            async for event in stream:
                if draining.is_set():
                    break  # the server is stopping: the client reconnects elsewhere
                if await check.ended(loop.time()):
                    break  # the key was revoked: its streams end
                if event is None:
                    if loop.time() - last_sent >= heartbeat:
                        last_sent = loop.time()
                        yield HEARTBEAT
                    continue
                for index, (name, data) in enumerate(await translator.parts(event)):
                    if skip is not None and event.id == skip[0] and index <= skip[1]:
                        continue
                    last_sent = loop.time()
                    yield frame(name, data, f"{event.id}-{index}" if plan.resumable else None)
                if event.type in TERMINAL_RUN_EVENTS:
                    break
                if event.type == EventType.RUN_WAITING and await _still_waiting(
                    svc, run.id, event.id
                ):
                    break
        finished = True
    except NotFound:
        finished = True  # the run was deleted (rolled back) while streaming
    finally:
        if not finished and plan.cancel_on_disconnect:
            with anyio.CancelScope(shield=True):
                await _cancel(svc, run.id)


async def _caught_up_waiting(svc: Service, run_id: str, after_id: int) -> bool:
    """True when the run waits for a person and the client has had everything up to it."""
    if (await svc.get_run(run_id)).status is not RunStatus.WAITING:
        return False
    return not await svc.list_events(run_id=run_id, after_id=after_id, limit=1)


async def _still_waiting(svc: Service, run_id: str, event_id: int) -> bool:
    """True when the run waits for a person now, with nothing after this run.waiting event."""
    if await svc.list_events(run_id=run_id, after_id=event_id, limit=1):
        return False
    return (await svc.get_run(run_id)).status is RunStatus.WAITING


async def _cancel(svc: Service, run_id: str) -> None:
    with suppress(InvalidTransition, NotFound):
        await svc.cancel_run(run_id, reason="the client streaming it disconnected")


async def thread_start(svc: Service, thread_id: str, last_event_id: str | None) -> Position:
    """Where a thread's stream starts: after Last-Event-ID, else after the thread's newest
    event (fixed before the answer starts, so a run created once it has, is in it)."""
    after = parse_last_event_id(last_event_id)
    if after is not None:
        return after
    return await _last_event_id(svc, thread_id), None


async def _last_event_id(svc: Service, thread_id: str) -> int:
    """The id of the thread's newest event (0 for none)."""
    last = 0
    while True:
        events = await svc.list_events(session_id=thread_id, after_id=last, limit=1000)
        if events:
            last = events[-1].id
        if len(events) < 1000:
            return last


class _ThreadTranslator:
    """Turns a thread's events into the frames of its runs: ``metadata`` when a run is
    created, then the run's frames in its own stream modes."""

    def __init__(self, svc: Service) -> None:
        self.svc = svc
        self.runs: dict[str, _Translator] = {}

    async def parts(self, event: Event) -> list[tuple[str, Any]]:
        if event.run_id is None:
            return []  # (a change made outside a run)
        translator = self.runs.get(event.run_id)
        if translator is None:
            try:
                run = await self.svc.get_run(event.run_id)
            except NotFound:
                return []  # deleted since (rolled back)
            kwargs = lg_info(run).get("kwargs") or {}
            served = GRAPH_STREAM_MODES if graph_agent(self.svc.agents, run.agent) else STREAM_MODES
            modes = tuple(stream_modes(kwargs.get("stream_mode"), served=served)) or ("values",)
            translator = self.runs[run.id] = _Translator(self.svc, run, modes)
        out: list[tuple[str, Any]] = []
        if event.type == EventType.RUN_CREATED:
            out.append(("metadata", {"run_id": event.run_id, "attempt": translator.run.attempt}))
        out += await translator.parts(event)
        if event.type in TERMINAL_RUN_EVENTS:
            del self.runs[event.run_id]
        return out


async def thread_frames(
    svc: Service,
    thread_id: str,
    *,
    after: Position,
    heartbeat: float,
    draining: threading.Event,
    alive: Alive | None = None,
) -> AsyncIterator[bytes]:
    """The SSE body of a thread's stream: the runs created in it after the position (see
    thread_start), each as ``metadata`` and then its own stream; every frame has an ``id:``.
    It lasts until the client leaves (or the server drains, or the key is revoked)."""
    event_id, index = after
    after_id, skip = (event_id, None) if index is None else (event_id - 1, (event_id, index))
    loop = asyncio.get_running_loop()
    last_sent = loop.time()
    check = Recheck(alive, heartbeat, last_sent)
    translator = _ThreadTranslator(svc)
    stream = svc.stream_events(
        session_id=thread_id, after_id=after_id, heartbeat=min(heartbeat, _TICK)
    )
    async with aclosing(stream):
        async for event in stream:
            if draining.is_set() or await check.ended(loop.time()):
                break
            if event is None:
                if loop.time() - last_sent >= heartbeat:
                    last_sent = loop.time()
                    yield HEARTBEAT
                continue
            for index, (name, data) in enumerate(await translator.parts(event)):
                if skip is not None and event.id == skip[0] and index <= skip[1]:
                    continue
                last_sent = loop.time()
                yield frame(name, data, f"{event.id}-{index}")
