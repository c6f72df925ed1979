"""Runs: a ``Runner.run`` with a TetherSession becomes a tether run of that session.

Through the SDK's own extension point, a tracing processor (registered once, the first time a
Runner calls a TetherSession): the Runner calls the session inside its run's trace, passing its
context wrapper, which tells which trace is which session's run. That run starts running at
once (runtime.external_run); the trace's spans become its steps as they end — model calls
(with usage), tool calls (arguments and result together), handoffs and guardrail results as
notes — and the end of the Runner call (its task span, else the trace) ends it: failed with
the error an agent span carries; waiting when tool calls await a person's approval (the
interruptions of human-in-the-loop); else completed. Continuing with the SDK's ``RunState``
(same trace) resumes the waiting run; any other Runner call on the session supersedes it.

Writes go through one thread of their own, in order, so a run is recorded whatever happens to
the loop the Runner ran on; ``flush`` waits for them. Not recorded: runs with tracing disabled
(the conversation is still kept), and runs on a ``tether.connect`` handle (the HTTP API records
no runs executed elsewhere).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from agents.tracing import (
    AgentSpanData,
    FunctionSpanData,
    GenerationSpanData,
    GuardrailSpanData,
    HandoffSpanData,
    ResponseSpanData,
    Span,
    TaskSpanData,
    Trace,
    TracingProcessor,
    add_trace_processor,
    get_current_trace,
)
from agents.tracing.traces import NoOpTrace

from tether.core.run import ErrorInfo, IfBusy
from tether.core.status import RunStatus
from tether.core.step import StepKind
from tether.core.usage import Usage
from tether.integrations.openai_agents._link import Link
from tether.runtime.external_run import ExternalRun
from tether.runtime.loop_thread import LoopThread
from tether.runtime.service import Service

log = logging.getLogger("tether.integrations.openai_agents")
Job = Callable[[], Awaitable[None]]
#: The agent name tether shows for runs of the Agents SDK.
AGENT = "openai-agents"


Step = tuple[StepKind, str, Any, Any, Usage | None, ErrorInfo | None]


class _Traced:
    """One Runner call's run: where it is written, and what ends it."""

    def __init__(self, link: Link, session_id: str, trace_id: str, wrapper: object) -> None:
        self.link = link
        self.session_id = session_id
        self.trace_id = trace_id
        self.wrapper = wrapper
        self.run: ExternalRun | None = None
        self.error: ErrorInfo | None = None
        #: Tool calls that ended without a result: run, or awaiting approval (known at the end).
        self.held: list[Step] = []


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

    def attach(self, link: Link, session_id: str, wrapper: object) -> None:
        """The Runner called a session (tether session_id) with its context wrapper: the
        current trace, if any, is that session's run."""
        trace = get_current_trace()
        if trace is None or isinstance(trace, NoOpTrace) or not isinstance(link.backend, Service):
            return
        with self._lock:
            known = self._current(trace.trace_id)
            if known is not None and known.wrapper in (wrapper, None):
                known.wrapper = wrapper
                return
            traced = _Traced(link, session_id, trace.trace_id, wrapper)
            self._traced[trace.trace_id] = traced
        if known is not None:  # another Runner call in one trace of the caller's
            self._end(known)
        self._start(traced, trace.name)

    # -- the SDK's tracing processor -----------------------------------------------------------

    def on_trace_start(self, trace: Trace) -> None:
        return None

    def on_trace_end(self, trace: Trace) -> None:
        with self._lock:
            traced = self._traced.pop(trace.trace_id, None)
        if traced is not None:
            self._end(traced)

    def on_span_start(self, span: Span[Any]) -> None:
        return None

    def on_span_end(self, span: Span[Any]) -> None:
        data = span.span_data
        over = isinstance(data, TaskSpanData) and span.parent_id is None
        with self._lock:
            traced = self._current(span.trace_id)
            if traced is not None and over:
                del self._traced[span.trace_id]  # the Runner call is over
        if traced is None:
            return
        error = _error(span)
        if over:
            self._end(traced)
        elif isinstance(data, AgentSpanData):
            traced.error = error or traced.error
        elif (step := span_step(data)) is not None:
            kind, _, _, output, _ = step
            if kind is StepKind.TOOL_CALL and output is None and error is None:
                traced.held.append((*step, error))
                return
            steps, traced.held = [*traced.held, (*step, error)], []
            self._submit(lambda: _record(traced, steps))

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
            traced = self._traced[trace_id] = _Traced(link, session_id, trace_id, None)
            self._start(traced, None)
        return traced

    def _start(self, traced: _Traced, name: str | None) -> None:
        link, service = traced.link, traced.link.backend
        assert isinstance(service, Service)

        async def start() -> None:
            begin = _begin(service, traced.session_id, name or "Agent workflow", traced.trace_id)
            traced.run = await link.call(begin)

        self._submit(start)

    def _end(self, traced: _Traced) -> None:
        pending = pending_approvals(traced.wrapper)  # read now: the Runner goes on with it
        if pending:  # the tool calls held are the ones awaiting approval: not run yet
            traced.held = []
            with self._lock:
                self._waiting[traced.trace_id] = (traced.link, traced.session_id)
        steps, traced.held = traced.held, []
        self._submit(lambda: _finish(traced, steps, pending))

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


