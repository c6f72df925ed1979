"""Runs: each invocation of an ADK Runner becomes a tether run of its session.

Through ADK's own extension point, a plugin (``App(..., plugins=[TetherPlugin()])``) of a
Runner whose session service is a ``TetherSessionService``. The run starts running when the
invocation does (runtime.held_run), with the user's message as its goal; its model calls
(with their token usage) and tool calls (arguments and result together) are recorded as steps
as they end; the invocation's end completes it, with the final response's text as its output,
or fails it with the error that escaped the Runner. A new invocation on a session whose run is
still going supersedes that run (cancelled); closing the Runner cancels the runs it left going.

Recording never breaks the agent: a write that fails is logged, and a run cancelled from
outside (the UI, the CLI) is no longer written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from google.adk.plugins.base_plugin import BasePlugin

from tether.core.errors import LeaseLost
from tether.core.run import ErrorInfo, IfBusy
from tether.core.status import RunStatus
from tether.core.step import StepKind
from tether.core.usage import Usage
from tether.integrations._json import jsonable
from tether.integrations.adk.service import TetherSessionService
from tether.runtime import limits
from tether.runtime.held_run import HeldRun
from tether.store.base import UNSET

if TYPE_CHECKING:
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

    def __init__(self, service: TetherSessionService, run: HeldRun) -> None:
        self.service = service
        self.run = run
        #: The model each agent asked last (a response does not name it).
        self.models: dict[str, str] = {}
        #: The text of the newest final response.
        self.output: str | None = None


class TetherPlugin(BasePlugin):
    """Records the invocations of a Runner on a TetherSessionService as tether runs: put it in
    the app's plugins, ``App(..., plugins=[TetherPlugin()])``. Invocations of a Runner on
    another session service are left alone."""

    def __init__(self, name: str = "tether") -> None:
        super().__init__(name)
        self._going: dict[str, _Invocation] = {}

    # -- the invocation ------------------------------------------------------------------------

    async def before_run_callback(self, *, invocation_context: InvocationContext) -> None:
        service = invocation_context.session_service
        if not isinstance(service, TetherSessionService):
            return
        session, agent = invocation_context.session, invocation_context.agent
        name = getattr(agent, "name", None) or "agent"
        text = _text(invocation_context.user_content)
        goal = (text or f"{name}: invocation")[: limits.MAX_GOAL]
        metadata = {
            "framework": AGENT,
            "agent": name,
            "invocation_id": invocation_context.invocation_id,
            "app_name": session.app_name,
            "user_id": session.user_id,
        }
        try:
            sid = await service.tether_session_id(session)
            run = await _started(
                service,
                HeldRun.start(
                    service._svc,
                    sid,
                    goal,
                    agent=AGENT,
                    input={"text": text} if text else None,
                    metadata=metadata,
                    if_busy=IfBusy.INTERRUPT,
                ),
            )
        except Exception as exc:  # recording never breaks the agent
            log.warning("could not record an ADK invocation in tether: %s", exc)
            return
        self._going[invocation_context.invocation_id] = _Invocation(service, run)

    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: Event
    ) -> None:
        going = self._going.get(invocation_context.invocation_id)
        if going is not None and event.author != "user" and event.is_final_response():
            going.output = _text(event.content) or going.output

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        going = self._going.pop(invocation_context.invocation_id, None)
        if going is not None:
            output = UNSET if going.output is None else {"text": going.output}
            await _write(going, going.run.finish(RunStatus.COMPLETED, output=output))

    async def on_run_error_callback(
        self, *, invocation_context: InvocationContext, error: Exception
    ) -> None:
        going = self._going.pop(invocation_context.invocation_id, None)
        if going is not None:
            await _write(going, going.run.finish(RunStatus.FAILED, error=ErrorInfo.of(error)))

    async def close(self) -> None:
        """The Runner closes: the runs of invocations it left going are cancelled."""
        going, self._going = list(self._going.values()), {}
        for left in going:
            await _write(left, left.run.finish(RunStatus.CANCELLED))

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
        if going is not None:
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
