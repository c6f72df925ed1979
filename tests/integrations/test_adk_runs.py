"""TetherPlugin: each invocation of an ADK Runner on a TetherSessionService is a tether run of
its session (status, times, goal and output, model and tool calls as steps, the error; ended at
once when the invocation is stopped from outside; waiting on a tool confirmation or a
long-running tool, and resumed by the invocation that answers it), on both backends, with a
deterministic model (no network)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import Any, NoReturn

import pytest

try:
    from google.adk.agents import Agent, BaseAgent
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.apps import App
    from google.adk.events.event import Event
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.plugins.base_plugin import BasePlugin
    from google.adk.runners import Runner
    from google.adk.sessions.in_memory_session_service import InMemorySessionService
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.function_tool import FunctionTool
    from google.adk.tools.long_running_tool import LongRunningFunctionTool
    from google.genai import types
except ImportError:  # pragma: no cover - the adk extra is part of tether[dev]
    if os.environ.get("CI", "").lower() == "true":
        raise
    pytest.skip("needs tether[adk] (google-adk)", allow_module_level=True)

from tests.waiting import eventually
from tether.core.run import Run
from tether.core.status import RunStatus, StepStatus
from tether.core.step import Step, StepKind
from tether.integrations.adk import TetherPlugin, TetherSessionService
from tether.runtime.service import Service

APP = "weather"
ASKED_TEXT = "Weather in Paris?"
ASKED = types.Content(role="user", parts=[types.Part(text=ASKED_TEXT)])


class Hold:
    """A reply the model never gives: it tells when the model is asked, then waits for ever."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def given(self) -> NoReturn:
        self.asked.set()
        await asyncio.Event().wait()
        raise AssertionError("a held reply is never given")


class Scripted(BaseLlm):
    """A model that answers each request with the next of its replies (no network); a reply
    that is an exception is raised, a Hold is never given."""

    replies: list[types.Content | Exception | Hold]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, Hold):
            await reply.given()
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=10, candidates_token_count=3
        )
        yield LlmResponse(content=reply, usage_metadata=usage)


def get_weather(city: str) -> dict[str, str]:
    """Returns the current weather in a city."""
    if city == "Atlantis":
        raise LookupError("no such city")
    return {"report": f"It is sunny in {city}."}


def delete_file(path: str) -> dict[str, str]:
    """Deletes a file."""
    return {"deleted": path}


def ask_manager(amount: int) -> dict[str, str]:
    """Asks a manager to approve a refund (they answer later)."""
    return {"status": "pending", "ticket": "t-1"}


def call(name: str, **args: Any) -> types.Content:
    return types.Content(role="model", parts=[types.Part.from_function_call(name=name, args=args)])


def weather_call(city: str) -> types.Content:
    return call("get_weather", city=city)


def answer(text: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=text)])


class Delegating(BaseAgent):
    """A custom agent (ADK's BaseAgent) that hands each invocation to its sub-agent."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        async with aclosing(self.sub_agents[0].run_async(ctx)) as events:
            async for event in events:
                yield event


def runner(
    service: Service,
    *replies: types.Content | Exception | Hold,
    tools: list[Callable[..., Any] | BaseTool] | None = None,
    before: list[BasePlugin] | None = None,
    custom: bool = False,
) -> Runner:
    """A Runner of the scripted model with TetherPlugin (after the plugins before, if any);
    custom: its agent under a custom root agent (which ADK runs outside its node runtime)."""
    model = Scripted(model="scripted-1", replies=list(replies))
    agent = Agent(name="weather_agent", model=model, tools=[*(tools or [get_weather])])
    root = Delegating(name="front_desk", sub_agents=[agent]) if custom else agent
    app = App(name=APP, root_agent=root, plugins=[*(before or []), TetherPlugin()])
    return Runner(app=app, session_service=TetherSessionService(service))


async def invoke(run: Runner, session_id: str, message: types.Content = ASKED) -> list[Event]:
    return [
        e async for e in run.run_async(user_id="u1", session_id=session_id, new_message=message)
    ]


def answering(events: list[Event], response: dict[str, Any]) -> types.Content:
    """The user's message answering the interrupt the events left (its function call)."""
    [asked] = [
        c for e in events for c in e.get_function_calls() if c.id in (e.long_running_tool_ids or ())
    ]
    answer = types.FunctionResponse(id=asked.id, name=asked.name, response=response)
    return types.Content(role="user", parts=[types.Part(function_response=answer)])


