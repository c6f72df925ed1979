"""RunContext: what an agent works with — goal, input, context, memory, tools, model, steps.

Every step the agent records gets a *position* (1, 2, 3 … in the order the agent's code asks for
them). When a run is resumed or retried, its agent runs again from the top and each position
that was already recorded is replayed from the store instead of executed: a completed tool call
is never repeated, a model is not asked twice, a person is not asked twice. Agents must therefore
be deterministic given their recorded step results (wall-clock time, randomness and I/O belong in
steps). A tool call whose result was never recorded (the worker died mid-call) is ``in_doubt``:
the agent is told instead of the call being repeated.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterator,
    Mapping,
    MutableMapping,
    Sequence,
)
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tether.core.clock import Clock
from tether.core.errors import ModelError, ReplayMismatch, UsageError
from tether.core.memory import MemoryItem, MemoryScope
from tether.core.message import Role
from tether.core.redaction import DEFAULT_REDACTOR, Redactor
from tether.core.run import ErrorInfo, Run
from tether.core.serde import from_data, to_data
from tether.core.session import Session
from tether.core.status import StepStatus
from tether.core.step import Step, StepKind
from tether.core.usage import Usage
from tether.runtime.confinement import Confinement
from tether.runtime.instruments import Instruments, ModelCall, ToolInvocation
from tether.runtime.models.base import (
    Model,
    ModelResponse,
    StreamingModel,
    ToolCall,
    as_messages,
)
from tether.runtime.models.catalog import HOW_TO_CONFIGURE
from tether.runtime.tools import Tool, ToolError, ToolRegistry
from tether.store.base import Store

if TYPE_CHECKING:
    from tether.runtime.service import Service

#: The name of the note steps ``RunContext.emit`` records (the run's custom stream events).
CUSTOM_STEP = "custom"


class RunSuspended(BaseException):
    """The run is now waiting for a person; unwinds the agent (never caught by ``except
    Exception``)."""


class ToolInDoubt(Exception):
    """A tool call's outcome is unknown: it started, but its result was never recorded."""

    def __init__(self, *args: object, step_id: str | None = None) -> None:
        super().__init__(*args)
        self.step_id = step_id


class StepFailed(Exception):
    """A replayed ``ctx.step()`` block had failed: the recorded error, raised again."""

    def __init__(self, error: ErrorInfo) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool call gave: an output, or an error message for the model."""

    ok: bool
    output: Any = None
    error: str | None = None
    in_doubt: bool = False
    step_id: str | None = None

    def for_model(self) -> str:
        """The text a model is shown as the call's result (``ERROR: …`` when it failed)."""
        if self.ok:
            return self.output if isinstance(self.output, str) else _json_text(self.output)
        return f"ERROR: {self.error}"

    def to_message(self, call: ToolCall | str) -> dict[str, Any]:
        """The tool message answering call (a ToolCall or its id), for the next model call:
        ``{"role": "tool", "tool_call_id": …, "content": self.for_model()}``."""
        call_id = call.id if isinstance(call, ToolCall) else call
        return {"role": "tool", "tool_call_id": call_id, "content": self.for_model()}


#: The metadata key tying an assistant message to the model_call step whose answer it says.
MODEL_STEP_KEY = "model_step_id"
#: What waiting_for holds besides a wait's details (the details cannot replace them).
_WAIT_FIELDS = frozenset({"kind", "prompt", "step_id", "held"})
_APPROVALS = {"y", "yes", "ok", "approve", "approved", "true", "allow"}


class StepHandle:
    """The step a ``ctx.step()`` block records; ``replayed`` blocks should skip their work."""

    def __init__(self, recorded: Step | None) -> None:
        self.step = recorded
        self.replayed = recorded is not None
        self.output: Any = None if recorded is None else recorded.output
        self.usage: Usage | None = None


