"""The built-in model-and-tools loop (``tether.agent(name, instructions=…, tools=[…])``) with a
ScriptedModel: tool results and tool errors go back to the model, every call is a step, a step
limit ends runaway loops, approvals make the run wait, and a resumed run replays its model
calls instead of repeating them."""

from __future__ import annotations

from typing import Any

import pytest

import tether
from tests.waiting import WAIT
from tether.core.errors import UsageError
from tether.core.run import Run
from tether.core.status import RunStatus, StepStatus
from tether.core.step import StepKind
from tether.runtime.agent import AgentRegistry
from tether.runtime.model_agent import ModelAgent
from tether.runtime.models import ModelResponse, ScriptedModel, ToolCall
from tether.runtime.models.base import as_messages
from tether.runtime.run_context import RunContext, ToolOutcome
from tether.runtime.service import Service

with_worker = pytest.mark.usefixtures("worker")

INSTRUCTIONS = "You answer questions about the weather. Use the tools."


def call(name: str, call_id: str = "c1", /, **arguments: Any) -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCall(call_id, name, arguments)])


def weather(city: str) -> str:
    """Today's weather in a city."""
    if city == "Atlantis":
        raise ValueError("no such city")
    return f"sunny in {city}"


async def _finish(service: Service, session_id: str, agent: str, goal: str = "Weather?") -> Run:
    run = await service.create_run(session_id, goal, agent=agent)
    done = await service.wait_run(run.id, timeout=WAIT)
    assert done.is_terminal, done
    return done


@with_worker
async def test_the_loop_calls_tools_and_answers(service: Service, agents: AgentRegistry) -> None:
    model = ScriptedModel([call("weather", city="Oslo"), ModelResponse(content="Sunny, go out.")])
    made = tether.agent(
        "weatherman", instructions=INSTRUCTIONS, model=model, tools=[weather], registry=agents
    )
    assert isinstance(made, ModelAgent) and agents.get("weatherman") is made
    assert agents.describe("weatherman") == INSTRUCTIONS
    session = await service.create_session(project={"city": "Oslo"})
    await service.add_message(session.id, "user", "Hello")
    await service.add_message(session.id, "assistant", "Hi, ask me about the weather.")
    done = await _finish(service, session.id, "weatherman", "Should I take an umbrella?")

    assert done.status is RunStatus.COMPLETED, done.error
    assert done.output == {"text": "Sunny, go out."}
    steps = await service.list_steps(done.id)
    assert [(s.kind, s.name, s.status) for s in steps] == [
        (StepKind.MODEL_CALL, "scripted", StepStatus.COMPLETED),
        (StepKind.TOOL_CALL, "weather", StepStatus.COMPLETED),
        (StepKind.MODEL_CALL, "scripted", StepStatus.COMPLETED),
        (StepKind.MESSAGE, "assistant_message", StepStatus.COMPLETED),
    ]
    assert steps[1].output == "sunny in Oslo"
    conversation = await service.conversation(session.id)
    assert [m.content for m in conversation][-1] == "Sunny, go out."

    first, second = model.requests
    assert first[0]["role"] == "system" and first[0]["content"].startswith(INSTRUCTIONS)
    assert '"city": "Oslo"' in first[0]["content"]  # the project is shown
    assert first[1:] == [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi, ask me about the weather."},
        {"role": "user", "content": "Should I take an umbrella?"},
    ]
    assert second[-2]["tool_calls"][0]["function"] == {
        "name": "weather",
        "arguments": {"city": "Oslo"},
    }
    assert second[-1] == {"role": "tool", "tool_call_id": "c1", "content": "sunny in Oslo"}
    model.assert_consumed()