async def runs_of(service: Service, run: Runner, session_id: str) -> list[Run]:
    adk = run.session_service
    assert isinstance(adk, TetherSessionService)
    session = await adk.get_session(app_name=APP, user_id="u1", session_id=session_id)
    assert session is not None
    found = await service.list_runs(await adk.tether_session_id(session))
    return sorted(found.data, key=lambda r: r.seq)


def shown(steps: list[Step]) -> list[tuple[StepKind, str, StepStatus]]:
    return [(s.kind, s.name, s.status) for s in steps]


async def test_an_invocation_is_a_run_with_its_model_and_tool_calls(service: Service) -> None:
    adk = runner(service, weather_call("Paris"), answer("Sunny in Paris."))
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    await invoke(adk, session.id)
    [run] = await runs_of(service, adk, session.id)
    assert (run.status, run.agent, run.goal) == (RunStatus.COMPLETED, "google-adk", ASKED_TEXT)
    assert run.output == {"text": "Sunny in Paris."}
    assert run.input == {"text": ASKED_TEXT}
    assert run.metadata["agent"] == "weather_agent" and run.metadata["user_id"] == "u1"
    assert run.started_at is not None and run.ended_at is not None
    assert run.usage.input_tokens == 20 and run.usage.output_tokens == 6
    steps = await service.list_steps(run.id)
    assert shown(steps) == [
        (StepKind.MODEL_CALL, "scripted-1", StepStatus.COMPLETED),
        (StepKind.TOOL_CALL, "get_weather", StepStatus.COMPLETED),
        (StepKind.MODEL_CALL, "scripted-1", StepStatus.COMPLETED),
    ]
    assert steps[0].output == {
        "text": "",
        "function_calls": [{"name": "get_weather", "args": {"city": "Paris"}}],
    }
    assert (steps[1].input, steps[1].output) == (
        {"city": "Paris"},
        {"report": "It is sunny in Paris."},
    )
    assert steps[2].output == {"text": "Sunny in Paris."}
    assert steps[0].usage is not None and steps[0].usage.input_tokens == 10


async def test_each_invocation_is_a_run_of_its_own(service: Service) -> None:
    adk = runner(service, answer("Hello."), answer("Still here."))
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    await invoke(adk, session.id)
    again = types.Content(role="user", parts=[types.Part(text="Are you there?")])
    await invoke(adk, session.id, again)
    runs = await runs_of(service, adk, session.id)
    assert [(r.seq, r.goal, r.status, r.output) for r in runs] == [
        (1, ASKED_TEXT, RunStatus.COMPLETED, {"text": "Hello."}),
        (2, "Are you there?", RunStatus.COMPLETED, {"text": "Still here."}),
    ]


async def test_a_failing_model_fails_its_step_and_its_run(service: Service) -> None:
    adk = runner(service, ValueError("the model is down"))
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    with pytest.raises(ValueError, match="the model is down"):
        await invoke(adk, session.id)
    [run] = await runs_of(service, adk, session.id)
    assert run.status is RunStatus.FAILED and run.error is not None
    assert (run.error.type, run.error.message) == ("ValueError", "the model is down")
    [step] = await service.list_steps(run.id)
    assert shown([step]) == [(StepKind.MODEL_CALL, "scripted-1", StepStatus.FAILED)]
    assert step.error is not None and step.error.message == "the model is down"


async def test_a_failing_tool_is_a_failed_tool_call(service: Service) -> None:
    adk = runner(service, weather_call("Atlantis"))
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    with pytest.raises(LookupError):
        await invoke(adk, session.id)
    [run] = await runs_of(service, adk, session.id)
    assert run.status is RunStatus.FAILED
    steps = await service.list_steps(run.id)
    assert shown(steps) == [
        (StepKind.MODEL_CALL, "scripted-1", StepStatus.COMPLETED),
        (StepKind.TOOL_CALL, "get_weather", StepStatus.FAILED),
    ]
    assert steps[1].input == {"city": "Atlantis"}
    assert steps[1].error is not None and steps[1].error.type == "tool_error"


