"""Bring your own model: ``tether.open``, ``tether.open_async`` and a Worker read the
TETHER_MODEL_* settings the way ``tether serve`` does (explicit ``models=`` still wins), the
built-in model-and-tools loop runs on an OpenAI-compatible server, and without a model the
error says how to configure one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tether
from tests.engine.engine_helpers import Engine, FakeOpenAI, completion, wait_status
from tests.waiting import WAIT
from tether.core.status import RUN_TERMINAL, RunStatus, StepStatus
from tether.core.step import StepKind
from tether.runtime.agent import AgentRegistry
from tether.runtime.models.catalog import ModelCatalog
from tether.runtime.models.openai import OpenAIChatModel
from tether.runtime.run_context import RunContext

API_KEY = "sk-own-model"
SETTINGS = ("TETHER_MODEL_BASE_URL", "TETHER_MODEL", "TETHER_MODEL_API_KEY")


def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@pytest.fixture
def own_model(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    """The environment names the fake server, as a user's shell would."""
    monkeypatch.setenv("TETHER_MODEL_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("TETHER_MODEL", "fake-model")
    monkeypatch.setenv("TETHER_MODEL_API_KEY", API_KEY)
    return fake_openai


@pytest.fixture
def calc() -> AgentRegistry:
    agents = AgentRegistry()
    tether.agent("calc", instructions="Add numbers with the tool.", tools=[add], registry=agents)
    return agents


def _script_addition(server: FakeOpenAI) -> None:
    server.script(
        completion(tool_calls=[("call_1", "add", {"a": "two", "b": 3})]),
        completion(tool_calls=[("call_2", "add", {"a": 2, "b": 3})]),
        completion("2 + 3 = 5"),
    )


def _assert_addition_requests(server: FakeOpenAI) -> None:
    """Three authenticated chat requests: the loop sent the tool schema, handed the invalid
    call's error back as a result, then the sum."""
    assert len(server.received) == 3
    for received in server.received:
        assert received.headers["authorization"] == f"Bearer {API_KEY}"
        assert received.body["model"] == "fake-model"
        assert [t["function"]["name"] for t in received.body["tools"]] == ["add"]
    first, second, third = (r.body["messages"] for r in server.received)
    assert first[0] == {"role": "system", "content": "Add numbers with the tool."}
    assert first[-1] == {"role": "user", "content": "What is 2 + 3?"}
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "call_1"
    assert second[-1]["content"].startswith("ERROR: add: invalid arguments (a:")
    assert third[-1] == {"role": "tool", "tool_call_id": "call_2", "content": "5"}


def test_tether_open_takes_the_model_settings_from_the_environment(
    tmp_path: Path, own_model: FakeOpenAI, calc: AgentRegistry
) -> None:
    _script_addition(own_model)
    with tether.open(tmp_path / "own.db", agents=calc) as tt:
        run = tt.sessions.create().runs.create("What is 2 + 3?", agent="calc").wait(WAIT)
        assert run.status is RunStatus.COMPLETED, run.error
        assert run.output == {"text": "2 + 3 = 5"}
        assert [(s.kind, s.status) for s in run.steps] == [
            (StepKind.MODEL_CALL, StepStatus.COMPLETED),
            (StepKind.TOOL_CALL, StepStatus.FAILED),
            (StepKind.MODEL_CALL, StepStatus.COMPLETED),
            (StepKind.TOOL_CALL, StepStatus.COMPLETED),
            (StepKind.MODEL_CALL, StepStatus.COMPLETED),
            (StepKind.MESSAGE, StepStatus.COMPLETED),
        ]
        assert run.steps[0].name == "fake-model"
    _assert_addition_requests(own_model)


async def test_tether_open_async_takes_the_model_settings_from_the_environment(
    tmp_path: Path, own_model: FakeOpenAI, calc: AgentRegistry
) -> None:
    _script_addition(own_model)
    tt = await tether.open_async(tmp_path / "own.db", agents=calc)
    try:
        session = await tt.sessions.create()
        run = await (await session.runs.create("What is 2 + 3?", agent="calc")).wait(WAIT)
        assert run.status is RunStatus.COMPLETED, run.error
        assert run.output == {"text": "2 + 3 = 5"}
    finally:
        await tt.close()
    _assert_addition_requests(own_model)


async def test_a_worker_takes_the_model_settings_and_resumes_after_approval_without_recalling(
    db_path: Path, own_model: FakeOpenAI
) -> None:
    deleted: list[str] = []

    @tether.tool(needs_approval=True)
    def delete_branch(name: str) -> str:
        """Delete a git branch."""
        deleted.append(name)
        return f"deleted {name}"

    agents = AgentRegistry()
    tether.agent("janitor", instructions="Tidy up.", tools=[delete_branch], registry=agents)
    own_model.script(
        completion(tool_calls=[("call_1", "delete_branch", {"name": "old"})]),
        completion("Deleted the old branch."),
    )
    async with Engine(db_path, agents=agents) as eng:  # no models=: the worker reads them
        svc = eng.service
        eng.worker()
        session = await svc.create_session()
        run = await svc.create_run(session.id, "Remove the old branch", agent="janitor")
        waiting = await svc.wait_run(run.id, timeout=WAIT)
        assert waiting.status is RunStatus.WAITING, waiting.error
        assert waiting.waiting_for is not None and waiting.waiting_for["tool"] == "delete_branch"
        assert len(own_model.received) == 1 and deleted == []

        await svc.resume_run(run.id, "yes")
        done = await wait_status(svc, run.id, *RUN_TERMINAL)
        assert done.status is RunStatus.COMPLETED, done.error
        assert done.output == {"text": "Deleted the old branch."}
    assert deleted == ["old"]
    assert len(own_model.received) == 2, "the model call before the approval was not repeated"
    last = own_model.received[-1].body["messages"]
    assert last[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "deleted old"}


def test_explicit_models_win_over_the_environment(
    tmp_path: Path, own_model: FakeOpenAI, calc: AgentRegistry
) -> None:
    mine = tether.ScriptedModel([tether.ModelResponse(content="from my own model")])
    models = ModelCatalog({"mine": mine}, default="mine")
    with tether.open(tmp_path / "own.db", agents=calc, models=models) as tt:
        run = tt.sessions.create().runs.create("What is 2 + 3?", agent="calc").wait(WAIT)
        assert run.status is RunStatus.COMPLETED, run.error
        assert run.output == {"text": "from my own model"}
    assert own_model.received == []
    mine.assert_consumed()


async def completer(ctx: RunContext) -> Any:
    """Asks the run's model directly, as a hand-written agent does."""
    return (await ctx.complete([{"role": "user", "content": ctx.goal}])).content


def test_without_a_model_the_error_says_how_to_configure_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    agents = AgentRegistry()
    agents.register("completer", completer)
    with tether.open(tmp_path / "none.db", agents=agents) as tt:
        run = tt.sessions.create().runs.create("hello", agent="completer").wait(WAIT)
    assert run.status is RunStatus.FAILED
    assert run.error is not None and run.error.type == "ModelError"
    assert run.error.message.startswith("this run has no model configured: set ")
    for hint in (*SETTINGS, "models=", "tether.open"):
        assert hint in run.error.message


def test_half_configured_settings_are_refused_when_opening(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_MODEL_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("TETHER_MODEL", raising=False)
    with pytest.raises(tether.UsageError, match="TETHER_MODEL_BASE_URL is set but TETHER_MODEL"):
        tether.open(tmp_path / "half.db")


async def test_the_adapter_takes_replies_and_tool_call_objects_in_messages(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(completion("fine"))
    model = OpenAIChatModel(base_url=fake_openai.base_url, model="fake-model")
    reply = tether.ModelResponse(tool_calls=[tether.ToolCall("call_1", "add", {"a": 2, "b": 3})])
    answer = await model.complete(
        [
            {"role": "user", "content": "2 + 3?"},
            {"role": "assistant", "content": None, "tool_calls": reply.tool_calls},
            reply,
            {"role": "tool", "tool_call_id": "call_1", "content": "5"},
        ],
        [],
    )
    assert answer.content == "fine"
    sent = fake_openai.received[0].body["messages"]
    wired = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
    }
    assert sent[1]["tool_calls"] == sent[2]["tool_calls"] == [wired]
