"""The OpenAI-compatible adapter against a local fake server, end to end through a worker."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.engine.engine_helpers import (
    Engine,
    FakeOpenAI,
    WorkerProcess,
    completion,
    provider_error,
    wait_status,
)
from tether.config import model_catalog
from tether.core.errors import ModelError, UsageError
from tether.core.status import RUN_TERMINAL, RunStatus, SessionStatus, StepStatus
from tether.core.step import StepKind
from tether.core.usage import Usage
from tether.runtime.models.catalog import ModelCatalog
from tether.runtime.models.openai import OpenAIChatModel

TERMINAL = tuple(RUN_TERMINAL)
API_KEY = "sk-test-123"


def _catalog(server: FakeOpenAI) -> ModelCatalog:
    """The model the environment configures (as ``tether serve``/``tether worker`` read it)."""
    return model_catalog(
        {
            "TETHER_MODEL_BASE_URL": server.base_url,
            "TETHER_MODEL": "fake-model",
            "TETHER_MODEL_API_KEY": API_KEY,
        }
    )


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "hello.txt").write_text("hello world\n")
    return ws


async def _coder_run(eng: Engine, workspace: Path, goal: str) -> str:
    svc = eng.service
    session = await svc.create_session(title="model", project={"workspace": str(workspace)})
    run = await svc.create_run(session.id, goal, agent="coder")
    return run.id


def _assert_chat_request(received: Any) -> dict[str, Any]:
    """A well-formed chat-completions request, authenticated; its payload."""
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == f"Bearer {API_KEY}"
    assert received.headers["content-type"].startswith("application/json")
    payload: dict[str, Any] = received.body
    assert payload["model"] == "fake-model"
    assert isinstance(payload["messages"], list) and payload["messages"]
    for message in payload["messages"]:
        assert message["role"] in ("system", "user", "assistant", "tool")
    names = {t["function"]["name"] for t in payload["tools"]}
    assert {"list_files", "read_file", "write_file", "run_command"} <= names
    for spec in payload["tools"]:
        assert spec["type"] == "function"
        assert spec["function"]["parameters"]["type"] == "object"
    return payload


@pytest.mark.parametrize(
    "worker", ["in-process", pytest.param("tether worker", marks=pytest.mark.slow)]
)
async def test_coder_runs_on_an_openai_compatible_server_with_tool_calls(
    db_path: Path,
    tmp_path: Path,
    fake_openai: FakeOpenAI,
    worker_process: Callable[..., WorkerProcess],
    worker: str,
) -> None:
    workspace = _workspace(tmp_path)
    fake_openai.script(
        completion(
            tool_calls=[("call_1", "read_file", {"path": "hello.txt"})],
            prompt_tokens=100,
            completion_tokens=10,
        ),
        completion(
            tool_calls=[("call_2", "write_file", {"path": "out.txt", "content": "HELLO WORLD"})],
            prompt_tokens=150,
            completion_tokens=20,
        ),
        completion(
            "Copied hello.txt to out.txt in upper case.", prompt_tokens=200, completion_tokens=30
        ),
    )
    async with Engine(db_path, models=_catalog(fake_openai)) as eng:
        svc = eng.service
        if worker == "in-process":
            eng.worker()
        else:  # the configuration comes from the environment of `tether worker`
            worker_process(
                env={
                    "TETHER_MODEL_BASE_URL": fake_openai.base_url,
                    "TETHER_MODEL": "fake-model",
                    "TETHER_MODEL_API_KEY": API_KEY,
                }
            )
        run_id = await _coder_run(eng, workspace, "Copy hello.txt to out.txt in upper case")
        done = await wait_status(svc, run_id, *TERMINAL)
        assert done.status is RunStatus.COMPLETED, done.error
        assert done.output["summary"] == "Copied hello.txt to out.txt in upper case."
        assert (workspace / "out.txt").read_text() == "HELLO WORLD"

        # What the server received.
        assert len(fake_openai.received) == 3
        payloads = [_assert_chat_request(r) for r in fake_openai.received]
        first = payloads[0]["messages"]
        assert [m["role"] for m in first] == ["system", "user"]
        assert first[1]["content"] == "Copy hello.txt to out.txt in upper case"
        second = payloads[1]["messages"]
        assert [m["role"] for m in second] == ["system", "user", "assistant", "tool"]
        call = second[2]["tool_calls"][0]
        assert call["id"] == "call_1" and call["type"] == "function"
        assert call["function"]["name"] == "read_file"
        arguments = call["function"]["arguments"]
        assert isinstance(arguments, str), "tool-call arguments go back as a JSON string"
        assert json.loads(arguments) == {"path": "hello.txt"}
        assert second[3] == {"role": "tool", "tool_call_id": "call_1", "content": "hello world\n"}
        third = payloads[2]["messages"]
        assert third[-1]["tool_call_id"] == "call_2"
        assert json.loads(third[-1]["content"]) == {
            "path": "out.txt",
            "bytes": 11,
            "created": True,
        }

        # What the run recorded: usage per model call, rolled up on the run and the session.
        steps = await svc.list_steps(run_id)
        assert [(s.kind, s.name, s.status) for s in steps] == [
            (StepKind.MODEL_CALL, "fake-model", StepStatus.COMPLETED),
            (StepKind.TOOL_CALL, "read_file", StepStatus.COMPLETED),
            (StepKind.MODEL_CALL, "fake-model", StepStatus.COMPLETED),
            (StepKind.TOOL_CALL, "write_file", StepStatus.COMPLETED),
            (StepKind.MODEL_CALL, "fake-model", StepStatus.COMPLETED),
            (StepKind.MESSAGE, "assistant_message", StepStatus.COMPLETED),
        ]
        model_steps = [s for s in steps if s.kind is StepKind.MODEL_CALL]
        assert [s.usage for s in model_steps] == [
            Usage(100, 10, 1),
            Usage(150, 20, 1),
            Usage(200, 30, 1),
        ]
        assert steps[1].input == {"arguments": {"path": "hello.txt"}, "call_id": "call_1"}
        assert steps[1].output == "hello world\n"
        assert done.usage == Usage(450, 60, 3)
        session = await svc.get_session(done.session_id)
        assert session.usage == Usage(450, 60, 3)
        messages = (await svc.list_messages(done.session_id)).data
        assert [m.content for m in messages] == ["Copied hello.txt to out.txt in upper case."]


@pytest.mark.parametrize("status", [429, 503])
async def test_a_retryable_answer_is_retried_within_one_step(
    db_path: Path, tmp_path: Path, fake_openai: FakeOpenAI, status: int
) -> None:
    fake_openai.script(
        provider_error(status, "Rate limit reached, slow down", **{"Retry-After": "0"}),
        completion("Nothing to do.", prompt_tokens=40, completion_tokens=4),
    )
    async with Engine(db_path, models=_catalog(fake_openai)) as eng:
        eng.worker()
        run_id = await _coder_run(eng, _workspace(tmp_path), "Say hi")
        done = await wait_status(eng.service, run_id, *TERMINAL)
        assert done.status is RunStatus.COMPLETED, done.error
        assert done.output["summary"] == "Nothing to do."
        assert len(fake_openai.received) == 2
        assert fake_openai.received[0].body == fake_openai.received[1].body
        steps = await eng.service.list_steps(run_id)
        model_steps = [s for s in steps if s.kind is StepKind.MODEL_CALL]
        assert len(model_steps) == 1, "a retry is not another step"
        assert model_steps[0].status is StepStatus.COMPLETED
        assert model_steps[0].usage == Usage(40, 4, 1)
        assert done.usage == Usage(40, 4, 1)


async def test_a_refused_request_fails_the_run_with_the_providers_message(
    db_path: Path, tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    message = "Invalid value for 'model': the model `fake-model` does not exist."
    fake_openai.script(provider_error(400, message))
    async with Engine(db_path, models=_catalog(fake_openai)) as eng:
        svc = eng.service
        eng.worker()
        run_id = await _coder_run(eng, _workspace(tmp_path), "Say hi")
        done = await wait_status(svc, run_id, *TERMINAL)
        assert done.status is RunStatus.FAILED
        assert len(fake_openai.received) == 1, "a 400 is not retried"
        assert done.error is not None and done.error.type == "ModelError"
        assert "400" in done.error.message and message in done.error.message
        steps = await svc.list_steps(run_id)
        assert len(steps) == 1 and steps[0].kind is StepKind.MODEL_CALL
        assert steps[0].status is StepStatus.FAILED
        assert steps[0].error is not None and message in steps[0].error.message
        assert done.error.step_id == steps[0].id
        session = await svc.get_session(done.session_id)
        assert session.status is SessionStatus.ACTIVE


async def test_the_adapter_alone_gives_up_after_its_retries(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(*[provider_error(500, "upstream exploded", **{"Retry-After": "0"})] * 3)
    model = OpenAIChatModel(
        base_url=fake_openai.base_url, model="fake-model", api_key=API_KEY, max_retries=2
    )
    with pytest.raises(ModelError) as raised:
        await model.complete([{"role": "user", "content": "hi"}], [])
    assert "500" in str(raised.value) and "upstream exploded" in str(raised.value)
    assert len(fake_openai.received) == 3
    assert "tools" not in fake_openai.received[0].body, "no tools, no tools field"


async def test_the_adapter_reports_an_unreachable_server(fake_openai: FakeOpenAI) -> None:
    url = fake_openai.base_url
    fake_openai.close()
    model = OpenAIChatModel(base_url=url, model="m", max_retries=1, backoff=0.01)
    with pytest.raises(ModelError, match="cannot reach the model"):
        await model.complete([{"role": "user", "content": "hi"}], [])


def test_the_model_catalog_from_the_environment() -> None:
    assert model_catalog({}).default is None
    with pytest.raises(UsageError, match="TETHER_MODEL"):
        model_catalog({"TETHER_MODEL_BASE_URL": "http://127.0.0.1:1/v1"})
    catalog = model_catalog({"TETHER_MODEL_BASE_URL": "http://127.0.0.1:1/v1", "TETHER_MODEL": "m"})
    assert catalog.default == "m" and set(catalog.models) == {"offline", "m"}