@pytest.mark.parametrize("custom", [False, True], ids=["llm_agent", "custom_agent"])
async def test_a_cancelled_invocation_ends_its_run_cancelled_at_once(
    service: Service, custom: bool
) -> None:
    held = Hold()
    adk = runner(service, held, custom=custom)
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    task = asyncio.create_task(invoke(adk, session.id))
    await held.asked.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [run] = await runs_of(service, adk, session.id)  # ended before the cancellation got out
    assert run.status is RunStatus.CANCELLED and run.ended_at is not None


async def test_an_invocation_timed_out_by_its_caller_is_cancelled(service: Service) -> None:
    held = Hold()
    adk = runner(service, held, answer("Sunny."))
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")

    async def stop_once_running(deadline: asyncio.Timeout) -> None:
        await held.asked.wait()
        deadline.reschedule(asyncio.get_running_loop().time())

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(None) as deadline:
            stopper = asyncio.create_task(stop_once_running(deadline))
            await invoke(adk, session.id)
    await stopper
    # the task that drove the invocation carries on: the run ended all the same
    [run] = await runs_of(service, adk, session.id)
    assert run.status is RunStatus.CANCELLED
    await invoke(adk, session.id)
    runs = await runs_of(service, adk, session.id)
    assert [(r.status, r.output) for r in runs] == [
        (RunStatus.CANCELLED, None),
        (RunStatus.COMPLETED, {"text": "Sunny."}),
    ]


@pytest.mark.parametrize("custom", [False, True], ids=["llm_agent", "custom_agent"])
async def test_an_invocation_closed_before_its_answer_is_cancelled(
    service: Service, custom: bool
) -> None:
    adk = runner(service, weather_call("Paris"), Hold(), custom=custom)
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    events = adk.run_async(user_id="u1", session_id=session.id, new_message=ASKED)
    first = await anext(events)
    assert first.get_function_calls()  # the model asked for the weather; no answer yet
    await events.aclose()
    [run] = await runs_of(service, adk, session.id)
    assert run.status is RunStatus.CANCELLED and run.output is None


async def test_a_caller_stopping_at_the_final_response_completes_the_run(
    service: Service,
) -> None:
    """ADK's quick-start reads events until the final response, then stops reading."""
    adk = runner(service, answer("Sunny in Paris."))
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    new = adk.run_async(user_id="u1", session_id=session.id, new_message=ASKED)
    async with aclosing(new) as events:
        async for event in events:
            if event.is_final_response():
                break
    [run] = await runs_of(service, adk, session.id)
    assert (run.status, run.output) == (RunStatus.COMPLETED, {"text": "Sunny in Paris."})


async def test_an_invocation_aborted_through_adk_is_cancelled(service: Service) -> None:
    held, abort = Hold(), asyncio.Event()
    adk = runner(service, held)
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    events = adk.run_async(
        user_id="u1", session_id=session.id, new_message=ASKED, abort_signal=abort
    )
    task = asyncio.create_task(anext(events))
    await held.asked.wait()
    abort.set()
    sealed = await task  # ADK seals the aborted invocation with an error event
    assert sealed.error_code is not None
    await events.aclose()
    [run] = await runs_of(service, adk, session.id)
    assert run.status is RunStatus.CANCELLED


async def test_an_invocation_driven_from_several_tasks_is_one_run(service: Service) -> None:
    """Each event read in a task of its own (as asyncio.wait_for does on Python 3.11)."""
    adk = runner(service, weather_call("Paris"), answer("Sunny in Paris."))
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    async with aclosing(
        adk.run_async(user_id="u1", session_id=session.id, new_message=ASKED)
    ) as events:
        with pytest.raises(StopAsyncIteration):
            while True:
                await asyncio.create_task(anext(events))
    [run] = await runs_of(service, adk, session.id)
    assert (run.status, run.output) == (RunStatus.COMPLETED, {"text": "Sunny in Paris."})
    assert len(await service.list_steps(run.id)) == 3


