"""Run lifecycle for the SQL stores: creation, claiming, leases, finishing and reaping."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from tether.core.errors import (
    Conflict,
    IdempotencyConflict,
    InvalidTransition,
    NotFound,
    SessionBusy,
)
from tether.core.event import EventType, run_event
from tether.core.ids import new_id
from tether.core.message import Message, Role
from tether.core.page import Page
from tether.core.run import ErrorInfo, IfBusy, Run, RunActivity
from tether.core.status import RUN_TERMINAL, RunStatus, check_transition
from tether.store.base import UNSET, Unset
from tether.store.changes import run_status_topic, run_topic, session_topic
from tether.store.cursors import decode_cursor, encode_cursor
from tether.store.sql.database import Tx
from tether.store.sql.rows import (
    MAX_SEQ,
    error_data,
    opt_us,
    run_from_row,
    step_from_row,
    to_us,
)
from tether.store.sql.sessions import SessionsPart


class RunsPart(SessionsPart):
    """Runs: from ready to a terminal status, whatever happens to their workers."""

    def _run(self, row: Any) -> Run:
        return run_from_row(row, self._db.load_json)

    async def create_run(
        self,
        run: Run,
        *,
        owner: str | None,
        if_busy: IfBusy,
        now: datetime,
        messages: Sequence[tuple[Role, str, dict[str, Any]]] = (),
        held_by: str | None = None,
        lease_seconds: float = 0.0,
        webhook: tuple[str, str] | None = None,
    ) -> tuple[Run, bool]:
        async with self._db.write() as tx:
            created, new = await self._create_run_in(
                tx,
                run,
                owner=owner,
                if_busy=if_busy,
                now=now,
                messages=messages,
                held_by=held_by,
                lease_seconds=lease_seconds,
            )
            if new and webhook is not None:
                url, shape = webhook
                await tx.run(
                    "insert_webhook_delivery",
                    id=new_id(),
                    run_id=created.id,
                    owner=created.owner,
                    url=url,
                    shape=shape,
                    next_attempt_at=to_us(now),
                    created_at=to_us(now),
                )
        return created, new

    async def _create_run_in(
        self,
        tx: Tx,
        run: Run,
        *,
        owner: str | None,
        if_busy: IfBusy,
        now: datetime,
        messages: Sequence[tuple[Role, str, dict[str, Any]]] = (),
        held_by: str | None = None,
        lease_seconds: float = 0.0,
    ) -> tuple[Run, bool]:
        """create_run inside tx."""
        if run.idempotency_key is not None:
            row = await tx.one(
                "run_by_idempotency_key", session_id=run.session_id, key=run.idempotency_key
            )
            if row is not None:
                if owner is not None and row["owner"] != owner:
                    raise NotFound("session", run.session_id)
                existing = self._run(row)
                if (existing.goal, existing.agent, existing.input) != (
                    run.goal,
                    run.agent,
                    run.input,
                ):
                    raise IdempotencyConflict(
                        f"idempotency key {run.idempotency_key!r} was already used for run "
                        f"{existing.id} with a different goal, agent or input",
                        run_id=existing.id,
                    )
                return existing, False
        touched = await self._touch_active(tx, run.session_id, owner=owner, now=now, add_runs=1)
        unfinished = [
            self._run(r) for r in await tx.all("unfinished_runs", session_id=run.session_id)
        ]
        if unfinished and if_busy is IfBusy.REJECT:
            blocking = next((r for r in unfinished if r.is_active), unfinished[0])
            raise SessionBusy(run.session_id, blocking.id, blocking.status.value)
        if if_busy is IfBusy.INTERRUPT:
            for other in unfinished:
                await self._cancel_in(
                    tx,
                    other.id,
                    owner=touched["owner"],
                    now=now,
                    reason=f"interrupted by run {run.id}",
                )
        row = await tx.one(
            "insert_run",
            id=run.id,
            session_id=run.session_id,
            owner=touched["owner"],
            seq=touched["run_count"],
            agent=run.agent,
            goal=run.goal,
            input=self._j(run.input),
            created_at=to_us(now),
            updated_at=to_us(now),
            max_attempts=run.max_attempts,
            metadata=self._j(run.metadata),
            timeout_seconds=run.timeout_seconds,
            wait_timeout_seconds=run.wait_timeout_seconds,
            idempotency_key=run.idempotency_key,
            not_before=opt_us(run.not_before),
            traceparent=run.traceparent,
        )
        assert row is not None
        created = self._run(row)
        await self._event(
            tx,
            EventType.RUN_CREATED,
            owner=created.owner,
            now=now,
            session_id=created.session_id,
            run_id=created.id,
            data={"run": created, "if_busy": if_busy.value},
        )
        for role, content, metadata in messages:
            counted = await self._touch_active(
                tx, run.session_id, owner=owner, now=now, add_messages=1
            )
            message = Message(
                id=new_id(),
                session_id=run.session_id,
                seq=counted["message_count"],
                role=role,
                content=content,
                created_at=now,
                run_id=created.id,
                metadata=metadata,
            )
            await self._insert_message(tx, message, created.owner)
        if held_by is not None:
            created = await self._hold(tx, created, held_by, now, lease_seconds)
            await self._run_event(tx, EventType.RUN_STARTED, created, now)
        return created, True

    async def _hold(
        self, tx: Tx, run: Run, worker_id: str, now: datetime, lease_seconds: float
    ) -> Run:
        timeout = run.timeout_seconds
        row = await tx.one(
            "hold_run" if run.status is RunStatus.READY else "hold_resumed_run",
            id=run.id,
            worker_id=worker_id,
            lease_expires_at=to_us(now + timedelta(seconds=lease_seconds)),
            now=to_us(now),
            # its timeout runs from now, as from a worker's claim
            deadline_at=None if timeout is None else to_us(now + timedelta(seconds=timeout)),
        )
        assert row is not None
        return self._run(row)

    async def get_run(
        self, run_id: str, *, owner: str | None = None, with_context: bool = True
    ) -> Run | None:
        query = "get_run" if with_context else "get_run_without_context"
        async with self._db.read() as tx:
            row = await tx.one(query, id=run_id, owner=owner)
        return None if row is None else self._run(row)

    async def run_activity(
        self, session_ids: Sequence[str], *, owner: str
    ) -> dict[str, RunActivity]:
        if not session_ids:
            return {}
        async with self._db.read() as tx:
            rows = await tx.all("run_activity", ids=self._j(list(session_ids)), owner=owner)
        by_session: dict[str, dict[str, Run]] = {}
        for row in rows:
            run = self._run(row)
            found = by_session.setdefault(run.session_id, {})
            last = found.get("last")
            if last is None or run.seq > last.seq:
                found["last"] = run
            if run.status in (RunStatus.RUNNING, RunStatus.WAITING):
                found[run.status.value] = run
            elif run.status is RunStatus.READY:
                ready = found.get("ready")
                if ready is None or run.seq < ready.seq:
                    found["ready"] = run
        return {
            session_id: RunActivity(
                running=found.get("running"),
                waiting=found.get("waiting"),
                ready=found.get("ready"),
                last=found.get("last"),
            )
            for session_id, found in by_session.items()
        }

    async def list_runs(
        self,
        *,
        session_id: str,
        status: RunStatus | None = None,
        limit: int = 50,
        cursor: str | None = None,
        newest_first: bool = False,
        with_context: bool = True,
    ) -> Page[Run]:
        position = None if cursor is None else decode_cursor(cursor, int)[0]
        brief = "" if with_context else "_without_context"
        async with self._db.read() as tx:
            if newest_first:
                rows = await tx.all(
                    "runs_backward" + brief,
                    session_id=session_id,
                    status=None if status is None else status.value,
                    before_seq=MAX_SEQ if position is None else position,
                    limit=limit + 1,
                )
            else:
                rows = await tx.all(
                    "runs_forward" + brief,
                    session_id=session_id,
                    status=None if status is None else status.value,
                    after_seq=0 if position is None else position,
                    limit=limit + 1,
                )
        runs = [self._run(r) for r in rows[:limit]]
        return Page(runs, encode_cursor(runs[-1].seq) if len(rows) > limit else None)

    async def claim_run(
        self,
        *,
        worker_id: str,
        now: datetime,
        lease_seconds: float,
        agents: Sequence[str] | None = None,
    ) -> Run | None:
        held = {
            "worker_id": worker_id,
            "lease_expires_at": to_us(now + timedelta(seconds=lease_seconds)),
            "now": to_us(now),
            "agents": None if agents is None else self._j(sorted(agents)),
        }
        async with self._db.write() as tx:
            row = await tx.one("claim_resumed_run", **held)
            if row is not None:
                return self._run(row)
            row = await tx.one("claim_ready_run", **held)
            if row is None:
                return None
            run = self._run(row)
            await tx.later("touch_session_softly", id=run.session_id, now=to_us(now))
            await self._event(
                tx,
                EventType.RUN_STARTED,
                owner=run.owner,
                now=now,
                session_id=run.session_id,
                run_id=run.id,
                data={"run": run},
            )
        return run

    async def claim_next(
        self,
        *,
        worker_id: str,
        now: datetime,
        lease_seconds: float,
        agents: Sequence[str] | None = None,
        look: bool = True,
    ) -> tuple[Run | None, bool]:
        run = await self.claim_run(
            worker_id=worker_id, now=now, lease_seconds=lease_seconds, agents=agents
        )
        return run, run is not None

    async def renew_lease(
        self, run_id: str, *, worker_id: str, now: datetime, lease_seconds: float
    ) -> Run | None:
        lease = to_us(now + timedelta(seconds=lease_seconds))
        row = await self._db.write_one(
            "renew_lease", id=run_id, worker_id=worker_id, lease_expires_at=lease
        )
        return None if row is None else self._run(row)

    async def update_run(
        self,
        run_id: str,
        *,
        worker_id: str,
        now: datetime,
        output: Any | Unset = UNSET,
        context: dict[str, Any] | Unset = UNSET,
    ) -> Run:
        row = await self._db.write_one(
            "update_held_run",
            id=run_id,
            worker_id=worker_id,
            now=to_us(now),
            set_output=output is not UNSET,
            output=None if output is UNSET else self._j(output),
            set_context=context is not UNSET,
            context=None if context is UNSET else self._j(context),
        )
        if row is None:
            async with self._db.read() as tx:
                await self._lost(tx, run_id, worker_id)
        return self._run(row)

    async def finish_run(
        self,
        run_id: str,
        *,
        worker_id: str,
        status: RunStatus,
        now: datetime,
        output: Any | Unset = UNSET,
        error: ErrorInfo | None = None,
    ) -> Run:
        check_transition(RunStatus.RUNNING, status)
        if status not in RUN_TERMINAL:
            raise InvalidTransition("run", RunStatus.RUNNING.value, status.value, run_id)
        closing = error or ErrorInfo("interrupted", f"the run ended {status.value}")
        async with self._db.write() as tx:
            # One round trip: the steps are closed before the guard is looked at; a run that
            # is no longer this worker's rolls both back.
            finished, closed = await tx.batch(
                [
                    (
                        "finish_run",
                        {
                            "id": run_id,
                            "worker_id": worker_id,
                            "status": status.value,
                            "now": to_us(now),
                            "set_output": output is not UNSET,
                            "output": None if output is UNSET else self._j(output),
                            "error": self._j(error_data(error)),
                        },
                    ),
                    self._closing_steps(run_id, now=now, error=closing),
                ]
            )
            if not finished:
                await self._lost(tx, run_id, worker_id)
            run = self._run(finished[0])
            await self._steps_closed(tx, run, closed, now=now)
            await self._run_event(tx, run_event(status), run, now)
        return run

    async def _run_event(
        self, tx: Tx, type_: EventType, run: Run, now: datetime, **extra: Any
    ) -> None:
        await self._event(
            tx,
            type_,
            owner=run.owner,
            now=now,
            session_id=run.session_id,
            run_id=run.id,
            data={"run": run, **extra},
        )
        await tx.later("touch_session_softly", id=run.session_id, now=to_us(now))

    async def suspend_run(
        self, run_id: str, *, worker_id: str, now: datetime, waiting_for: dict[str, Any]
    ) -> Run:
        async with self._db.write() as tx:
            row = await tx.one(
                "suspend_run",
                id=run_id,
                worker_id=worker_id,
                now=to_us(now),
                waiting_for=self._j(waiting_for),
            )
            if row is None:
                await self._lost(tx, run_id, worker_id)
            run = self._run(row)
            await self._run_event(tx, EventType.RUN_WAITING, run, now)
        return run

    async def resume_run(
        self,
        run_id: str,
        *,
        owner: str | None,
        now: datetime,
        input: Any,
        held_by: str | None = None,
        lease_seconds: float = 0.0,
    ) -> Run:
        async with self._db.write() as tx:
            current = await tx.one("get_run", id=run_id, owner=owner)
            if current is None:
                raise NotFound("run", run_id)
            before = self._run(current)
            if before.status is not RunStatus.WAITING or _held(before) != (held_by is not None):
                raise _not_resumable(before)
            await self._touch_active(tx, before.session_id, owner=owner, now=now)
            row = await tx.one("resume_run", id=run_id, owner=owner, now=to_us(now))
            assert row is not None
            run = self._run(row)
            step_id = (before.waiting_for or {}).get("step_id")
            if step_id:
                step_row = await tx.one(
                    "complete_waiting_step",
                    id=step_id,
                    run_id=run_id,
                    output=self._j({"input": input}),
                    now=to_us(now),
                )
                if step_row is not None:
                    step = step_from_row(step_row, self._db.load_json)
                    await self._event(
                        tx,
                        EventType.STEP_COMPLETED,
                        owner=run.owner,
                        now=now,
                        session_id=run.session_id,
                        run_id=run.id,
                        data={"step": step},
                    )
            if held_by is not None:
                run = await self._hold(tx, run, held_by, now, lease_seconds)
            await self._run_event(tx, EventType.RUN_RESUMED, run, now, input=input)
        return run

    async def cancel_run(
        self, run_id: str, *, owner: str | None, now: datetime, reason: str
    ) -> Run:
        async with self._db.write() as tx:
            current = await tx.one("get_run", id=run_id, owner=owner)
            if current is None:
                raise NotFound("run", run_id)
            run = await self._cancel_in(tx, run_id, owner=current["owner"], now=now, reason=reason)
            if run is None:
                raise InvalidTransition("run", current["status"], RunStatus.CANCELLED.value, run_id)
            await tx.later("touch_session_softly", id=run.session_id, now=to_us(now))
        return run

    async def release_run(self, run_id: str, *, worker_id: str, now: datetime) -> Run | None:
        async with self._db.write() as tx:
            current = await tx.one("get_run", id=run_id, owner=None)
            if current is None or current["worker_id"] != worker_id:
                return None
            await self._close_open_steps(
                tx,
                self._run(current),
                now=now,
                error=ErrorInfo("interrupted", "the worker shut down during this step"),
            )
            row = await tx.one("release_run", id=run_id, worker_id=worker_id, now=to_us(now))
            if row is None:
                return None
            run = self._run(row)
            await self._run_event(tx, EventType.RUN_REQUEUED, run, now, reason="worker_shutdown")
        return run

    async def reap_runs(self, *, now: datetime, limit: int = 100) -> list[Run]:
        changed: list[Run] = []
        async with self._db.write() as tx:
            for row in await tx.all("expired_leases", now=to_us(now), limit=limit):
                changed.append(await self._reap_lost(tx, self._run(row), now))
            for row in await tx.all("passed_deadlines", now=to_us(now), limit=limit):
                timed_out = await self._time_out(tx, self._run(row), now)
                if timed_out is not None:
                    changed.append(timed_out)
        return changed

    async def _reap_lost(self, tx: Tx, run: Run, now: datetime) -> Run:
        lost = ErrorInfo(
            "worker_lost", f"worker {run.worker_id} stopped renewing its lease on this run"
        )
        await self._close_open_steps(
            tx, run, now=now, error=ErrorInfo("interrupted", "the worker was lost during this step")
        )
        if run.attempt < run.max_attempts:
            row = await tx.one("requeue_run", id=run.id, now=to_us(now))
            assert row is not None
            requeued = self._run(row)
            await self._run_event(tx, EventType.RUN_REQUEUED, requeued, now, reason="worker_lost")
            return requeued
        row = await tx.one(
            "end_run",
            id=run.id,
            status=RunStatus.FAILED.value,
            from_status=RunStatus.RUNNING.value,
            now=to_us(now),
            error=self._j(error_data(lost)),
        )
        assert row is not None
        failed = self._run(row)
        await self._run_event(tx, EventType.RUN_FAILED, failed, now)
        return failed

    async def _time_out(self, tx: Tx, run: Run, now: datetime) -> Run | None:
        if run.status is RunStatus.WAITING:
            error = ErrorInfo(
                "wait_timeout",
                f"nobody answered within {run.wait_timeout_seconds:g} s",
            )
        else:
            error = ErrorInfo("timeout", f"the run exceeded its {run.timeout_seconds:g} s timeout")
        row = await tx.one(
            "end_run",
            id=run.id,
            status=RunStatus.TIMED_OUT.value,
            from_status=run.status.value,
            now=to_us(now),
            error=self._j(error_data(error)),
        )
        if row is None:
            return None
        timed_out = self._run(row)
        await self._close_open_steps(tx, timed_out, now=now, error=error)
        await self._run_event(tx, EventType.RUN_TIMED_OUT, timed_out, now)
        return timed_out

    async def delete_run(self, run_id: str, *, owner: str | None) -> None:
        async with self._db.write() as tx:
            row = await tx.one("get_run", id=run_id, owner=owner)
            if row is None:
                raise NotFound("run", run_id)
            if RunStatus(row["status"]) not in RUN_TERMINAL:
                raise Conflict(
                    f"run {run_id} is {row['status']}: cancel it before deleting it",
                    run_id=run_id,
                )
            for name in (
                "delete_run_events",
                "delete_run_memory",
                "delete_run_promotions",
                "delete_run_steps",
                "delete_run_messages",
                "delete_run_webhook_deliveries",
            ):
                await tx.run(name, run_id=run_id)
            if await tx.run("delete_run", run_id=run_id) != 1:  # a concurrent delete won
                raise NotFound("run", run_id)
            await tx.run(
                "forget_session_run",
                id=row["session_id"],
                input_tokens=row["input_tokens"],
                output_tokens=row["output_tokens"],
                requests=row["model_requests"],
            )
            tx.publish(
                session_topic(row["session_id"]), run_topic(run_id), run_status_topic(run_id)
            )


def _held(run: Run) -> bool:
    """Whether a waiting run waits for a person of the caller executing it (runtime.held_run)."""
    return bool((run.waiting_for or {}).get("held"))


def _not_resumable(run: Run) -> InvalidTransition:
    """Why a run that is not waiting cannot be resumed, in words."""
    state = run.status.value
    if run.status is RunStatus.WAITING:  # resumed held when a worker executes it, or not
        why = (
            f"run {run.id} is executed by its caller: only that caller can resume it"
            if _held(run)
            else f"run {run.id} is executed by a worker: it is resumed for the worker to go on"
        )
        return InvalidTransition("run", state, RunStatus.RUNNING.value, run.id, message=why)
    if run.is_terminal:
        why = f"run {run.id} has finished ({state}): only a waiting run can be resumed"
    else:
        why = f"run {run.id} is {state}, not waiting: only a waiting run can be resumed"
    why += " (waiting → running)"
    return InvalidTransition("run", state, RunStatus.RUNNING.value, run.id, message=why)
