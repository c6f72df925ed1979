"""Runs that wait for a person (input or approval), across restarts; replay on resume/retry."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.engine.engine_agents import append_line, lines_of
from tests.engine.engine_helpers import Engine, WorkerProcess, wait_status
from tests.waiting import WAIT
from tether.core.status import RUN_TERMINAL, RunStatus, StepStatus
from tether.core.step import StepKind
from tether.core.usage import Usage
from tether.runtime.models import ModelResponse, ScriptedModel, ToolCall

TERMINAL = tuple(RUN_TERMINAL)


@pytest.mark.parametrize(
    "resumed_in", ["this process", pytest.param("another process", marks=pytest.mark.slow)]
)
async def test_a_waiting_run_frees_its_slot_survives_a_restart_and_resumes(
    db_path: Path,
    tmp_path: Path,
    worker_process: Callable[..., WorkerProcess],
    resumed_in: str,
) -> None:
    log = tmp_path / "log"
    async with Engine(db_path) as eng:
        svc = eng.service
        eng.worker(concurrency=1)
        session = await svc.create_session(title="ask me")
        run = await svc.create_run(
            session.id,
            "fix it, after asking",
            agent="engine_asks",
            input={"log": str(log), "prompt": "Apply the fix?"},
        )
        waiting = await svc.wait_run(run.id, timeout=WAIT)
        assert waiting.status is RunStatus.WAITING
        assert waiting.worker_id is None and waiting.lease_expires_at is None
        steps_before = await svc.list_steps(run.id)
        wait_step = steps_before[-1]
        assert (wait_step.name, wait_step.kind, wait_step.status) == (
            "wait_for_input",
            StepKind.MESSAGE,
            StepStatus.RUNNING,
        )
        assert waiting.waiting_for == {
            "kind": "input",
            "prompt": "Apply the fix?",
            "step_id": wait_step.id,
            "choices": ["yes", "no"],
        }

        # The slot is free: with concurrency 1, another run executes while this one waits.
        other_session = await svc.create_session(title="meanwhile")
        other = await svc.create_run(other_session.id, "meanwhile", agent="echo")
        assert (await svc.wait_run(other.id, timeout=WAIT)).status is RunStatus.COMPLETED
        assert (await svc.get_run(run.id)).status is RunStatus.WAITING
        assert lines_of(log) == ["before the question"]

    # Everything is closed; a new process opens the file again.
    async with Engine(db_path) as eng:
        svc = eng.service
        reopened = await svc.get_run(run.id)
        assert reopened.status is RunStatus.WAITING
        assert reopened.waiting_for == waiting.waiting_for
        proc = None
        if resumed_in == "this process":
            eng.worker(concurrency=1)
        else:
            proc = worker_process(concurrency=1)
        resumed = await svc.resume_run(run.id, "yes")
        assert resumed.status is RunStatus.RUNNING and resumed.waiting_for is None

        done = await wait_status(svc, run.id, *TERMINAL)
        assert done.status is RunStatus.COMPLETED, done.error
        assert done.output == {"answer": "yes"}
        # Replayed, not executed again: the first tool call happened once.
        assert lines_of(log) == ["before the question", "answer yes"]
        steps = await svc.list_steps(run.id)
        assert [s.name for s in steps] == ["append", "asking", "wait_for_input", "append"]
        for old, new in zip(steps_before[:-1], steps[:2], strict=True):
            assert new == old
        answered = steps[2]
        assert answered.id == wait_step.id and answered.status is StepStatus.COMPLETED
        assert answered.output == {"input": "yes"}
        assert steps[3].status is StepStatus.COMPLETED
        types: list[str] = [e.type for e in await svc.list_events(run_id=run.id)]
        assert types.count("run.waiting") == 1 and types.count("run.resumed") == 1
        assert types[-1] == "run.completed"
        resumed_events = [
            e for e in await svc.list_events(run_id=run.id) if e.type == "run.resumed"
        ]
        assert resumed_events[0].data["input"] == "yes"
        if proc is not None:
            assert proc.proc.poll() is None


@pytest.mark.parametrize(
    ("answer", "approved"),
    [("yes", True), ({"approved": True}, True), (True, True), ("no", False), (False, False)],
)
async def test_a_tool_needing_approval_waits_then_runs_once_or_is_declined(
    db_path: Path, tmp_path: Path, answer: Any, approved: bool
) -> None:
    log = tmp_path / "log"
    async with Engine(db_path) as eng:
        svc = eng.service
        eng.worker()
        session = await svc.create_session(title="approve")
        run = await svc.create_run(
            session.id, "clean up", agent="engine_approver", input={"log": str(log)}
        )
        waiting = await svc.wait_run(run.id, timeout=WAIT)
        assert waiting.status is RunStatus.WAITING
        assert waiting.waiting_for is not None
        assert waiting.waiting_for["kind"] == "approval"
        assert waiting.waiting_for["tool"] == "delete_branch"
        assert waiting.waiting_for["arguments"] == {"name": "old"}
        assert "delete_branch" in waiting.waiting_for["prompt"]
        assert lines_of(log) == [], "nothing runs before a person approves"

        await svc.resume_run(run.id, answer)
        done = await wait_status(svc, run.id, *TERMINAL)
        assert done.status is RunStatus.COMPLETED, done.error
        tool_calls = (await svc.list_tool_calls(run_id=run.id)).data
        if approved:
            assert lines_of(log) == ["deleted old"], "the approved tool ran exactly once"
            assert done.output["ok"] is True and done.output["for_model"] == "deleted old"
            assert [(s.name, s.status) for s in tool_calls] == [
                ("delete_branch", StepStatus.COMPLETED)
            ]
            assert tool_calls[0].input == {"arguments": {"name": "old"}, "call_id": "call_1"}
        else:
            assert lines_of(log) == []
            assert done.output["ok"] is False
            assert done.output["for_model"].startswith("ERROR: ")
            assert "declined" in done.output["for_model"]
            assert tool_calls == []
        names = [s.name for s in await svc.list_steps(run.id)]
        assert names.count("about to ask") == 1 and names.count("wait_for_approval") == 1


async def test_declining_through_ctx_tool_raises_a_tool_error_in_the_agent(
    db_path: Path, tmp_path: Path
) -> None:
    async with Engine(db_path) as eng:
        svc = eng.service
        eng.worker()
        session = await svc.create_session(title="approve")
        run = await svc.create_run(
            session.id,
            "clean up",
            agent="engine_approver",
            input={"log": str(tmp_path / "log"), "raising": True},
        )
        assert (await svc.wait_run(run.id, timeout=WAIT)).status is RunStatus.WAITING
        await svc.resume_run(run.id, "no")
        done = await wait_status(svc, run.id, *TERMINAL)
        assert done.status is RunStatus.COMPLETED
        assert done.output["ok"] is False and "declined" in done.output["error"]


async def test_a_model_is_not_asked_again_when_a_run_resumes(db_path: Path, tmp_path: Path) -> None:
    """A model-driven run waits for an approval; on resume the agent runs from the top, its
    earlier model call is replayed from the store, and the scripted model is asked only for
    what is new."""
    log = tmp_path / "log"

    def final(messages: list[dict[str, Any]]) -> ModelResponse:
        assert messages[-1] == {"role": "tool", "tool_call_id": "c1", "content": "deleted old"}
        return ModelResponse(content="Deleted the old branch.", usage=Usage(30, 5, 1))

    model = ScriptedModel(
        [
            ModelResponse(
                tool_calls=[ToolCall("c1", "delete_branch", {"name": "old"})],
                usage=Usage(20, 4, 1),
            ),
            final,
        ]
    )
    async with Engine(db_path, models=lambda run: model) as eng:
        svc = eng.service
        eng.worker()
        session = await svc.create_session(title="chat")
        run = await svc.create_run(
            session.id, "delete the old branch", agent="engine_chat", input={"log": str(log)}
        )
        assert (await svc.wait_run(run.id, timeout=WAIT)).status is RunStatus.WAITING
        assert len(model.requests) == 1
        await svc.resume_run(run.id, "approve")
        done = await wait_status(svc, run.id, *TERMINAL)
        assert done.status is RunStatus.COMPLETED, done.error
        model.assert_consumed()
        assert len(model.requests) == 2
        assert lines_of(log) == ["deleted old"]
        assert done.usage == Usage(50, 9, 2)
        kinds = [(s.kind.value, s.name) for s in await svc.list_steps(run.id)]
        assert kinds == [
            ("model_call", "scripted"),
            ("message", "wait_for_approval"),
            ("tool_call", "delete_branch"),
            ("model_call", "scripted"),
            ("message", "assistant_message"),
        ]


@pytest.mark.parametrize("via", ["tool", "call_tool"])
async def test_a_tool_call_whose_result_was_never_recorded_is_in_doubt(
    db_path: Path, tmp_path: Path, via: str
) -> None:
    """A worker records the first call, starts the second and dies before recording its result
    (played here through the store, as that worker would have). The retry replays the first
    call, does not repeat the second, and tells the agent it is in doubt."""
    log = tmp_path / "log"
    async with Engine(db_path) as eng:
        svc, store = eng.service, eng.store
        session = await svc.create_session(title="doubt")
        run = await svc.create_run(
            session.id,
            "two calls",
            agent="engine_doubter",
            input={"log": str(log), "via": via},
            max_attempts=2,
        )
        now = svc.clock.now()
        claimed = await store.claim_run(worker_id="doomed", now=now, lease_seconds=0.2)
        assert claimed is not None and claimed.id == run.id
        first = await store.start_step(
            run_id=run.id,
            worker_id="doomed",
            position=1,
            kind=StepKind.TOOL_CALL,
            name="append",
            input={"arguments": {"line": "one"}, "call_id": None},
            now=now,
        )
        append_line(str(log), "one")
        first = await store.finish_step(
            first.id,
            worker_id="doomed",
            status=StepStatus.COMPLETED,
            now=now,
            output="appended one",
        )
        second = await store.start_step(
            run_id=run.id,
            worker_id="doomed",
            position=2,
            kind=StepKind.TOOL_CALL,
            name="append",
            input={"arguments": {"line": "two"}, "call_id": None},
            now=now,
        )
        append_line(str(log), "two")  # its effect happened; its result is never recorded

        eng.worker()
        done = await wait_status(svc, run.id, *TERMINAL)
        assert done.status is RunStatus.COMPLETED, done.error
        assert done.attempt == 2
        assert lines_of(log) == ["one", "two"], "neither call was repeated"
        if via == "tool":
            assert done.output["first"] == "appended one"
            message = done.output["in_doubt"]
        else:
            assert done.output["ok"] is False and done.output["in_doubt"] is True
            message = done.output["for_model"]
            assert message.startswith("ERROR: ")
        assert "append" in message and "never recorded" in message
        steps = await svc.list_steps(run.id)
        assert [s.id for s in steps] == [first.id, second.id], "no new tool call was recorded"
        assert steps[0] == first
        assert steps[1].status is StepStatus.IN_DOUBT
        assert steps[1].error is not None and steps[1].error.type == "interrupted"
        in_doubt = (await svc.list_tool_calls(session_id=session.id, status="in_doubt")).data
        assert [s.id for s in in_doubt] == [second.id]


async def test_a_failed_step_block_fails_again_on_replay_instead_of_passing(
    db_path: Path,
) -> None:
    from tether.runtime.agent import AgentRegistry
    from tether.runtime.run_context import RunContext, StepFailed

    agents = AgentRegistry()
    attempts: list[str] = []

    async def careful(ctx: RunContext) -> dict[str, Any]:
        try:
            async with ctx.step("note", "risky") as step:
                attempts.append("ran")
                if not step.replayed:
                    raise RuntimeError("disk full")
            outcome = "worked"
        except (RuntimeError, StepFailed) as exc:
            outcome = f"broke: {exc}"
        answer = await ctx.wait_for_input(f"{outcome}; go on?")
        return {"outcome": outcome, "answer": answer}

    agents.register("careful", careful)
    async with Engine(db_path, agents=agents) as eng:
        svc = eng.service
        eng.worker()
        session = await svc.create_session(title="replay a failure")
        run = await svc.create_run(session.id, "try", agent="careful")
        waiting = await svc.wait_run(run.id, timeout=WAIT)
        assert waiting.status is RunStatus.WAITING
        await svc.resume_run(run.id, "yes")
        done = await wait_status(svc, run.id, *TERMINAL)
    assert done.status is RunStatus.COMPLETED, done.error
    assert done.output == {"outcome": "broke: disk full", "answer": "yes"}
    assert attempts == ["ran"], "the failed block is not run again on replay"
