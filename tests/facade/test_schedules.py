"""tt.schedules end to end: a schedule due now creates its run through the embedded worker's
scheduler, which executes it; the same through the async facade."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import tether
from tests.support import TEST_SETTINGS
from tests.waiting import WAIT, eventually, eventually_sync
from tether.core.clock import ManualClock
from tether.core.status import RunStatus

SETTINGS = replace(TEST_SETTINGS, schedule_interval=0.02)


def test_a_due_schedule_runs_through_the_worker(tmp_path: Path) -> None:
    clock = ManualClock()
    with tether.open(tmp_path / "t.db", clock=clock, settings=SETTINGS) as tt:
        session = tt.sessions.create(title="daily report")
        schedule = tt.schedules.create(
            "* * * * *", session_id=session.id, input={"text": "report"}, timezone="Asia/Tokyo"
        )
        assert [s.id for s in tt.schedules.list()] == [schedule.id]
        assert schedule.next_run_at is not None
        clock.advance((schedule.next_run_at - clock.now()).total_seconds())  # due now
        fired = eventually_sync(lambda: tt.schedules.get(schedule.id).last_run_id, what="a run")
        assert fired is not None
        run = tt.runs.get(fired).wait(WAIT)
        assert run.status is RunStatus.COMPLETED and run.output == {"text": "echo: report"}
        assert run.session_id == session.id and run.metadata == {"schedule_id": schedule.id}
        paused = tt.schedules.update(schedule.id, enabled=False)
        assert not paused.enabled and tt.schedules.list(enabled=True) == []
        tt.schedules.delete(schedule.id)
        assert tt.schedules.list() == []


async def test_the_async_facade_has_the_same_schedules(tmp_path: Path) -> None:
    clock = ManualClock()
    async with await tether.open_async(tmp_path / "t.db", clock=clock, settings=SETTINGS) as tt:
        schedule = await tt.schedules.create("*/10 * * * *", goal="tidy up")
        assert (await tt.schedules.get(schedule.id)).goal == "tidy up"
        clock.advance(600)

        async def fired() -> str:
            return (await tt.schedules.get(schedule.id)).last_run_id or ""

        run = await (await tt.runs.get(await eventually(fired, what="a run"))).wait(WAIT)
        assert run.status is RunStatus.COMPLETED and run.goal == "tidy up"
        assert await tt.schedules.update(schedule.id, cron="0 0 * * *") != schedule
        await tt.schedules.delete(schedule.id)
        assert await tt.schedules.list() == []
