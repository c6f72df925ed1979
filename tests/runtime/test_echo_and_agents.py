"""Run execution with a real worker: the echo agent's contract, failing agents, timeouts,
cancellation, unknown agents."""

from __future__ import annotations

from typing import Any

import pytest

from tests.waiting import WAIT, eventually
from tether.core.errors import AgentNotFound
from tether.core.message import Role
from tether.core.run import Run
from tether.core.status import RunStatus, SessionStatus, StepStatus
from tether.core.step import StepKind
from tether.runtime.agent import AgentRegistry
from tether.runtime.run_context import RunContext
from tether.runtime.service import Service
from tether.runtime.worker import Worker

pytestmark = pytest.mark.usefixtures("worker")


async def _run(service: Service, goal: str = "say it", **kwargs: Any) -> Run:
    session = await service.create_session(title="echo")
    run = await service.create_run(session.id, goal, **kwargs)
    return await service.wait_run(run.id, timeout=WAIT)


@pytest.mark.parametrize(
    ("run_input", "expected"),
    [
        ({"text": "from text", "messages": [{"role": "user", "content": "no"}]}, "from text"),
        (
            {
                "messages": [
                    {"role": "user", "content": "older"},
                    {"role": "user", "content": "newest user"},
                    {"role": "assistant", "content": "not me"},
                ]
            },
            "newest user",
        ),
        ({"messages": [{"role": "human", "content": "langgraph style"}]}, "langgraph style"),
        ({"messages": [{"role": "assistant", "content": "no user"}]}, "the goal"),
        ({}, "the goal"),
        ({"text": 42}, "the goal"),  # not a string: ignored
    ],
    ids=["text-wins", "last-user-message", "human-role", "no-user-message", "goal", "bad-text"],
)
async def test_echo_text_precedence(
    service: Service, run_input: dict[str, Any], expected: str
) -> None:
    run = await _run(service, "the goal", agent="echo", input=run_input)
    assert run.status is RunStatus.COMPLETED, run.error
    assert run.output == {"text": f"echo: {expected}"}
    assert run.error is None
    assert run.started_at is not None and run.ended_at is not None
    assert run.started_at <= run.ended_at
    messages = (await service.list_messages(run.session_id)).data
    assert [(m.role, m.content, m.run_id) for m in messages] == [
        (Role.ASSISTANT, f"echo: {expected}", run.id)
    ]
    steps = await service.list_steps(run.id)
    assert [(s.kind, s.status) for s in steps] == [(StepKind.MESSAGE, StepStatus.COMPLETED)]
    assert steps[0].input == {"role": "assistant", "content": f"echo: {expected}"}
    assert messages[0].metadata["step_id"] == steps[0].id


async def test_echo_records_notes(service: Service) -> None:
    run = await _run(service, agent="echo", input={"text": "x", "steps": 3})
    assert run.status is RunStatus.COMPLETED
    steps = await service.list_steps(run.id)
    assert [(s.kind, s.name, s.seq, s.position) for s in steps] == [
        (StepKind.NOTE, "step 1", 1, 1),
        (StepKind.NOTE, "step 2", 2, 2),
        (StepKind.NOTE, "step 3", 3, 3),
        (StepKind.MESSAGE, "assistant_message", 4, 4),
    ]
    assert steps[1].input == {"i": 2, "of": 3}
    assert all(s.status is StepStatus.COMPLETED and s.ended_at is not None for s in steps)


@pytest.mark.parametrize(
    ("fail", "message"), [(True, "boom"), ("the disk is full", "the disk is full")]
)
async def test_echo_fails_on_request(service: Service, fail: object, message: str) -> None:
    run = await _run(service, agent="echo", input={"text": "x", "fail": fail})
    assert run.status is RunStatus.FAILED
    assert run.error is not None
    assert (run.error.type, run.error.message) == ("ValueError", message)
    assert run.ended_at is not None
    assert run.output is None
    session = await service.get_session(run.session_id)
    assert session.status is SessionStatus.ACTIVE
    assert (await service.list_messages(run.session_id)).data == []  # failed before saying it
    types: list[str] = [e.type for e in await service.list_events(run_id=run.id)]
    assert types == ["run.created", "run.started", "run.failed"]


async def test_echo_waits_for_a_person_then_appends_the_answer(service: Service) -> None:
    session = await service.create_session()
    run = await service.create_run(
        session.id, "ask", agent="echo", input={"text": "hi", "steps": 1, "wait": "Go on?"}
    )
    waiting = await service.wait_run(run.id, timeout=WAIT)
    assert waiting.status is RunStatus.WAITING
    assert waiting.waiting_for is not None
    assert waiting.waiting_for["kind"] == "input"
    assert waiting.waiting_for["prompt"] == "Go on?"
    assert waiting.worker_id is None  # nobody holds a waiting run
    wait_step = (await service.list_steps(run.id))[-1]
    assert (wait_step.name, wait_step.status) == ("wait_for_input", StepStatus.RUNNING)

    await service.resume_run(run.id, {"text": "yes please"})
    done = await service.wait_run(run.id, timeout=WAIT)

    assert done.status is RunStatus.COMPLETED, done.error
    assert done.output == {"text": "echo: hi yes please"}
    steps = await service.list_steps(run.id)
    # Replay: the note and the wait were not repeated.
    assert [(s.name, s.status) for s in steps] == [
        ("step 1", StepStatus.COMPLETED),
        ("wait_for_input", StepStatus.COMPLETED),
        ("assistant_message", StepStatus.COMPLETED),
    ]
    assert steps[1].output == {"input": {"text": "yes please"}}
    types: list[str] = [e.type for e in await service.list_events(run_id=run.id)]
    assert types.count("run.started") == 1
    assert types.index("run.waiting") < types.index("run.resumed") < types.index("run.completed")