@with_worker
async def test_tool_errors_are_results_for_the_model(
    service: Service, agents: AgentRegistry
) -> None:
    model = ScriptedModel(
        [
            call("weather", "c1", city="Atlantis"),
            call("forecast", "c2", days=3),
            ModelResponse(content="I could not find it."),
        ]
    )
    tether.agent("w", instructions=INSTRUCTIONS, model=model, tools=[weather], registry=agents)
    session = await service.create_session()
    done = await _finish(service, session.id, "w")

    assert done.status is RunStatus.COMPLETED, done.error
    assert done.output == {"text": "I could not find it."}
    results = [m for m in model.requests[-1] if m["role"] == "tool"]
    assert results[0]["content"] == "ERROR: weather failed: ValueError: no such city"
    assert results[1]["content"].startswith("ERROR: no tool named 'forecast'")
    tool_steps = (await service.list_tool_calls(run_id=done.id)).data
    assert [(s.name, s.status) for s in tool_steps] == [
        ("weather", StepStatus.FAILED),
        ("forecast", StepStatus.FAILED),
    ]


@with_worker
async def test_the_step_limit_fails_the_run_clearly(
    service: Service, agents: AgentRegistry
) -> None:
    model = ScriptedModel([call("weather", f"c{i}", city="Oslo") for i in range(5)])
    tether.agent(
        "looper",
        instructions=INSTRUCTIONS,
        model=model,
        tools=[weather],
        max_steps=3,
        registry=agents,
    )
    session = await service.create_session()
    done = await _finish(service, session.id, "looper")

    assert done.status is RunStatus.FAILED
    assert done.error is not None and done.error.type == "StepLimitExceeded"
    assert "max_steps" in done.error.message and "3" in done.error.message
    steps = await service.list_steps(done.id)
    assert [s.kind for s in steps] == [
        StepKind.MODEL_CALL,
        StepKind.TOOL_CALL,
        StepKind.MODEL_CALL,
    ]
    assert len(model.requests) == 2


@with_worker
@pytest.mark.parametrize(("answer", "approved"), [("yes", True), ("no", False)])
async def test_an_approval_waits_and_resumes_without_asking_the_model_again(
    service: Service, agents: AgentRegistry, answer: str, approved: bool
) -> None:
    deleted: list[str] = []

    @tether.tool(needs_approval=True)
    def delete_branch(name: str) -> str:
        """Delete a git branch."""
        deleted.append(name)
        return f"deleted {name}"

    model = ScriptedModel(
        [
            call("delete_branch", name="old"),
            lambda messages: ModelResponse(content=messages[-1]["content"]),
        ]
    )
    tether.agent(
        "janitor",
        instructions="Tidy the repository.",
        model=model,
        tools=[delete_branch],
        registry=agents,
    )
    session = await service.create_session()
    run = await service.create_run(session.id, "Remove the old branch", agent="janitor")
    waiting = await service.wait_run(run.id, timeout=WAIT)
    assert waiting.status is RunStatus.WAITING
    assert waiting.waiting_for is not None
    assert waiting.waiting_for["kind"] == "approval"
    assert waiting.waiting_for["tool"] == "delete_branch"
    assert waiting.waiting_for["arguments"] == {"name": "old"}
    assert deleted == [] and len(model.requests) == 1

    await service.resume_run(run.id, answer)
    done = await service.wait_run(run.id, timeout=WAIT)
    assert done.status is RunStatus.COMPLETED, done.error
    assert len(model.requests) == 2, "the first model call was replayed, not repeated"
    if approved:
        assert deleted == ["old"]
        assert done.output == {"text": "deleted old"}
    else:
        assert deleted == []
        assert done.output == {"text": "ERROR: a person declined the call to delete_branch"}
    kinds = [s.kind for s in await service.list_steps(run.id)]
    assert kinds.count(StepKind.MODEL_CALL) == 2


@with_worker
async def test_without_a_model_the_error_says_how_to_configure_one(
    service: Service, agents: AgentRegistry
) -> None:
    tether.agent("modelless", instructions=INSTRUCTIONS, registry=agents)
    session = await service.create_session()
    done = await _finish(service, session.id, "modelless")
    assert done.status is RunStatus.FAILED
    assert done.error is not None and done.error.type == "ModelError"
    for hint in ("TETHER_MODEL_BASE_URL", "TETHER_MODEL ", "models="):
        assert hint in done.error.message


