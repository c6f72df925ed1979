"""Runs: each invocation of an ADK Runner becomes a tether run of its session.

Through ADK's own extension point, a plugin (``App(..., plugins=[TetherPlugin()])``) of a
Runner whose session service is a ``TetherSessionService``. The run starts running when the
invocation does (runtime.held_run), with the user's message as its goal; its model calls
(with their token usage) and tool calls (arguments and result together) are recorded as steps
as they end. The invocation's end completes it, with the final response's text as its output;
leaves it waiting when the invocation left interrupts unanswered (tool confirmations,
long-running tools: see interrupts); fails it with the error that escaped the Runner. The
invocation that answers them (ADK gives it the paused one's id) resumes that run.

An invocation stopped from outside the Runner ends its run at once: cancelled, or completed
when its final response was already out (a caller may stop reading there). ADK tells of it
through after_agent (called while a cancellation unwinds an agent) and after_run (called
while the generator is closed early); when neither comes, the task the invocation began in
ending cancelled does. A new invocation on a session whose run is still going or waiting
supersedes that run (cancelled); closing the Runner cancels the runs it left going.

Recording never breaks the agent: a write that fails is logged, and a run cancelled from
outside (the UI, the CLI) is no longer written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from google.adk.plugins.base_plugin import BasePlugin

from tether.core.errors import LeaseLost
from tether.core.run import ErrorInfo, IfBusy
from tether.core.status import RunStatus
from tether.core.step import StepKind
from tether.core.usage import Usage
from tether.integrations._json import jsonable
from tether.integrations.adk.interrupts import answers, interrupts, wait_request
from tether.integrations.adk.service import TetherSessionService
from tether.runtime import limits
from tether.runtime.held_run import HeldRun
from tether.runtime.service import Service
from tether.store.base import UNSET

if TYPE_CHECKING:
    from google.adk.agents.base_agent import BaseAgent
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.events.event import Event
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.tool_context import ToolContext
    from google.genai import types

log = logging.getLogger("tether.integrations.adk")
#: The agent name tether shows for runs of ADK invocations.
AGENT = "google-adk"


class _Invocation:
    """One invocation's run, where it is written, and what its end needs."""

    def __init__(self, invocation_id: str, service: TetherSessionService, run: HeldRun) -> None:
        self.invocation_id = invocation_id
        self.service = service
        self.run = run
        #: The model each agent asked last (a response does not name it).
        self.models: dict[str, str] = {}
        #: The text of the newest final response, and whether one was yielded.
        self.output: str | None = None
        self.answered = False
        #: The interrupts it raised, by function call id: what its run waits for at its end.
        self.asked: dict[str, types.FunctionCall] = {}
        #: Whether an error escaped one of its agents (on its way to failing the run).
        self.failing = False
        #: The task it began in, and the callback that tells if that task ends cancelled.
        self.task = asyncio.current_task()
        self._watch: Callable[[asyncio.Task[Any]], None] | None = None

    def watch(self, cancelled: Callable[[_Invocation], None]) -> None:
        """Call cancelled(self) if the task it began in ends cancelled (unless unwatched)."""
        if self.task is None:
            return

        def ended(task: asyncio.Task[Any]) -> None:
            if task.cancelled():
                cancelled(self)

        self._watch = ended
        self.task.add_done_callback(ended)

    def unwatch(self) -> None:
        if self.task is not None and self._watch is not None:
            self.task.remove_done_callback(self._watch)
            self._watch = None