async def test_echo_sleeps_as_a_step(service: Service) -> None:
    run = await _run(service, agent="echo", input={"text": "x", "sleep": 0.05})
    assert run.status is RunStatus.COMPLETED
    sleep_step = (await service.list_steps(run.id))[0]
    assert (sleep_step.name, sleep_step.output) == ("sleep", {"slept": 0.05})
    assert sleep_step.duration_seconds is not None


async def test_cancelling_a_sleeping_run_stops_it(service: Service, worker: Worker) -> None:
    session = await service.create_session()
    run = await service.create_run(session.id, "nap", agent="echo", input={"sleep": 30})

    async def sleeping() -> bool:
        steps = await service.list_steps(run.id)
        return bool(steps) and steps[0].name == "sleep"

    await eventually(sleeping, what="the sleep step starts")
    cancelled = await service.cancel_run(run.id, reason="enough")
    assert cancelled.status is RunStatus.CANCELLED
    assert cancelled.error is not None and cancelled.error.message == "enough"
    await eventually(lambda: worker.active_runs == 0, what="the agent stops")
    final = await service.get_run(run.id)
    assert final.status is RunStatus.CANCELLED
    (step,) = await service.list_steps(run.id)
    assert step.status is StepStatus.FAILED
    assert step.error is not None and step.error.type == "cancelled"
    assert (await service.get_session(session.id)).status is SessionStatus.ACTIVE


async def test_a_run_past_its_timeout_ends_timed_out(service: Service) -> None:
    run = await _run(service, agent="echo", input={"sleep": 30}, timeout_seconds=0.2)
    assert run.status is RunStatus.TIMED_OUT
    assert run.error is not None and run.error.type == "timeout"
    assert (await service.get_session(run.session_id)).status is SessionStatus.ACTIVE


class Broken(RuntimeError):
    pass


@pytest.fixture
def custom_agents(agents: AgentRegistry) -> AgentRegistry:
    async def raises(ctx: RunContext) -> None:
        raise Broken(f"nothing works in {ctx.goal}")

    async def raises_in_step(ctx: RunContext) -> None:
        async with ctx.step("note", "parse", {"file": "a.py"}):
            raise KeyError("missing")

    async def bad_output(ctx: RunContext) -> object:
        return {"not json": object()}

    agents.register("raises", raises)
    agents.register("raises-in-step", raises_in_step)
    agents.register("bad-output", bad_output)
    return agents


async def test_an_agent_raising_fails_its_run(service: Service, custom_agents: object) -> None:
    run = await _run(service, "the repo", agent="raises")
    assert run.status is RunStatus.FAILED
    assert run.error is not None
    assert run.error.type == "Broken"
    assert run.error.message == "nothing works in the repo"
    assert run.error.step_id is None


async def test_the_failing_step_is_named_in_the_error(
    service: Service, custom_agents: object
) -> None:
    run = await _run(service, agent="raises-in-step")
    assert run.status is RunStatus.FAILED
    (step,) = await service.list_steps(run.id)
    assert step.status is StepStatus.FAILED
    assert step.error is not None and step.error.type == "KeyError"
    assert run.error is not None
    assert (run.error.type, run.error.step_id) == ("KeyError", step.id)


async def test_an_output_that_is_not_json_fails_the_run(
    service: Service, custom_agents: object
) -> None:
    run = await _run(service, agent="bad-output")
    assert run.status is RunStatus.FAILED
    assert run.error is not None and "not JSON" in run.error.message


async def test_an_unknown_agent_is_refused_before_anything_is_written(service: Service) -> None:
    session = await service.create_session()
    before = await service.list_events(session_id=session.id)
    with pytest.raises(AgentNotFound) as caught:
        await service.create_run(session.id, "go", agent="nobody")
    assert "nobody" in str(caught.value)
    assert "echo" in str(caught.value)  # it lists the known agents
    assert caught.value.http_status == 404
    assert (await service.list_runs(session.id)).data == []
    assert await service.list_events(session_id=session.id) == before
    assert (await service.get_session(session.id)).run_count == 0


async def test_a_run_records_the_context_it_started_from(service: Service) -> None:
    session = await service.create_session(project={"workspace": "/w"})
    await service.add_message(session.id, "user", "hello")
    run = await service.create_run(session.id, "go", agent="echo", input={"text": "x"})
    done = await service.wait_run(run.id, timeout=WAIT)
    assert done.context is not None
    assert done.context["session_id"] == session.id
    assert done.context["project"] == {"workspace": "/w"}
    assert done.context["messages"] == [{"role": "user", "content": "hello"}]
    assert done.context["earlier_runs"] == []  # not itself