class Together(BaseAgent):
    """A custom agent that runs its sub-agents at once, in a task group (one failing cancels
    the others), then yields their events."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        done: list[Event] = []

        async def drain(agent: BaseAgent) -> None:
            async with aclosing(agent.run_async(ctx)) as events:
                done.extend([e async for e in events])

        async with asyncio.TaskGroup() as group:
            for agent in self.sub_agents:
                group.create_task(drain(agent))
        for event in done:
            yield event


class FailsOnceAsked(BaseLlm):
    """A model that fails once another model's Hold is asked (that one is mid-call then)."""

    other: Hold

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        await self.other.asked.wait()
        for response in list[LlmResponse]():  # a generator (as ADK wants), yielding nothing
            yield response
        raise ValueError("the model is down")


async def test_an_agent_failing_fails_the_run_though_it_cancels_another(
    service: Service,
) -> None:
    held = Hold()
    slow = Agent(name="slow", model=Scripted(model="scripted-1", replies=[held]))
    failing = Agent(name="failing", model=FailsOnceAsked(model="scripted-2", other=held))
    app = App(
        name=APP,
        root_agent=Together(name="both", sub_agents=[slow, failing]),
        plugins=[TetherPlugin()],
    )
    adk = Runner(app=app, session_service=TetherSessionService(service))
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    with pytest.raises(ExceptionGroup):
        await invoke(adk, session.id)
    [run] = await runs_of(service, adk, session.id)
    assert run.status is RunStatus.FAILED and run.error is not None
    assert run.error.type == "ExceptionGroup"


class Holding(BasePlugin):
    """A plugin whose after_run waits for ever (a user's plugin that is slow to finish)."""

    def __init__(self) -> None:
        super().__init__("holding")
        self.reached = asyncio.Event()

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        self.reached.set()
        await asyncio.Event().wait()


async def test_a_task_cancelled_after_its_agent_ended_still_ends_the_run(
    service: Service,
) -> None:
    holding = Holding()
    adk = runner(service, answer("Sunny."), before=[holding])
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    task = asyncio.create_task(invoke(adk, session.id))
    await holding.reached.wait()  # the agent answered; TetherPlugin's after_run never comes
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    async def ended() -> Run | None:
        [run] = await runs_of(service, adk, session.id)
        return run if run.is_terminal else None

    run = await eventually(ended, what="the run ended once its task did")
    assert (run.status, run.output) == (RunStatus.COMPLETED, {"text": "Sunny."})


async def test_closing_the_runner_cancels_the_run_it_left_going(service: Service) -> None:
    held = Hold()
    adk = runner(service, held)
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    task = asyncio.create_task(invoke(adk, session.id))
    await held.asked.wait()
    await adk.close()
    [run] = await runs_of(service, adk, session.id)
    assert run.status is RunStatus.CANCELLED
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_tool_confirmation_waits_and_its_answer_resumes_the_run(
    service: Service,
) -> None:
    deleting = FunctionTool(delete_file, require_confirmation=True)
    adk = runner(service, call("delete_file", path="a.txt"), answer("Deleted."), tools=[deleting])
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    events = await invoke(adk, session.id)
    [run] = await runs_of(service, adk, session.id)
    assert run.status is RunStatus.WAITING and run.waiting_for is not None
    asked = run.waiting_for
    assert (asked["kind"], asked["tool"], asked["arguments"]) == (
        "approval",
        "delete_file",
        {"path": "a.txt"},
    )
    [request] = asked["function_calls"]
    assert request["name"] == "adk_request_confirmation"
    # the call held for confirmation has not run: no tool call yet, a wait instead
    assert shown(await service.list_steps(run.id)) == [
        (StepKind.MODEL_CALL, "scripted-1", StepStatus.COMPLETED),
        (StepKind.MESSAGE, "wait_for_approval", StepStatus.RUNNING),
    ]

    await invoke(adk, session.id, answering(events, {"confirmed": True}))
    [resumed] = await runs_of(service, adk, session.id)
    assert resumed.id == run.id
    assert (resumed.status, resumed.output) == (RunStatus.COMPLETED, {"text": "Deleted."})
    steps = await service.list_steps(run.id)
    assert shown(steps) == [
        (StepKind.MODEL_CALL, "scripted-1", StepStatus.COMPLETED),
        (StepKind.MESSAGE, "wait_for_approval", StepStatus.COMPLETED),
        (StepKind.TOOL_CALL, "delete_file", StepStatus.COMPLETED),
        (StepKind.MODEL_CALL, "scripted-1", StepStatus.COMPLETED),
    ]
    given = {"id": request["id"], "name": request["name"], "response": {"confirmed": True}}
    assert steps[1].output == {"input": {"function_responses": [given]}}
    assert steps[2].output == {"deleted": "a.txt"}