class TetherPlugin(BasePlugin):
    """Records the invocations of a Runner on a TetherSessionService as tether runs: put it in
    the app's plugins, ``App(..., plugins=[TetherPlugin()])``. Invocations of a Runner on
    another session service are left alone."""

    def __init__(self, name: str = "tether") -> None:
        super().__init__(name)
        self._going: dict[str, _Invocation] = {}
        #: Ends being written for invocations whose task ended cancelled first.
        self._ending: set[asyncio.Task[None]] = set()

    # -- the invocation ------------------------------------------------------------------------

    async def before_run_callback(self, *, invocation_context: InvocationContext) -> None:
        service = invocation_context.session_service
        if not isinstance(service, TetherSessionService):
            return
        session, agent = invocation_context.session, invocation_context.agent
        invocation_id = invocation_context.invocation_id
        name = getattr(agent, "name", None) or "agent"
        text = _text(invocation_context.user_content)
        goal = (text or f"{name}: invocation")[: limits.MAX_GOAL]
        metadata = {
            "framework": AGENT,
            "agent": name,
            "invocation_id": invocation_id,
            "app_name": session.app_name,
            "user_id": session.user_id,
        }
        try:
            sid = await service.tether_session_id(session)
            begin = _begin(
                service._svc,
                sid,
                goal,
                input={"text": text} if text else None,
                metadata=metadata,
                answers=answers(session, invocation_id),
            )
            run = await _started(service, begin)
        except Exception as exc:  # recording never breaks the agent
            log.warning("could not record an ADK invocation in tether: %s", exc)
            return
        going = self._going[invocation_id] = _Invocation(invocation_id, service, run)
        going.watch(self._left)

    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: Event
    ) -> None:
        going = self._going.get(invocation_context.invocation_id)
        if going is None or event.author == "user":
            return
        for call in interrupts(event):
            going.asked[call.id or ""] = call
        if event.is_final_response() and not event.error_code:  # not an error, nor an abort
            going.answered = True
            going.output = _text(event.content) or going.output

    async def after_agent_callback(
        self, *, agent: BaseAgent, callback_context: CallbackContext
    ) -> None:
        """ADK calls it while a cancellation unwinds an agent too: unless an error of another
        agent caused it (a failing run), the invocation is being cancelled, and no after_run
        will come: its run ends now."""
        going = self._going.get(callback_context.invocation_id)
        if going is not None and not going.failing and _unwinding(asyncio.CancelledError):
            await self._end(self._take(going), stopped=True)

    async def on_agent_error_callback(
        self, *, agent: BaseAgent, callback_context: CallbackContext, error: Exception
    ) -> None:
        going = self._going.get(callback_context.invocation_id)
        if going is not None:
            going.failing = True

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        going = self._going.get(invocation_context.invocation_id)
        if going is None:
            return
        if invocation_context.is_aborted:  # ADK answers what it asked with errors: not waiting
            going.asked.clear()
        closing = _unwinding(GeneratorExit, asyncio.CancelledError)
        stopped = invocation_context.is_aborted or closing
        await self._end(self._take(going), stopped=stopped)

    async def on_run_error_callback(
        self, *, invocation_context: InvocationContext, error: Exception
    ) -> None:
        going = self._going.get(invocation_context.invocation_id)
        if going is not None:
            failed = going.run.finish(RunStatus.FAILED, error=ErrorInfo.of(error))
            await _write(self._take(going), failed)

    async def close(self) -> None:
        """The Runner closes: the runs of invocations it left going are cancelled."""
        for left in [self._take(g) for g in list(self._going.values())]:
            await _write(left, left.run.finish(RunStatus.CANCELLED))
        if self._ending:
            await asyncio.wait(set(self._ending))

    def _take(self, going: _Invocation) -> _Invocation:
        """going, no longer going: its end is being written."""
        del self._going[going.invocation_id]
        going.unwatch()
        return going

    def _left(self, going: _Invocation) -> None:
        """The task an invocation began in ended cancelled before it did, with no callback of
        ADK's (cancelled before its agents ran, or after they ended): its run ends now."""
        if self._going.get(going.invocation_id) is going:
            ending = asyncio.ensure_future(self._end(self._take(going), stopped=True))
            self._ending.add(ending)
            ending.add_done_callback(self._ending.discard)

    @staticmethod
    async def _end(going: _Invocation, *, stopped: bool) -> None:
        """Write how an invocation ended: waiting when it left interrupts unanswered; else
        completed when it ran to its end or was stopped after its final response; else
        (stopped before it answered) cancelled."""
        run = going.run
        if going.asked:
            kind, prompt, details = wait_request(list(going.asked.values()))
            await _write(going, run.wait(kind, prompt, **details))
        elif stopped and not going.answered:
            await _write(going, run.finish(RunStatus.CANCELLED))
        else:
            output = UNSET if going.output is None else {"text": going.output}
            await _write(going, run.finish(RunStatus.COMPLETED, output=output))

    # -- model calls ---------------------------------------------------------------------------

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> None:
        going = self._going.get(callback_context.invocation_id)
        if going is not None:
            going.models[callback_context.agent_name] = llm_request.model or "model"

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> None:
        going = self._going.get(callback_context.invocation_id)
        if going is None or llm_response.partial:  # a streamed chunk: its whole comes later
            return
        error = None
        if llm_response.error_code:
            message = llm_response.error_message or str(llm_response.error_code)
            error = ErrorInfo("model_error", f"{llm_response.error_code}: {message}")
        await self._model_step(
            going, callback_context, _response(llm_response), error, llm_response
        )

    async def on_model_error_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest, error: Exception
    ) -> None:
        going = self._going.get(callback_context.invocation_id)
        if going is not None:
            failed = ErrorInfo("model_error", ErrorInfo.of(error).message)
            await self._model_step(going, callback_context, None, failed, None)

    @staticmethod
    async def _model_step(
        going: _Invocation,
        context: CallbackContext,
        output: Any,
        error: ErrorInfo | None,
        response: LlmResponse | None,
    ) -> None:
        name = going.models.get(context.agent_name, "model")
        usage = None if response is None else _usage(response.usage_metadata)
        step = going.run.step(
            StepKind.MODEL_CALL,
            name,
            {"agent": context.agent_name},
            output=output,
            error=error,
            usage=usage,
        )
        await _write(going, step)

    # -- tool calls ----------------------------------------------------------------------------

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> None:
        going = self._going.get(tool_context.invocation_id)
        if going is None or _held(tool_context):
            return
        step = going.run.step(
            StepKind.TOOL_CALL, tool.name, jsonable(tool_args), output=jsonable(result)
        )
        await _write(going, step)

    async def on_tool_error_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        error: Exception,
    ) -> None:
        going = self._going.get(tool_context.invocation_id)
        if going is not None:
            failed = ErrorInfo("tool_error", ErrorInfo.of(error).message)
            step = going.run.step(StepKind.TOOL_CALL, tool.name, jsonable(tool_args), error=failed)
            await _write(going, step)


