"""TetherPlugin: each invocation of an ADK Runner on a TetherSessionService is a tether run of
its session (status, times, goal and output, model and tool calls as steps, the error), on both
backends, with a deterministic model (no network)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator

import pytest

try:
    from google.adk.agents import Agent
    from google.adk.apps import App
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.adk.sessions.in_memory_session_service import InMemorySessionService
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


class Scripted(BaseLlm):
    """A model that answers each request with the next of its replies (no network); a reply
    that is an exception is raised, an asyncio.Event is waited for (forever, unless set)."""

    replies: list[types.Content | Exception | asyncio.Event]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, asyncio.Event):
            await reply.wait()
            return
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=10, candidates_token_count=3
        )
        yield LlmResponse(content=reply, usage_metadata=usage)


def get_weather(city: str) -> dict[str, str]:
    """Returns the current weather in a city."""
    if city == "Atlantis":
        raise LookupError("no such city")
    return {"report": f"It is sunny in {city}."}


def weather_call(city: str) -> types.Content:
    return types.Content(
        role="model", parts=[types.Part.from_function_call(name="get_weather", args={"city": city})]
    )


def answer(text: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=text)])


def runner(service: Service, *replies: types.Content | Exception | asyncio.Event) -> Runner:
    model = Scripted(model="scripted-1", replies=list(replies))
    agent = Agent(name="weather_agent", model=model, tools=[get_weather])
    app = App(name=APP, root_agent=agent, plugins=[TetherPlugin()])
    return Runner(app=app, session_service=TetherSessionService(service))


async def invoke(run: Runner, session_id: str, message: types.Content = ASKED) -> None:
    async for _ in run.run_async(user_id="u1", session_id=session_id, new_message=message):
        pass


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


async def test_closing_the_runner_cancels_the_run_it_left_going(service: Service) -> None:
    held = asyncio.Event()  # never set: the model never answers
    adk = runner(service, held)
    session = await adk.session_service.create_session(app_name=APP, user_id="u1")
    task = asyncio.create_task(invoke(adk, session.id))

    async def running() -> list[Run]:
        runs = await runs_of(service, adk, session.id)
        return [r for r in runs if r.status is RunStatus.RUNNING]

    await eventually(running, what="the invocation's run running")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await adk.close()
    [run] = await runs_of(service, adk, session.id)
    assert run.status is RunStatus.CANCELLED


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
