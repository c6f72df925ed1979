"""A Runner call with a TetherSession on a ``tether.connect`` handle is recorded over HTTP
exactly as on ``tether.open``: its model and tool calls as steps, an error as a failed run, a
human-in-the-loop interruption as a waiting run that the SDK's RunState continues; against a
real ``tether serve`` on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import tether
from tests.api.httpkit import Server
from tests.integrations import framework
from tests.pg import Databases
from tests.serving import serve
from tether.core.status import RunStatus
from tether.core.step import StepKind

framework("agents", "openai-agents")

from agents import Agent, Runner, function_tool  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402
from agents.usage import Usage as AgentsUsage  # noqa: E402

from tether.integrations.openai_agents import TetherSession, runs  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("close_the_default_loop")]

USAGE = AgentsUsage(requests=1, input_tokens=12, output_tokens=3, total_tokens=15)


@function_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@function_tool(needs_approval=True)
def transfer(amount: int) -> str:
    """Move money (a person approves it first)."""
    return f"moved {amount}"


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """One ``tether serve`` per backend for the module."""
    databases: Databases | None = None
    url = None
    if request.param == "postgres":
        databases = request.getfixturevalue("pg_databases")
        url = databases.new_url()
    folder = tmp_path_factory.mktemp("agents-over-http")
    server = serve(Server, folder / "tether.db", owners=("alice",), url=url)
    yield server
    server.stop()
    if databases is not None:
        databases.drop_made()


@pytest.fixture
def tt(served: Server) -> Iterator[tether.Tether]:
    with tether.connect(served.url, api_key=served.keys["alice"]) as remote:
        yield remote


def scripted(*steps: Any) -> ScriptedModel:
    return ScriptedModel(list(steps), emit_traces=True, default_usage=USAGE)


def test_a_runner_call_over_http_is_a_run_with_its_model_and_tool_calls(tt: tether.Tether) -> None:
    model = scripted(
        [function_call("add", {"a": 2, "b": 2}, call_id="c1")], [assistant_message("4")]
    )
    agent = Agent(name="calc", instructions="Add.", model=model, tools=[add])
    session = TetherSession("calc-remote", tt)
    assert Runner.run_sync(agent, "2 + 2?", session=session).final_output == "4"
    session.close()  # waits for what is being recorded
    [run] = tt.sessions.get(key="calc-remote").runs.list()
    assert (run.status, run.agent, run.goal, run.output) == (
        RunStatus.COMPLETED,
        "openai-agents",
        "2 + 2?",
        {"text": "4"},
    )
    assert [(s.kind, s.name) for s in run.steps] == [
        (StepKind.MODEL_CALL, "model"),
        (StepKind.TOOL_CALL, "add"),
        (StepKind.MODEL_CALL, "model"),
    ]
    assert (run.steps[1].input, run.steps[1].output) == ({"a": 2, "b": 2}, 4)
    assert run.usage == tether.Usage(24, 6, 2)


def test_a_failing_call_over_http_is_a_failed_run(tt: tether.Tether) -> None:
    agent = Agent(name="calc", model=scripted(RuntimeError("model down")))
    session = TetherSession("failing-remote", tt)
    with pytest.raises(RuntimeError, match="model down"):
        Runner.run_sync(agent, "hi", session=session)
    session.close()
    [run] = tt.sessions.get(key="failing-remote").runs.list()
    assert run.status is RunStatus.FAILED and run.error is not None
    assert "model down" in run.error.message


async def test_an_interruption_over_http_waits_and_run_state_continues_it(
    tt: tether.Tether,
) -> None:
    model = scripted(
        [function_call("transfer", {"amount": 5}, call_id="t1")], [assistant_message("Done")]
    )
    agent = Agent(name="bank", model=model, tools=[transfer])
    session = TetherSession("approvals-remote", tt)
    first = await Runner.run(agent, "Move 5", session=session)
    [approval] = first.interruptions
    runs.flush()
    [waiting] = tt.sessions.get(key="approvals-remote").runs.list()
    assert waiting.status is RunStatus.WAITING and waiting.waiting_for is not None
    assert waiting.waiting_for["tool_call_ids"] == ["t1"]
    state = first.to_state()
    state.approve(approval)
    assert (await Runner.run(agent, state, session=session)).final_output == "Done"
    session.close()
    [done] = tt.sessions.get(key="approvals-remote").runs.list()
    assert done.id == waiting.id and done.status is RunStatus.COMPLETED
    assert [(s.kind, s.name) for s in done.steps] == [
        (StepKind.MODEL_CALL, "model"),
        (StepKind.MESSAGE, "wait_for_approval"),
        (StepKind.TOOL_CALL, "transfer"),
        (StepKind.MODEL_CALL, "model"),
    ]