class MemoryView(MutableMapping[str, Any]):
    """One memory scope as a mutable mapping (``dict(view)``, ``view.items()``, ``key in view``
    all work). Reads come from a snapshot taken when the run (re)started plus this run's own
    writes; writes are persisted in order before the agent's next step. scope_id None: a scope
    the run has none of (the app scope of a session without an app), empty and refusing
    writes."""

    def __init__(
        self, ctx: RunContext, scope: MemoryScope, scope_id: str | None, items: list[MemoryItem]
    ) -> None:
        self._ctx = ctx
        self._scope = scope
        self._scope_id = scope_id or ""
        self._writable = scope_id is not None
        self._items: dict[str, Any] = {i.key: i.value for i in items if not i.namespace}

    def _check_writable(self) -> None:
        if not self._writable:
            raise UsageError(
                f"session {self._ctx.session.id} belongs to no app: it has no app memory "
                "(create the session with app=…)"
            )

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._check_writable()
        self._items[key] = value
        self._ctx._enqueue_write(
            lambda: self._ctx._store.put_memory(
                scope=self._scope,
                scope_id=self._scope_id,
                key=key,
                value=self._ctx._clean(value),
                owner=self._ctx.run.owner,
                now=self._ctx._clock.now(),
                source_run_id=self._ctx.run.id,
                worker_id=self._ctx.worker_id,
            )
        )

    def __delitem__(self, key: str) -> None:
        self._check_writable()
        del self._items[key]
        self._ctx._enqueue_write(
            lambda: self._ctx._store.delete_memory(
                scope=self._scope,
                scope_id=self._scope_id,
                key=key,
                owner=self._ctx.run.owner,
                now=self._ctx._clock.now(),
                source_run_id=self._ctx.run.id,
                worker_id=self._ctx.worker_id,
            )
        )

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def to_dict(self) -> dict[str, Any]:
        """A copy of the scope as a plain dict (the same as ``dict(view)``)."""
        return dict(self._items)

    def __repr__(self) -> str:
        return f"MemoryView({self._scope.value}, {self._items!r})"


class Memory:
    """The scopes an agent sees (run, session, user, and app: the memory every session of
    the session's app shares), and promotion from run to session."""

    def __init__(
        self,
        ctx: RunContext,
        run: MemoryView,
        session: MemoryView,
        user: MemoryView,
        app: MemoryView,
    ):
        self._ctx = ctx
        self.run = run
        self.session = session
        self.user = user
        self.app = app

    async def promote(self, key: str, *, as_key: str | None = None) -> MemoryItem:
        """Copy this run's working-memory item into session memory (recorded with this run)."""
        await self._ctx.flush()
        item = await self._ctx._store.promote_memory(
            run_id=self._ctx.run.id,
            key=key,
            owner=self._ctx.run.owner,
            now=self._ctx._clock.now(),
            as_key=as_key,
            worker_id=self._ctx.worker_id,
        )
        self.session._items[item.key] = item.value
        return item