async def _begin(service: Service, session_id: str, name: str, trace_id: str) -> ExternalRun:
    """The run of a Runner call: the session's run waiting in this trace when the SDK
    continues it from a RunState, else a new run (superseding one left waiting)."""
    waiting = await service.list_runs(session_id, status=RunStatus.WAITING, limit=10)
    for run in waiting.data:
        if run.metadata.get("trace_id") == trace_id:
            return await ExternalRun.resume(service, run.id, {"continued_by": "RunState"})
    return await ExternalRun.start(
        service,
        session_id,
        name,
        agent=AGENT,
        metadata={"framework": AGENT, "trace_id": trace_id},
        if_busy=IfBusy.INTERRUPT,
    )


async def _record(traced: _Traced, steps: list[Step]) -> None:
    run = traced.run
    if run is None:
        return
    for kind, name, given, output, usage, error in steps:
        await traced.link.call(run.step(kind, name, given, output=output, error=error, usage=usage))


async def _finish(traced: _Traced, steps: list[Step], pending: list[str]) -> None:
    await _record(traced, steps)
    run = traced.run
    if run is None:
        return
    if traced.error is not None:
        await traced.link.call(run.finish(RunStatus.FAILED, error=traced.error))
    elif pending:
        prompt = "approve or reject the tool calls"
        await traced.link.call(run.wait("approval", prompt, tool_call_ids=pending))
    else:
        await traced.link.call(run.finish(RunStatus.COMPLETED))


def pending_approvals(wrapper: object) -> list[str]:
    """The ids of the tool calls a Runner call left awaiting approval (its interruptions),
    from its context wrapper's record of tool invocations (openai-agents 0.24)."""
    records = getattr(wrapper, "_tool_invocations", None)
    if not isinstance(records, dict):
        return []
    return sorted(
        str(cid) for cid, record in records.items() if not getattr(record, "completed", True)
    )


def span_step(data: Any) -> tuple[StepKind, str, Any, Any, Usage | None] | None:
    """The step a span stands for (kind, name, input, output, usage), or None."""
    if isinstance(data, FunctionSpanData):
        return StepKind.TOOL_CALL, data.name, _json(_parsed(data.input)), _json(data.output), None
    if isinstance(data, GenerationSpanData):
        usage = data.usage or {}
        return (
            StepKind.MODEL_CALL,
            data.model or "model",
            None,
            _json(data.output),
            Usage(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0), 1),
        )
    if isinstance(data, ResponseSpanData):
        response = data.response
        used = getattr(response, "usage", None)
        return (
            StepKind.MODEL_CALL,
            getattr(response, "model", None) or "model",
            None,
            {"response_id": getattr(response, "id", None)},
            Usage(getattr(used, "input_tokens", 0) or 0, getattr(used, "output_tokens", 0) or 0, 1),
        )
    if isinstance(data, HandoffSpanData):
        handoff = {"from_agent": data.from_agent, "to_agent": data.to_agent}
        return StepKind.NOTE, "handoff", handoff, None, None
    if isinstance(data, GuardrailSpanData):
        return StepKind.NOTE, "guardrail", {"name": data.name}, {"triggered": data.triggered}, None
    return None


#: The error type a failed span of each kind gives its step or run.
_ERROR_TYPES = {
    AgentSpanData: "agent_error",
    FunctionSpanData: "tool_error",
    GenerationSpanData: "model_error",
    ResponseSpanData: "model_error",
}


def _error(span: Span[Any]) -> ErrorInfo | None:
    """The error a span ended with (the SDK's message, with its detail when it traced one)."""
    found = span.error
    if not found:
        return None
    message = str(found.get("message") or "error")
    data = found.get("data")
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        message = f"{message}: {data['error']}"
    return ErrorInfo(type=_ERROR_TYPES.get(type(span.span_data), "error"), message=message)


def _parsed(arguments: Any) -> Any:
    """A tool's arguments: the JSON text parsed (as given when it is not JSON)."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _json(value: Any) -> Any:
    """value as tether stores it: anything that is not JSON becomes its text."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return str(value)
    return value


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
