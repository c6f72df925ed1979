"""Runs: a ``Runner.run`` with a TetherSession becomes a tether run of that session.

Through the SDK's own extension point, a tracing processor (registered once, the first time a
Runner calls a TetherSession): the Runner calls the session inside its run's trace, passing its
context wrapper, which tells which trace is which session's run. That run starts running at
once, held by this process (runtime.held_run: on a local database and over HTTP alike); the
trace's spans become its steps as they end — model calls (with usage), tool calls (arguments
and result together), handoffs and guardrail results as notes — and the end of the Runner call
(its task span, else the trace) ends it: failed with the error an agent span carries; waiting
when tool calls await a person's approval (the interruptions of human-in-the-loop); else
completed. Continuing with the SDK's ``RunState`` (same trace) resumes the waiting run; any
other Runner call on the session supersedes it.

Writes go through one thread of their own, in order, so a run is recorded whatever happens to
the loop the Runner ran on; ``flush`` waits for them. Not recorded: runs with tracing disabled
(the conversation is still kept).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from agents.tracing import (
    AgentSpanData,
    Span,
    TaskSpanData,
    Trace,
    TracingProcessor,
    TurnSpanData,
    add_trace_processor,
    get_current_trace,
)
from agents.tracing.traces import NoOpTrace

from tether.core.run import ErrorInfo, IfBusy
from tether.core.status import RunStatus
from tether.core.step import StepKind
from tether.integrations.openai_agents._link import Link
from tether.integrations.openai_agents.spans import StepRecord, span_error, span_step, usage_of
from tether.runtime import limits
from tether.runtime.backend import Backend
from tether.runtime.held_run import HeldRun
from tether.runtime.loop_thread import LoopThread
from tether.store.base import UNSET

log = logging.getLogger("tether.integrations.openai_agents")
Job = Callable[[], Awaitable[None]]
#: The agent name tether shows for runs of the Agents SDK.
AGENT = "openai-agents"


class _Traced:
    """One Runner call's run: where it is written, what it has not written yet, what ends it."""

    def __init__(
        self, link: Link, session_id: str, trace_id: str, wrapper: object, name: str | None
    ) -> None:
        self.link = link
        self.session_id = session_id
        self.trace_id = trace_id
        self.wrapper = wrapper
        #: The trace's name: the goal of a run whose input the session never saw.
        self.name = name
        #: Whether its start was submitted (at its input, else at its first step or its end).
        self.started = False
        #: The user's text (the run's goal) and the newest assistant text (its output).
        self.goal: str | None = None
        self.output: str | None = None
        self.run: HeldRun | None = None
        self.error: ErrorInfo | None = None
        #: The steps of each turn still going (written when it ends, with its usage).
        self.turns: dict[str, list[StepRecord]] = {}
        #: Tool calls that ended with no result: run, or awaiting approval (known later).
        self.held: list[StepRecord] = []