class RunContext:
    """Everything an agent gets for one run."""

    def __init__(
        self,
        *,
        store: Store,
        clock: Clock,
        run: Run,
        session: Session,
        worker_id: str,
        recorded: list[Step],
        context: dict[str, Any],
        memory: dict[MemoryScope, list[MemoryItem]],
        tools: ToolRegistry | None = None,
        model: Model | None = None,
        instruments: Instruments | None = None,
        redactor: Redactor = DEFAULT_REDACTOR,
        confinement: Confinement | None = None,
    ) -> None:
        self._store = store
        self._redactor = redactor
        self._clock = clock
        self._instruments = instruments or Instruments()
        self.run = run
        self.session = session
        self.worker_id = worker_id
        #: The assembled context the run started from (DESIGN: Context).
        self.context = context
        self.tools = tools or ToolRegistry()
        self.model = model
        #: Where workspace tools may act (the operator's workspace roots, protected files).
        self.confinement = confinement or Confinement()
        self._recorded: dict[int, Step] = {}
        for step in recorded:  # the latest attempt at each position wins
            self._recorded[step.position] = step
        self._position = 0
        self._writes: asyncio.Task[None] | None = None
        self._messages_sent = 0
        #: The latest model_call step's id and the text of its reply (see say()).
        self._last_reply: tuple[str, str | None] | None = None
        self.memory = Memory(
            self,
            MemoryView(self, MemoryScope.RUN, run.id, memory.get(MemoryScope.RUN, [])),
            MemoryView(self, MemoryScope.SESSION, session.id, memory.get(MemoryScope.SESSION, [])),
            MemoryView(self, MemoryScope.USER, run.owner, memory.get(MemoryScope.USER, [])),
            MemoryView(self, MemoryScope.APP, session.app, memory.get(MemoryScope.APP, [])),
        )
        #: The step the most recent failure happened in (for the run's error).
        self.failed_step_id: str | None = None

    # -- convenience ---------------------------------------------------------------------------

    @property
    def goal(self) -> str:
        return self.run.goal

    @property
    def input(self) -> dict[str, Any]:
        return self.run.input

    def now(self) -> datetime:
        """The current time, from the runtime's clock (timezone-aware UTC)."""
        return self._clock.now()

    # -- redaction -----------------------------------------------------------------------------

    def _clean(self, value: Any) -> Any:
        """value as it may be stored: JSON data with its secrets redacted. The agent itself
        keeps what it had; a replayed step gives it the stored, redacted value."""
        return self._redactor.data(to_data(value))

    def _error(self, error: ErrorInfo) -> ErrorInfo:
        """error as it may be stored, its message redacted."""
        return replace(error, message=self._redactor.text(error.message))

    # -- ordered background writes -------------------------------------------------------------

    def _enqueue_write(self, write: Callable[[], Awaitable[Any]]) -> None:
        previous = self._writes

        async def chained() -> None:
            if previous is not None:
                await previous
            await write()

        task = asyncio.get_running_loop().create_task(chained())
        # Awaited by flush(); if the run ends first (cancelled, lost), the error is dropped
        # here rather than logged as never retrieved.
        task.add_done_callback(_consume)
        self._writes = task

    async def flush(self) -> None:
        """Wait until every memory write made so far is committed (raising its error, if any).

        Every operation of the context starts here, and here the agent also yields to the event
        loop once: the embedded database answers without suspending, so an agent recording
        steps in a tight loop would otherwise starve every other task (requests, timeouts,
        cancellation, shutdown)."""
        await asyncio.sleep(0)
        if self._writes is not None:
            writes, self._writes = self._writes, None
            await writes

    # -- replay --------------------------------------------------------------------------------

    def _next(self, kind: StepKind, name: str | None) -> tuple[int, Step | None]:
        """The next position and what was recorded there before, if it is to be replayed.
        ReplayMismatch when the agent now asks for another kind of step (or another name)."""
        self._position += 1
        step = self._recorded.get(self._position)
        if step is not None and (step.kind is not kind or (name is not None and step.name != name)):
            raise ReplayMismatch(
                f"replaying step {self._position}: the agent now asks for {kind.value} "
                f"{name or ''!s} but {step.kind.value} {step.name} was recorded there; an agent "
                "must take the same steps given the results recorded for it"
            )
        if step is None or step.status is StepStatus.RUNNING:
            return self._position, None
        if step.status is StepStatus.FAILED and step.error and step.error.type == "interrupted":
            return self._position, None  # interrupted by a crash, not a result: run it again
        return self._position, step

    # -- agents that keep their own durable state ---------------------------------------------

    def continue_after_recorded(self) -> list[Step]:
        """For an agent that resumes from its own durable state (a LangGraph graph from its
        checkpoint) rather than by replay: every later step is recorded after the steps
        recorded before, none of which is replayed. The recorded steps, in order."""
        recorded = [self._recorded[p] for p in sorted(self._recorded)]
        self._position = max(self._recorded, default=0)
        self._recorded = {}
        return recorded

    @property
    def service(self) -> Service:
        """The service of this run's owner, on the store the run is executed with."""
        from tether.runtime.service import Service

        return Service(self._store, clock=self._clock, owner=self.run.owner)

    async def begin_step(self, kind: StepKind | str, name: str, input: Any = None) -> Step:
        """Start a step at the next position (not replayed); end it with end_step. For work
        whose start and end are seen apart (callbacks), possibly overlapping other steps."""
        self._position += 1
        return await self._store.start_step(
            run_id=self.run.id,
            worker_id=self.worker_id,
            position=self._position,
            kind=StepKind(kind),
            name=name,
            input=self._clean(input),
            now=self._clock.now(),
        )

    async def end_step(
        self,
        step: Step,
        *,
        output: Any = None,
        error: BaseException | None = None,
        usage: Usage | None = None,
    ) -> Step:
        """Complete a step begun with begin_step (failed, when error is given)."""
        if error is not None:
            self.failed_step_id = step.id
        return await self._store.finish_step(
            step.id,
            worker_id=self.worker_id,
            status=StepStatus.COMPLETED if error is None else StepStatus.FAILED,
            now=self._clock.now(),
            output=None if error is not None else self._clean(output),
            error=None if error is None else self._error(ErrorInfo.of(error, step_id=step.id)),
            usage=usage,
        )

    # -- steps ---------------------------------------------------------------------------------

    @asynccontextmanager
    async def step(
        self, kind: StepKind | str, name: str, input: Any = None
    ) -> AsyncIterator[StepHandle]:
        """Record a block of work as one step: started on entry, completed with
        ``handle.output`` on exit, failed if the block raises. On replay, handle.replayed is
        True and handle.output holds the recorded output; a block that had failed raises
        StepFailed with the recorded error instead of running again."""
        await self.flush()
        position, recorded = self._next(StepKind(kind), name)
        if recorded is not None:
            if recorded.status is not StepStatus.COMPLETED:
                raise StepFailed(recorded.error or ErrorInfo("failed", "the step failed"))
            yield StepHandle(recorded)
            return
        step = await self._store.start_step(
            run_id=self.run.id,
            worker_id=self.worker_id,
            position=position,
            kind=StepKind(kind),
            name=name,
            input=self._clean(input),
            now=self._clock.now(),
        )
        handle = StepHandle(None)
        handle.step = step
        try:
            yield handle
        except Exception as exc:
            self.failed_step_id = step.id
            await self._store.finish_step(
                step.id,
                worker_id=self.worker_id,
                status=StepStatus.FAILED,
                now=self._clock.now(),
                error=self._error(ErrorInfo.of(exc, step_id=step.id)),
                usage=handle.usage,
            )
            raise
        await self.flush()
        handle.step = await self._store.finish_step(
            step.id,
            worker_id=self.worker_id,
            status=StepStatus.COMPLETED,
            now=self._clock.now(),
            output=self._clean(handle.output),
            usage=handle.usage,
        )

    async def note(self, name: str, data: Any = None) -> Step | None:
        """Record a note step (one write); None when replayed."""
        await self.flush()
        position, recorded = self._next(StepKind.NOTE, name)
        if recorded is not None:
            return None
        return await self._store.record_step(
            run_id=self.run.id,
            worker_id=self.worker_id,
            position=position,
            kind=StepKind.NOTE,
            name=name,
            input=self._clean(data),
            now=self._clock.now(),
        )

    async def emit(self, data: Any) -> None:
        """Write an event of the agent's own into the run's stream (LangGraph's ``custom``
        stream mode): recorded as a note step named ``custom`` (one write, not repeated when
        the run is replayed)."""
        await self.note(CUSTOM_STEP, data)

    async def say(self, content: str, *, role: Role = Role.ASSISTANT, **metadata: Any) -> None:
        """Add a message to the session's conversation, recorded as a message step. An
        assistant message saying what the latest model call answered is tied to its step
        (metadata ``model_step_id``: its streamed pieces and it are one message)."""
        if role is Role.ASSISTANT and self._last_reply and self._last_reply[1] == content:
            metadata.setdefault(MODEL_STEP_KEY, self._last_reply[0])
        await self.flush()
        position, recorded = self._next(StepKind.MESSAGE, f"{role.value}_message")
        if recorded is not None:
            return
        await self._store.record_step(
            run_id=self.run.id,
            worker_id=self.worker_id,
            position=position,
            kind=StepKind.MESSAGE,
            name=f"{role.value}_message",
            input={"role": role.value, "content": self._redactor.text(content)},
            now=self._clock.now(),
            message=(role, self._redactor.text(content), self._clean(metadata)),
        )

    async def tool_history(
        self, *, tool: str | None = None, limit: int = 200
    ) -> list[dict[str, Any]]:
        """The session's tool calls across all its runs (newest limit, oldest first)."""
        page = await self._store.list_tool_calls(
            session_id=self.session.id, tool=tool, limit=limit, newest_first=True
        )
        return [
            {
                "run_id": step.run_id,
                "tool": step.name,
                "status": step.status.value,
                "arguments": (step.input or {}).get("arguments"),
                "error": step.error.message if step.error else None,
                "at": to_data(step.started_at),
            }
            for step in reversed(page.data)
        ]

    async def set_output(self, output: Any) -> None:
        """Record partial output now (kept if the run is cancelled or fails later)."""
        await self.flush()
        self.run = await self._store.update_run(
            self.run.id, worker_id=self.worker_id, now=self._clock.now(), output=self._clean(output)
        )

    # -- waiting for a person --------------------------------------------------------------------

    async def wait_for_input(self, prompt: str, **details: Any) -> Any:
        """Suspend the run until a person resumes it; returns what they sent."""
        return await self._wait("input", prompt, details)

    async def _wait(self, kind: str, prompt: str, details: dict[str, Any]) -> Any:
        reserved = sorted(_WAIT_FIELDS.intersection(details))
        if reserved:
            raise UsageError(
                f"details cannot be named {', '.join(reserved)}: waiting_for sets them itself"
            )
        await self.flush()
        position, recorded = self._next(StepKind.MESSAGE, f"wait_for_{kind}")
        if recorded is not None:
            return (recorded.output or {}).get("input")
        step = await self._store.start_step(
            run_id=self.run.id,
            worker_id=self.worker_id,
            position=position,
            kind=StepKind.MESSAGE,
            name=f"wait_for_{kind}",
            input=self._clean({"prompt": prompt, **details}),
            now=self._clock.now(),
        )
        self.run = await self._store.suspend_run(
            self.run.id,
            worker_id=self.worker_id,
            now=self._clock.now(),
            waiting_for=self._clean(
                {"kind": kind, "prompt": prompt, "step_id": step.id, **details}
            ),
        )
        raise RunSuspended(prompt)

    # -- tools ---------------------------------------------------------------------------------

    async def tool(self, name: str, /, **arguments: Any) -> Any:
        """Call a tool, recorded as one step; raises ToolError or ToolInDoubt."""
        outcome = await self.call_tool(name, arguments)
        if outcome.in_doubt:
            raise ToolInDoubt(outcome.error, step_id=outcome.step_id)
        if not outcome.ok:
            raise ToolError(outcome.error, step_id=outcome.step_id)
        return outcome.output

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, call_id: str | None = None
    ) -> ToolOutcome:
        """Call a tool, recorded as one step (call and result together); never raises for the
        tool's own failures — they come back as a ToolOutcome for the model."""
        found = self.tools.get(name)
        if found is not None and found.needs_approval:
            answer = await self._wait(
                "approval",
                f"Allow {name}({_json_text(arguments)})?",
                {"tool": name, "arguments": arguments},
            )
            if not _approved(answer):
                return ToolOutcome(ok=False, error=f"a person declined the call to {name}")
        await self.flush()
        position, recorded = self._next(StepKind.TOOL_CALL, name)
        if recorded is not None:
            return _outcome_of(recorded)
        step = await self._store.start_step(
            run_id=self.run.id,
            worker_id=self.worker_id,
            position=position,
            kind=StepKind.TOOL_CALL,
            name=name,
            input=self._clean({"arguments": arguments, "call_id": call_id}),
            now=self._clock.now(),
        )
        invocation = ToolInvocation(name, call_id or step.id)
        with self._instruments.tool_call(self.run, invocation):
            outcome = await self._invoke(found, name, arguments)
            invocation.error = outcome.error and self._redactor.text(outcome.error)
        await self.flush()
        await self._store.finish_step(
            step.id,
            worker_id=self.worker_id,
            status=StepStatus.COMPLETED if outcome.ok else StepStatus.FAILED,
            now=self._clock.now(),
            output=self._clean(outcome.output) if outcome.ok else None,
            error=None
            if outcome.ok
            else self._error(ErrorInfo("ToolError", outcome.error or "", step.id)),
        )
        return ToolOutcome(outcome.ok, outcome.output, outcome.error, step_id=step.id)

    async def _invoke(
        self, found: Tool | None, name: str, arguments: dict[str, Any]
    ) -> ToolOutcome:
        if found is None:
            known = ", ".join(t.name for t in self.tools) or "none"
            return ToolOutcome(ok=False, error=f"no tool named {name!r} (available: {known})")
        try:
            return ToolOutcome(ok=True, output=await found.invoke(arguments))
        except ToolError as exc:
            return ToolOutcome(ok=False, error=str(exc))

    # -- models --------------------------------------------------------------------------------

    async def complete(
        self, messages: Sequence[Mapping[str, Any] | ModelResponse], *, model: Model | None = None
    ) -> ModelResponse:
        """Ask the model for its next reply, recorded as a model_call step with its usage.
        messages are chat messages (``{"role", "content"}``; see ``models.base.as_messages``
        for the replies and tool calls accepted in them). A model that streams
        (``StreamingModel``) has each piece of its text recorded as a step.model_chunk event
        while the step runs, which the run's streams carry."""
        chosen = model or self.model
        if chosen is None:
            raise ModelError(f"this run has no model configured: {HOW_TO_CONFIGURE}")
        messages = as_messages(messages)
        await self.flush()
        position, recorded = self._next(StepKind.MODEL_CALL, None)
        new_messages = messages[self._messages_sent :]
        self._messages_sent = len(messages)
        if recorded is not None:
            if recorded.status is not StepStatus.COMPLETED:
                raise ModelError(recorded.error.message if recorded.error else "model call failed")
            replayed = _response_of(recorded.output)
            self._last_reply = (recorded.id, replayed.content)
            return replayed
        step = await self._store.start_step(
            run_id=self.run.id,
            worker_id=self.worker_id,
            position=position,
            kind=StepKind.MODEL_CALL,
            name=chosen.name,
            # Only what is new since the previous call: recording the whole transcript on every
            # call would grow quadratically with the run.
            input=self._clean({"messages": new_messages, "message_count": len(messages)}),
            now=self._clock.now(),
        )
        call = ModelCall(chosen.name)
        try:
            with self._instruments.model_call(self.run, call):
                response = await self._ask(chosen, step, messages)
                call.response = response
        except Exception as exc:
            self.failed_step_id = step.id
            await self._store.finish_step(
                step.id,
                worker_id=self.worker_id,
                status=StepStatus.FAILED,
                now=self._clock.now(),
                error=self._error(ErrorInfo.of(exc, step_id=step.id)),
            )
            raise
        await self._store.finish_step(
            step.id,
            worker_id=self.worker_id,
            status=StepStatus.COMPLETED,
            now=self._clock.now(),
            output=self._clean(response),
            usage=response.usage,
        )
        self._last_reply = (step.id, response.content)
        return response

    async def _ask(self, model: Model, step: Step, messages: list[dict[str, Any]]) -> ModelResponse:
        """model's reply, streamed into step.model_chunk events when the model streams."""
        if not isinstance(model, StreamingModel):
            return await model.complete(messages, self.tools.specs())
        index = 0

        async def on_text(text: str) -> None:
            nonlocal index
            if not text:
                return
            await self._store.add_model_chunk(
                step.id,
                run_id=self.run.id,
                worker_id=self.worker_id,
                index=index,
                text=self._redactor.text(text),
                now=self._clock.now(),
            )
            index += 1

        return await model.complete_stream(messages, self.tools.specs(), on_text)


