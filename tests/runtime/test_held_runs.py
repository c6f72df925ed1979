"""Runs their caller executes, on the Service (both backends): HeldRun records steps, waits
for a person and goes on held again; a holder that stops renewing its lease leaves the run to
the reaper; a holder secret holds nothing for another owner; what is recorded is redacted."""

from __future__ import annotations

import pytest

from tether.core.clock import ManualClock
from tether.core.errors import LeaseLost, NotFound, TooManySteps, UsageError
from tether.core.run import ErrorInfo
from tether.core.status import RunStatus, StepStatus
from tether.core.step import StepKind
from tether.core.usage import Usage
from tether.runtime import limits
from tether.runtime.held_run import HeldRun
from tether.runtime.service import Service


async def test_a_held_run_waits_resumes_and_completes_with_its_steps(service: Service) -> None:
    session = await service.create_session(title="framework")
    held = await HeldRun.start(service, session.id, "2 + 2?", agent="openai-agents")
    assert held.run.status is RunStatus.RUNNING and held.run.worker_id is not None
    assert held.run.worker_id.startswith("held:")
    await held.step(StepKind.MODEL_CALL, "gpt", {"turn": 1}, usage=Usage(12, 3, 1))
    await held.step(StepKind.TOOL_CALL, "add", {"a": 2}, error=ErrorInfo("ValueError", "no b"))
    waiting = await held.wait("approval", "Approve?", tool_call_ids=["c1"], step_id="forged")
    assert waiting.status is RunStatus.WAITING and waiting.waiting_for is not None
    assert waiting.waiting_for["step_id"] != "forged"  # details never replace what tether sets
    with pytest.raises(LeaseLost):
        await held.step(StepKind.NOTE, "after letting go")
    again = await HeldRun.resume(service, held.run.id, "approved")
    await again.step(StepKind.NOTE, "go on")
    done = await again.finish(output={"text": "4"})
    assert (done.status, done.output, done.usage) == (
        RunStatus.COMPLETED,
        {"text": "4"},
        Usage(12, 3, 1),
    )
    steps = await service.list_steps(done.id)
    assert [(s.seq, s.position, s.name, s.status) for s in steps] == [
        (1, 1, "gpt", StepStatus.COMPLETED),
        (2, 2, "add", StepStatus.FAILED),
        (3, 3, "wait_for_approval", StepStatus.COMPLETED),
        (4, 4, "go on", StepStatus.COMPLETED),
    ]
    with pytest.raises(LeaseLost, match="completed"):
        await again.finish(RunStatus.FAILED)


async def test_a_holder_that_goes_quiet_is_reaped_and_loses_the_run(
    service: Service, clock: ManualClock
) -> None:
    session = await service.create_session()
    lease = await service.start_held_run(session.id, "g", agent="echo", lease_seconds=5)
    assert await service.store.claim_run(worker_id="w", now=clock.now(), lease_seconds=5) is None
    clock.advance(4)
    await service.renew_held_run(lease.run.id, lease.holder, lease_seconds=5)
    clock.advance(4)
    assert await service.store.reap_runs(now=clock.now()) == []  # the heartbeat kept it
    clock.advance(2)
    [reaped] = await service.store.reap_runs(now=clock.now())
    assert reaped.status is RunStatus.FAILED and reaped.error is not None
    assert reaped.error.type == "worker_lost"
    with pytest.raises(LeaseLost) as lost:
        await service.record_held_step(lease.run.id, lease.holder, StepKind.NOTE, "late")
    assert lost.value.details["run_status"] == "failed"


async def test_a_holder_holds_nothing_for_another_owner(service: Service) -> None:
    session = await service.create_session()
    lease = await service.start_held_run(session.id, "g", agent="a")
    bob = service.for_owner("bob")
    with pytest.raises(NotFound):
        await bob.record_held_step(lease.run.id, lease.holder, StepKind.NOTE, "n")
    with pytest.raises(NotFound):
        await bob.finish_held_run(lease.run.id, lease.holder)
    with pytest.raises(UsageError, match="lease_seconds"):
        await service.start_held_run(session.id, "g", agent="a", lease_seconds=7200)
    with pytest.raises(UsageError, match="status"):
        await service.finish_held_run(lease.run.id, lease.holder, RunStatus.WAITING)
    assert (await service.renew_held_run(lease.run.id, lease.holder)).status is RunStatus.RUNNING


async def test_what_a_held_run_records_is_redacted(service: Service) -> None:
    session = await service.create_session()
    lease = await service.start_held_run(session.id, "g", agent="a")
    secret = "sk-" + "a1B2" * 12
    step = await service.record_held_step(
        lease.run.id, lease.holder, StepKind.TOOL_CALL, "call", {"key": secret}, output=secret
    )
    assert secret not in str((step.input, step.output))
    done = await service.finish_held_run(
        lease.run.id, lease.holder, RunStatus.FAILED, error=ErrorInfo("E", f"bad {secret}")
    )
    assert done.error is not None and secret not in done.error.message


async def test_a_held_run_holds_at_most_max_held_steps(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_HELD_STEPS", 3)
    session = await service.create_session()
    held = await HeldRun.start(service, session.id, "loop", agent="openai-agents")
    for turn in range(3):
        await held.step(StepKind.NOTE, f"turn {turn}")
    with pytest.raises(TooManySteps, match="holds 3 steps"):
        await held.step(StepKind.NOTE, "one more")
    with pytest.raises(TooManySteps):
        await held.wait("input", "Go on?")
    done = await held.finish(output={"text": "stopped"})  # the holder still ends it
    assert done.status is RunStatus.COMPLETED
    assert [s.name for s in await service.list_steps(done.id)] == ["turn 0", "turn 1", "turn 2"]


async def test_steps_are_read_a_page_at_a_time(service: Service) -> None:
    session = await service.create_session()
    held = await HeldRun.start(service, session.id, "five", agent="openai-agents")
    for turn in range(5):
        await held.step(StepKind.NOTE, f"turn {turn}")
    names, cursor, pages = [], None, 0
    while True:
        page = await service.page_steps(held.run.id, limit=2, cursor=cursor)
        names += [s.name for s in page.data]
        pages += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert names == [f"turn {turn}" for turn in range(5)] and pages == 3
    assert (await service.page_steps(held.run.id, limit=5)).next_cursor is None
    with pytest.raises(NotFound):
        await service.page_steps("no-such-run", limit=2)