class RunRecorder(TracingProcessor):
    """Turns the traces of Runner calls on TetherSessions into tether runs."""

    def __init__(self) -> None:
        self._traced: dict[str, _Traced] = {}
        #: Traces whose run was left waiting here: a RunState continues them (same trace).
        self._waiting: dict[str, tuple[Link, str]] = {}
        self._lock = threading.Lock()
        self._writer_lock = threading.Lock()
        self._writer: LoopThread | None = None
        self._queue: asyncio.Queue[Job] | None = None

    def attach(
        self, link: Link, session_id: str, wrapper: object, items: list[Any] | None = None
    ) -> None:
        """The Runner called a session (tether session_id) with its context wrapper, adding
        items or not: the current trace, if any, is that session's run. The run starts with
        the items the Runner adds first (its input: the run's goal)."""
        trace = get_current_trace()
        if trace is None or isinstance(trace, NoOpTrace):
            return
        superseded = None
        with self._lock:
            traced = self._current(trace.trace_id)
            if traced is not None and traced.wrapper in (wrapper, None):
                traced.wrapper = wrapper
            else:  # a new Runner call (perhaps another one in one trace of the caller's)
                superseded = traced
                traced = _Traced(link, session_id, trace.trace_id, wrapper, trace.name)
                self._traced[trace.trace_id] = traced
        if superseded is not None:
            self._end(superseded)
        if items is not None:
            said = [t for t in map(_said, items) if t is not None]
            traced.goal = traced.goal or next((text for role, text in said if role == "user"), None)
            answers = [text for role, text in said if role == "assistant"]
            traced.output = answers[-1] if answers else traced.output
            self._begin(traced)

    # -- the SDK's tracing processor -----------------------------------------------------------

    def on_trace_start(self, trace: Trace) -> None:
        return None

    def on_trace_end(self, trace: Trace) -> None:
        with self._lock:
            traced = self._traced.pop(trace.trace_id, None)
        if traced is not None:
            self._end(traced)

    def on_span_start(self, span: Span[Any]) -> None:
        if isinstance(span.span_data, TurnSpanData):
            with self._lock:
                traced = self._current(span.trace_id)
            if traced is not None:
                traced.turns[span.span_id] = []

    def on_span_end(self, span: Span[Any]) -> None:
        data = span.span_data
        over = isinstance(data, TaskSpanData) and span.parent_id is None
        with self._lock:
            traced = self._current(span.trace_id)
            if traced is not None and over:
                del self._traced[span.trace_id]  # the Runner call is over
        if traced is None:
            return
        if over:
            self._end(traced)
        elif isinstance(data, AgentSpanData):
            traced.error = span_error(span) or traced.error
        elif isinstance(data, TurnSpanData):
            self._turn_ended(traced, span.span_id, data)
        elif (step := span_step(span)) is not None:
            turn = traced.turns.get(span.parent_id or "")
            if turn is not None:
                turn.append(step)
            else:
                self._record(traced, [step])

    def shutdown(self) -> None:
        self.flush()

    def force_flush(self) -> None:
        self.flush()

    # -- runs ----------------------------------------------------------------------------------

    def _current(self, trace_id: str) -> _Traced | None:
        """The trace's Runner call (under the lock); one that continues a waiting run starts
        with its first span (the approved tool calls run before the session is called)."""
        traced = self._traced.get(trace_id)
        if traced is None and trace_id in self._waiting:
            link, session_id = self._waiting.pop(trace_id)
            traced = self._traced[trace_id] = _Traced(link, session_id, trace_id, None, None)
            self._begin(traced)
        return traced

    def _begin(self, traced: _Traced) -> None:
        """Submit the start of traced's run, once (before anything else written of it)."""
        if traced.started:
            return
        traced.started = True
        link, backend = traced.link, traced.link.backend
        goal = (traced.goal or traced.name or "Agent workflow")[: limits.MAX_GOAL]

        async def start() -> None:
            begin = _begin(backend, traced.session_id, goal, traced.trace_id)
            traced.run = await link.call(begin)

        self._submit(start)

    def _turn_ended(self, traced: _Traced, span_id: str, turn: TurnSpanData) -> None:
        """A turn's steps, its model call given the turn's usage when its span had none (and
        recorded from the turn when the model traced no span of its own)."""
        steps = traced.turns.pop(span_id, [])
        models = [s for s in steps if s.kind is StepKind.MODEL_CALL]
        if not models:
            models = [StepRecord(StepKind.MODEL_CALL, "model")]
            steps.insert(0, models[0])
        if all(m.usage is None for m in models):
            models[0].usage = usage_of(turn.usage)
        for model in models:
            model.input = model.input or {"agent": turn.agent_name, "turn": turn.turn}
        self._record(traced, steps)

    def _record(self, traced: _Traced, steps: list[StepRecord]) -> None:
        """Write steps after the ones held; tool calls left without a result at the end are
        held until what follows tells whether they await approval."""
        steps = [*traced.held, *steps]
        cut = len(steps)
        while cut and steps[cut - 1].unanswered:
            cut -= 1
        ready, traced.held = steps[:cut], steps[cut:]
        if ready:
            self._begin(traced)
            self._submit(lambda: _write(traced, ready))

    def _end(self, traced: _Traced) -> None:
        pending = pending_approvals(traced.wrapper)  # read now: the Runner goes on with it
        steps = [step for turn in traced.turns.values() for step in turn]
        if pending:  # the tool calls held are the ones awaiting approval: not run yet
            traced.held = []
            with self._lock:
                self._waiting[traced.trace_id] = (traced.link, traced.session_id)
        steps, traced.held, traced.turns = [*traced.held, *steps], [], {}
        self._begin(traced)
        output = traced.output
        self._submit(lambda: _finish(traced, steps, pending, output))

    # -- the writer ----------------------------------------------------------------------------

    def flush(self, timeout: float | None = 30.0) -> None:
        """Wait until every write submitted so far is done (from any thread but the writer's)."""
        if self._writer is None or self._queue is None:
            return
        done = asyncio.run_coroutine_threadsafe(self._queue.join(), self._writer.loop)
        done.result(timeout)

    def _submit(self, job: Job) -> None:
        with self._writer_lock:
            if self._writer is None:
                self._writer = LoopThread("tether-agents-runs")
                self._queue = asyncio.Queue()
                asyncio.run_coroutine_threadsafe(self._drain(self._queue), self._writer.loop)
            writer, queue = self._writer, self._queue
        assert queue is not None
        writer.loop.call_soon_threadsafe(queue.put_nowait, job)

    @staticmethod
    async def _drain(queue: asyncio.Queue[Job]) -> None:
        while True:
            job = await queue.get()
            try:
                await job()
            except Exception as exc:  # recording never breaks the agent's run
                log.warning("could not record an Agents SDK run in tether: %s", exc)
            finally:
                queue.task_done()