async def test_a_declined_confirmation_is_no_tool_call(service: Service) -> None:
    deleting = FunctionTool(delete_file, require_confirmation=True)
    adk = runner(service, call("delete_file", path="a.txt"), answer("Kept it."), tools=[deleting])
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    events = await invoke(adk, session.id)
    await invoke(adk, session.id, answering(events, {"confirmed": False}))
    [run] = await runs_of(service, adk, session.id)
    assert (run.status, run.output) == (RunStatus.COMPLETED, {"text": "Kept it."})
    assert shown(await service.list_steps(run.id)) == [
        (StepKind.MODEL_CALL, "scripted-1", StepStatus.COMPLETED),
        (StepKind.MESSAGE, "wait_for_approval", StepStatus.COMPLETED),
        (StepKind.MODEL_CALL, "scripted-1", StepStatus.COMPLETED),
    ]
    assert (await service.list_tool_calls(session_id=run.session_id)).data == []


async def test_a_long_running_tool_waits_for_its_result(service: Service) -> None:
    asking = LongRunningFunctionTool(ask_manager)
    adk = runner(
        service,
        call("ask_manager", amount=5),
        answer("Waiting for the manager."),
        answer("Refunded."),
        tools=[asking],
    )
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    events = await invoke(adk, session.id)
    [run] = await runs_of(service, adk, session.id)
    assert run.status is RunStatus.WAITING and run.waiting_for is not None
    assert (run.waiting_for["kind"], run.waiting_for["tool"]) == ("input", "ask_manager")
    await invoke(adk, session.id, answering(events, {"status": "approved"}))
    [resumed] = await runs_of(service, adk, session.id)
    assert (resumed.status, resumed.output) == (RunStatus.COMPLETED, {"text": "Refunded."})
    assert shown(await service.list_steps(run.id)) == [
        (StepKind.MODEL_CALL, "scripted-1", StepStatus.COMPLETED),
        (StepKind.TOOL_CALL, "ask_manager", StepStatus.COMPLETED),  # its first answer
        (StepKind.MODEL_CALL, "scripted-1", StepStatus.COMPLETED),
        (StepKind.MESSAGE, "wait_for_input", StepStatus.COMPLETED),
        (StepKind.MODEL_CALL, "scripted-1", StepStatus.COMPLETED),
    ]


async def test_a_new_message_supersedes_a_waiting_run(service: Service) -> None:
    deleting = FunctionTool(delete_file, require_confirmation=True)
    adk = runner(
        service,
        call("delete_file", path="a.txt"),
        answer("Hello."),
        answer("Deleted."),
        tools=[deleting],
    )
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    events = await invoke(adk, session.id)
    hello = types.Content(role="user", parts=[types.Part(text="Hello?")])
    await invoke(adk, session.id, hello)
    # ADK keeps the confirmation open: answering it later continues that invocation, in a run
    # of its own (the one that waited was superseded)
    await invoke(adk, session.id, answering(events, {"confirmed": True}))
    runs = await runs_of(service, adk, session.id)
    assert [(r.status, r.goal, r.output) for r in runs] == [
        (RunStatus.CANCELLED, ASKED_TEXT, None),
        (RunStatus.COMPLETED, "Hello?", {"text": "Hello."}),
        (RunStatus.COMPLETED, ASKED_TEXT, {"text": "Deleted."}),
    ]
    assert runs[2].metadata["invocation_id"] == runs[0].metadata["invocation_id"]


async def test_a_runner_on_another_session_service_is_left_alone() -> None:
    model = Scripted(model="scripted-1", replies=[answer("Hello.")])
    app = App(
        name=APP, root_agent=Agent(name="weather_agent", model=model), plugins=[TetherPlugin()]
    )
    adk = Runner(app=app, session_service=InMemorySessionService())
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    await invoke(adk, session.id)
    stored = await adk.session_service.get_session(
        app_name=APP, user_id="u1", session_id=session.id
    )
    assert stored is not None and stored.events[-1].content == answer("Hello.")