async def _begin(
    service: Service,
    session_id: str,
    goal: str,
    *,
    input: dict[str, Any] | None,
    metadata: dict[str, Any],
    answers: list[dict[str, Any]],
) -> HeldRun:
    """The invocation's run: the session's run waiting for this invocation when the user's
    message answers its interrupts (resumed with the answers), else a new run, superseding
    one of the session going or waiting."""
    if answers:
        waiting = await service.list_runs(
            session_id, status=RunStatus.WAITING, limit=1, with_context=False
        )
        for run in waiting.data:
            if run.metadata.get("invocation_id") == metadata["invocation_id"]:
                return await HeldRun.resume(service, run.id, {"function_responses": answers})
    return await HeldRun.start(
        service,
        session_id,
        goal,
        agent=AGENT,
        input=input,
        metadata=metadata,
        if_busy=IfBusy.INTERRUPT,
    )


async def _started(service: TetherSessionService, start: Coroutine[Any, Any, HeldRun]) -> HeldRun:
    """The run start makes, which a cancelled invocation does not leave running: cancelled
    while the run starts, the start completes and the run ends cancelled."""
    starting = asyncio.ensure_future(service._run(start))
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            run = await starting
            await service._run(run.finish(RunStatus.CANCELLED))
        raise


async def _write(going: _Invocation, write: Coroutine[Any, Any, Any]) -> None:
    """Await a write of the run where its store lives; a failure is logged, never raised."""
    try:
        await going.service._run(write)
    except LeaseLost:  # cancelled from outside, or superseded: no longer this invocation's
        log.info("tether run %s ended elsewhere; no longer recorded", going.run.run.id)
    except Exception as exc:
        log.warning("could not record an ADK invocation in tether: %s", exc)


def _unwinding(*kinds: type[BaseException]) -> bool:
    """Whether ADK calls the callback while an exception of kinds unwinds the invocation: it
    calls after_agent from an ``except CancelledError``, and after_run from a ``finally`` that
    an early close (GeneratorExit, or the sync Runner's cancellation) goes through."""
    return isinstance(sys.exc_info()[1], kinds)


def _held(context: ToolContext) -> bool:
    """Whether a tool call is held for a person: it asks for their confirmation (recorded when
    it runs, once given), or they declined it."""
    asks = context.actions.requested_tool_confirmations
    confirmation = context.tool_confirmation
    declined = confirmation is not None and not confirmation.confirmed
    return context.function_call_id in asks or declined


def _text(content: types.Content | None) -> str:
    """The text of a content's parts (thoughts left out)."""
    parts = content.parts if content is not None and content.parts else []
    return "\n".join(p.text for p in parts if p.text and not p.thought)


def _response(response: LlmResponse) -> dict[str, Any]:
    """What a model call answered: its text and the function calls it asked for."""
    parts = response.content.parts if response.content and response.content.parts else []
    calls = [
        {"name": p.function_call.name, "args": jsonable(p.function_call.args)}
        for p in parts
        if p.function_call is not None
    ]
    answer: dict[str, Any] = {"text": _text(response.content)}
    if calls:
        answer["function_calls"] = calls
    return answer


def _usage(metadata: types.GenerateContentResponseUsageMetadata | None) -> Usage | None:
    """One model call's tokens (thinking tokens count as output), or None when not given."""
    if metadata is None:
        return None
    given = metadata.prompt_token_count or 0
    made = (metadata.candidates_token_count or 0) + (metadata.thoughts_token_count or 0)
    return Usage(input_tokens=given, output_tokens=made, requests=1) if given or made else None