async def _begin(backend: Backend, session_id: str, goal: str, trace_id: str) -> HeldRun:
    """The run of a Runner call: the session's run waiting in this trace when the SDK
    continues it from a RunState, else a new run (superseding one left waiting)."""
    waiting = await backend.list_runs(session_id, status=RunStatus.WAITING, limit=10)
    for run in waiting.data:
        if run.metadata.get("trace_id") == trace_id:
            return await HeldRun.resume(backend, run.id, {"continued_by": "RunState"})
    return await HeldRun.start(
        backend,
        session_id,
        goal,
        agent=AGENT,
        metadata={"framework": AGENT, "trace_id": trace_id},
        if_busy=IfBusy.INTERRUPT,
    )


async def _write(traced: _Traced, steps: list[StepRecord]) -> None:
    run = traced.run
    if run is None:
        return
    for s in steps:
        recorded = run.step(s.kind, s.name, s.input, output=s.output, error=s.error, usage=s.usage)
        await traced.link.call(recorded)


async def _finish(
    traced: _Traced, steps: list[StepRecord], pending: list[str], output: str | None
) -> None:
    await _write(traced, steps)
    run = traced.run
    if run is None:
        return
    if traced.error is not None:
        await traced.link.call(run.finish(RunStatus.FAILED, error=traced.error))
    elif pending:
        prompt = "approve or reject the tool calls"
        await traced.link.call(run.wait("approval", prompt, tool_call_ids=pending))
    else:
        final = UNSET if output is None else {"text": output}
        await traced.link.call(run.finish(RunStatus.COMPLETED, output=final))


def _said(item: Any) -> tuple[str, str] | None:
    """(role, text) of a message item (its text parts joined), None for other items."""
    if not isinstance(item, dict) or item.get("type", "message") != "message":
        return None
    role, content = item.get("role"), item.get("content")
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict)]
        content = "\n".join(t for t in texts if isinstance(t, str))
    if not isinstance(role, str) or not isinstance(content, str) or not content:
        return None
    return role, content


def pending_approvals(wrapper: object) -> list[str]:
    """The ids of the tool calls a Runner call left awaiting approval (its interruptions),
    from its context wrapper's record of tool invocations (openai-agents 0.24)."""
    records = getattr(wrapper, "_tool_invocations", None)
    if not isinstance(records, dict):
        return []
    return sorted(
        str(cid) for cid, record in records.items() if not getattr(record, "completed", True)
    )


_recorder: RunRecorder | None = None
_recorder_lock = threading.Lock()


def flush() -> None:
    """Wait for the runs recorded so far to be written (nothing to do before the first)."""
    if _recorder is not None:
        _recorder.flush()


def recorder() -> RunRecorder:
    """The process's recorder, registered with the SDK's tracing on first use."""
    global _recorder
    with _recorder_lock:
        if _recorder is None:
            _recorder = RunRecorder()
            add_trace_processor(_recorder)
        return _recorder
