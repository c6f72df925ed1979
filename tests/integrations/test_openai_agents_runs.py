"""A Runner call with a TetherSession is a tether run of that session: its model calls (with
usage) and tool calls as steps, handoffs as notes, its end and error; a human-in-the-loop
interruption leaves it waiting, and the SDK's RunState continues that same run."""

from __future__ import annotations

from typing import Any

import pytest

import tether
from tests.integrations import framework
from tests.support import Backend
from tether.core.status import RunStatus
from tether.core.step import StepKind

framework("agents", "openai-agents")

from agents import Agent, RunConfig, Runner, function_tool  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402
from agents.usage import Usage as AgentsUsage  # noqa: E402

from tether.integrations.openai_agents import TetherSession, runs  # noqa: E402

pytestmark = pytest.mark.usefixtures("close_the_default_loop")

USAGE = AgentsUsage(requests=1, input_tokens=12, output_tokens=3, total_tokens=15)


@function_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@function_tool(needs_approval=True)
def transfer(amount: int) -> str:
    """Move money (a person approves it first)."""
    return f"moved {amount}"


@pytest.fixture
def tt(backend: Backend) -> Any:
    """tether on SQLite (awaited on the Runner's loop) and on PostgreSQL (on tether's own)."""
    opened = tether.open(backend.new_url(), worker=False)
    yield opened
    opened.close()


def scripted(*steps: Any) -> ScriptedModel:
    return ScriptedModel(list(steps), emit_traces=True, default_usage=USAGE)


def runs_of(tt: tether.Tether, key: str) -> list[tether.RunHandle]:
    return tt.sessions.get(key=key).runs.list()


def test_a_runner_call_is_a_run_with_its_model_and_tool_calls(tt: tether.Tether) -> None:
    model = scripted(
        [function_call("add", {"a": 2, "b": 2}, call_id="c1")], [assistant_message("4")]
    )
    agent = Agent(name="calc", instructions="Add.", model=model, tools=[add])
    session = TetherSession("calc-user", tt)
    assert Runner.run_sync(agent, "2 + 2?", session=session).final_output == "4"
    session.close()  # waits for what is being recorded
    [run] = runs_of(tt, "calc-user")
    assert (run.status, run.agent, run.error) == (RunStatus.COMPLETED, "openai-agents", None)
    assert (run.goal, run.output) == ("2 + 2?", {"text": "4"})  # the input, the final output
    assert run.started_at is not None and run.ended_at is not None
    assert [(s.kind, s.name) for s in run.steps] == [
        (StepKind.MODEL_CALL, "model"),
        (StepKind.TOOL_CALL, "add"),
        (StepKind.MODEL_CALL, "model"),
    ]
    tool = run.steps[1]
    assert (tool.input, tool.output) == ({"a": 2, "b": 2}, 4)
    assert run.steps[0].usage == tether.Usage(12, 3, 1)
    assert run.usage == tether.Usage(24, 6, 2)
    assert [s.id for s in tt.sessions.get(key="calc-user").tool_calls()] == [tool.id]


def test_a_failing_call_is_a_failed_run_with_its_error(tt: tether.Tether) -> None:
    agent = Agent(name="calc", model=scripted(RuntimeError("model down")))
    session = TetherSession("failing", tt)
    with pytest.raises(RuntimeError, match="model down"):
        Runner.run_sync(agent, "hi", session=session)
    session.close()
    [run] = runs_of(tt, "failing")
    assert run.status is RunStatus.FAILED and run.error is not None
    assert (run.goal, run.output) == ("hi", None)
    assert "model down" in run.error.message


def test_the_goal_is_the_text_of_the_input_items(tt: tether.Tether) -> None:
    agent = Agent(name="eyes", model=scripted([assistant_message("A cat.")]))
    session = TetherSession("looking", tt)
    given = [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is in this picture?"},
                {"type": "input_image", "image_url": "https://example.test/cat.png"},
            ],
        }
    ]
    Runner.run_sync(agent, given, session=session)  # type: ignore[arg-type]
    session.close()
    [run] = runs_of(tt, "looking")
    assert (run.goal, run.output) == ("What is in this picture?", {"text": "A cat."})


def test_each_call_is_the_next_run_and_a_handoff_is_a_note(tt: tether.Tether) -> None:
    model = scripted(
        [assistant_message("Hello")],
        [function_call("transfer_to_billing", {}, call_id="h1")],
        [assistant_message("Billing here")],
    )
    billing = Agent(name="billing", model=model)
    front = Agent(name="front", model=model, handoffs=[billing])
    session = TetherSession("desk", tt)
    Runner.run_sync(front, "Hi", session=session)
    assert Runner.run_sync(front, "My bill", session=session).final_output == "Billing here"
    session.close()
    first, second = runs_of(tt, "desk")
    assert (first.seq, second.seq) == (1, 2)
    assert [(r.goal, r.output) for r in (first, second)] == [
        ("Hi", {"text": "Hello"}),
        ("My bill", {"text": "Billing here"}),
    ]
    assert {first.status, second.status} == {RunStatus.COMPLETED}
    [note] = [s for s in second.steps if s.kind is StepKind.NOTE]
    assert (note.name, note.input) == ("handoff", {"from_agent": "front", "to_agent": "billing"})


async def test_an_interruption_waits_and_run_state_continues_the_same_run(
    tt: tether.Tether,
) -> None:
    model = scripted(
        [function_call("transfer", {"amount": 5}, call_id="t1")], [assistant_message("Done")]
    )
    agent = Agent(name="bank", model=model, tools=[transfer])
    session = TetherSession("approvals", tt)
    first = await Runner.run(agent, "Move 5", session=session)
    [approval] = first.interruptions
    runs.flush()  # the run is written on a thread of its own: wait for it
    [waiting] = runs_of(tt, "approvals")
    assert waiting.status is RunStatus.WAITING
    assert waiting.waiting_for is not None and waiting.waiting_for["tool_call_ids"] == ["t1"]
    assert [s.kind for s in waiting.steps] == [StepKind.MODEL_CALL, StepKind.MESSAGE]
    state = first.to_state()
    state.approve(approval)
    assert (await Runner.run(agent, state, session=session)).final_output == "Done"
    session.close()
    [done] = runs_of(tt, "approvals")
    assert done.id == waiting.id and done.status is RunStatus.COMPLETED
    assert [(s.kind, s.name) for s in done.steps] == [
        (StepKind.MODEL_CALL, "model"),
        (StepKind.MESSAGE, "wait_for_approval"),
        (StepKind.TOOL_CALL, "transfer"),
        (StepKind.MODEL_CALL, "model"),
    ]
    assert done.steps[2].output == "moved 5"


def test_with_tracing_disabled_the_conversation_is_kept_and_no_run_recorded(
    tt: tether.Tether,
) -> None:
    agent = Agent(name="quiet", model=scripted([assistant_message("ok")]))
    session = TetherSession("untraced", tt)
    Runner.run_sync(agent, "hi", session=session, run_config=RunConfig(tracing_disabled=True))
    session.close()
    handle = tt.sessions.get(key="untraced")
    assert [m.content for m in handle.messages.list()] == ["hi", "ok"]
    assert handle.runs.list() == []