def test_a_model_agent_is_checked_when_it_is_made() -> None:
    agents = AgentRegistry()
    model = ScriptedModel([])
    with pytest.raises(UsageError, match="needs instructions"):
        tether.agent("x", model=model, registry=agents)  # type: ignore[call-overload]
    with pytest.raises(UsageError, match="max_steps must be at least 1"):
        tether.agent("x", instructions="hi", max_steps=0, registry=agents)
    with pytest.raises(UsageError, match="model must be a Model"):
        tether.agent("x", instructions="hi", model="gpt", registry=agents)  # type: ignore[call-overload]
    assert "x" not in agents


# -- the message helpers ------------------------------------------------------------------------


def hand_written_loop(model: ScriptedModel) -> Any:
    """A loop written by hand the way a newcomer first tries it: the reply's ToolCall objects
    straight into the transcript, then the helpers."""

    async def loop(ctx: RunContext) -> dict[str, Any]:
        messages: list[Any] = [{"role": "user", "content": ctx.goal}]
        reply = await ctx.complete(messages, model=model)
        messages.append({"role": "assistant", "tool_calls": reply.tool_calls})
        for tool_call in reply.tool_calls:
            outcome = await ctx.call_tool(tool_call.name, tool_call.arguments, call_id=tool_call.id)
            messages.append(outcome.to_message(tool_call))
        messages.append(reply)  # a reply where a message belongs is its assistant message
        final = await ctx.complete(messages, model=model)
        return {"text": final.content}

    return loop


@with_worker
async def test_a_hand_written_loop_may_put_tool_calls_and_replies_in_messages(
    service: Service, agents: AgentRegistry
) -> None:
    model = ScriptedModel([call("weather", city="Oslo"), ModelResponse(content="done")])
    agents.register("by_hand", hand_written_loop(model), tools=[tether.tool(weather)])
    session = await service.create_session()
    done = await _finish(service, session.id, "by_hand")
    assert done.status is RunStatus.COMPLETED, done.error
    assert done.output == {"text": "done"}
    sent = model.requests[-1]
    assert sent[1]["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "weather", "arguments": {"city": "Oslo"}},
        }
    ]
    assert sent[2] == {"role": "tool", "tool_call_id": "c1", "content": "sunny in Oslo"}
    assert sent[3]["role"] == "assistant" and sent[3]["tool_calls"] == sent[1]["tool_calls"]


def test_as_messages_accepts_replies_and_tool_call_objects() -> None:
    reply = ModelResponse(content=None, tool_calls=[ToolCall("c1", "weather", {"city": "Oslo"})])
    wanted = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "weather", "arguments": {"city": "Oslo"}},
            }
        ],
    }
    assert as_messages([reply]) == [wanted]
    assert as_messages(
        [{"role": "assistant", "content": None, "tool_calls": reply.tool_calls}]
    ) == [wanted]
    flat = {"id": "c1", "name": "weather", "arguments": {"city": "Oslo"}}
    assert as_messages([{"role": "assistant", "content": None, "tool_calls": [flat]}]) == [wanted]
    assert as_messages([wanted]) == [wanted]
    outcome = ToolOutcome(ok=False, error="boom")
    assert outcome.for_model() == "ERROR: boom"
    assert outcome.to_message(reply.tool_calls[0]) == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "ERROR: boom",
    }
    assert ToolOutcome(ok=True, output={"a": 1}).to_message("c2")["content"] == '{"a": 1}'


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ("hello", "must be a list"),
        (["hello"], r"messages\[0\] must be a dict with a role"),
        ([{"content": "x"}], r"messages\[0\] must be a dict with a role"),
        ([{"role": "assistant", "tool_calls": [42]}], r"messages\[0\]\.tool_calls holds 42"),
    ],
)
def test_as_messages_refuses_other_things_clearly(messages: Any, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        as_messages(messages)
