"""The OpenAI-compatible adapter streaming (``TETHER_MODEL_STREAM=1``) against a local fake
server: it asks for ``stream: true``, reads the Server-Sent Events chunks (text, tool calls in
pieces, usage), and each piece of text becomes a step.model_chunk event of the run."""

from __future__ import annotations

from pathlib import Path

from tests.engine.engine_helpers import (
    Engine,
    FakeOpenAI,
    provider_error,
    streamed_completion,
    wait_status,
)
from tether.config import model_catalog
from tether.core.event import EventType
from tether.core.status import RUN_TERMINAL, RunStatus
from tether.core.step import StepKind
from tether.core.usage import Usage


async def test_the_coder_streams_its_answers_from_an_openai_compatible_server(
    db_path: Path, tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "hello.txt").write_text("hello world\n")
    fake_openai.script(
        provider_error(503, "busy", **{"Retry-After": "0"}),  # retried: nothing streamed yet
        streamed_completion(
            tool_calls=[("call_1", "read_file", {"path": "hello.txt"})],
            prompt_tokens=100,
            completion_tokens=10,
        ),
        streamed_completion("It says ", "hello ", "world.", prompt_tokens=120, completion_tokens=6),
    )
    env = {
        "TETHER_MODEL_BASE_URL": fake_openai.base_url,
        "TETHER_MODEL": "fake-model",
        "TETHER_MODEL_STREAM": "1",
    }
    async with Engine(db_path, models=model_catalog(env)) as eng:
        svc = eng.service
        eng.worker()
        session = await svc.create_session(project={"workspace": str(workspace)})
        run = await svc.create_run(session.id, "What does hello.txt say?", agent="coder")
        done = await wait_status(svc, run.id, *RUN_TERMINAL)
        assert done.status is RunStatus.COMPLETED, done.error
        assert done.output["summary"] == "It says hello world."

        payloads = [r.body for r in fake_openai.received]
        assert len(payloads) == 3  # the 503, then two model calls
        assert all(p["stream"] is True for p in payloads)
        assert all(p["stream_options"] == {"include_usage": True} for p in payloads)
        steps = await svc.list_steps(run.id)
        tool = next(s for s in steps if s.kind is StepKind.TOOL_CALL)
        assert tool.input == {"arguments": {"path": "hello.txt"}, "call_id": "call_1"}
        assert tool.output == "hello world\n"
        answer = [s for s in steps if s.kind is StepKind.MODEL_CALL][-1]
        assert answer.output["content"] == "It says hello world."
        assert answer.output["finish_reason"] == "stop"
        assert done.usage == Usage(220, 16, 2)

        events = await svc.list_events(run_id=run.id, limit=1000)
        chunks = [e.data for e in events if e.type == EventType.MODEL_CHUNK]
        assert [(c["step_id"], c["text"]) for c in chunks] == [
            (answer.id, "It says "),
            (answer.id, "hello "),
            (answer.id, "world."),
        ]
        messages = await svc.conversation(session.id)
        assert [m.content for m in messages if m.run_id == run.id] == ["It says hello world."]
