"""HeldRun over the HTTP client: the same run as in-process, its heartbeat running in the
caller keeps a short lease held, and the client raises tether's errors for the server's
problems (LeaseLost once the run is cancelled from outside)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from tests.api.httpkit import Server
from tests.waiting import eventually
from tether import AsyncClient, Client, LeaseLost
from tether.core.run import Run
from tether.core.status import RunStatus
from tether.core.step import StepKind
from tether.core.usage import Usage
from tether.runtime.held_run import HeldRun


@pytest.mark.slow
async def test_a_held_run_over_http_stays_held_by_its_heartbeat(server: Server) -> None:
    async with AsyncClient(server.url, api_key=server.keys["alice"]) as client:
        session = await client.create_session(title="remote framework")
        held = await HeldRun.start(
            client, session.id, "2 + 2?", agent="openai-agents", lease_seconds=1
        )
        first = held.run.lease_expires_at
        assert first is not None
        await held.step(StepKind.MODEL_CALL, "gpt", usage=Usage(5, 1, 1))
        # several leases' worth of heartbeats: the reaper would have failed it without them
        renewed = await eventually(
            lambda: _lease_after(client, held.run.id, first + timedelta(seconds=2)),
            what="the heartbeat to renew the lease twice",
        )
        assert renewed.status is RunStatus.RUNNING
        await held.wait("input", "Which numbers?")
        again = await HeldRun.resume(client, held.run.id, "2 and 2", lease_seconds=1)
        done = await again.finish(output={"text": "4"})
        assert (done.status, done.output, done.usage) == (
            RunStatus.COMPLETED,
            {"text": "4"},
            Usage(5, 1, 1),
        )
        steps = await client.list_steps(done.id)
        assert [(s.name, s.output) for s in steps] == [
            ("gpt", None),
            ("wait_for_input", {"input": "2 and 2"}),
        ]


async def _lease_after(client: AsyncClient, run_id: str, moment: datetime) -> Run | None:
    """The run once its lease expires after moment, else None."""
    run = await client.get_run(run_id)
    expires = run.lease_expires_at
    return run if expires is not None and expires > moment else None


def test_the_sync_client_records_a_held_run_and_loses_a_cancelled_one(server: Server) -> None:
    with Client(server.url, api_key=server.keys["alice"]) as client:
        session = client.create_session()
        lease = client.start_held_run(session.id, "g", agent="custom", metadata={"k": 1})
        assert lease.run.metadata == {"k": 1} and lease.holder
        step = client.record_held_step(lease.run.id, lease.holder, "note", "n", {"x": 1})
        assert (step.kind, step.input) == (StepKind.NOTE, {"x": 1})
        client.cancel_run(lease.run.id)
        with pytest.raises(LeaseLost, match="cancelled"):
            client.finish_held_run(lease.run.id, lease.holder)