def _consume(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()


def _approved(answer: Any) -> bool:
    if isinstance(answer, dict):
        answer = answer.get("approved", answer.get("text", ""))
    if isinstance(answer, bool):
        return answer
    return str(answer).strip().lower() in _APPROVALS


def _outcome_of(step: Step) -> ToolOutcome:
    if step.status is StepStatus.IN_DOUBT:
        return ToolOutcome(
            ok=False,
            in_doubt=True,
            step_id=step.id,
            error=(
                f"the earlier call to {step.name} started but its result was never recorded "
                "(the worker running it was lost): it may or may not have taken effect — "
                "check before repeating it"
            ),
        )
    if step.status is StepStatus.COMPLETED:
        return ToolOutcome(ok=True, output=step.output, step_id=step.id)
    return ToolOutcome(
        ok=False, error=step.error.message if step.error else "failed", step_id=step.id
    )


def _response_of(output: dict[str, Any]) -> ModelResponse:
    calls = [from_data(ToolCall, c) for c in output.get("tool_calls", [])]
    usage = from_data(Usage, output.get("usage") or {})
    return ModelResponse(
        content=output.get("content"),
        tool_calls=calls,
        usage=usage,
        model=output.get("model", ""),
        finish_reason=output.get("finish_reason"),
    )


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
