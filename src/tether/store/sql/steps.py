"""Steps and tool history for the SQL stores."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tether.core.errors import InvalidTransition, NotFound, TooManySteps
from tether.core.event import EventType, step_event
from tether.core.ids import new_id
from tether.core.message import Message, Role
from tether.core.page import Page
from tether.core.run import ErrorInfo
from tether.core.status import StepStatus, check_transition
from tether.core.step import Step, StepKind
from tether.core.usage import ZERO_USAGE, Usage
from tether.store.cursors import decode_cursor, encode_cursor
from tether.store.sql.database import Row, Tx
from tether.store.sql.rows import (
    error_data,
    from_us,
    opt_us,
    step_from_row,
    to_us,
)
from tether.store.sql.sessions import SessionsPart

_ID_MIN = ""
_ID_MAX = "~"


class StepsPart(SessionsPart):
    """Steps of runs; a tool call and its result live in one step."""

    def _step(self, row: Any) -> Step:
        return step_from_row(row, self._db.load_json)

    async def _open_seq(
        self,
        tx: Tx,
        run_id: str,
        worker_id: str,
        *,
        touch_at: datetime | None = None,
        max_steps: int | None = None,
    ) -> dict[str, Any]:
        """The held run's row and its next step seq: the lock first (with touch_at, in the
        same statement, the session touched for one message more: its row then carries the
        session's message_count), then the seq read after it (a statement of its own, in the
        same round trip). A run no longer held, a session that takes no writes, or a next seq
        past max_steps (TooManySteps) rolls back with the rest."""
        guard: tuple[str, dict[str, Any]] = (
            ("hold_run_for_step", {"run_id": run_id, "worker_id": worker_id})
            if touch_at is None
            else (
                "hold_run_touching_session",
                {"run_id": run_id, "worker_id": worker_id, "now": to_us(touch_at)},
            )
        )
        held, seq = await tx.batch([guard, ("next_step_seq", {"run_id": run_id})])
        if not held:
            row = await tx.one("hold_run_for_step", run_id=run_id, worker_id=worker_id)
            if row is None or touch_at is None:
                await self._lost(tx, run_id, worker_id)
            await self._refuse(tx, row["session_id"], owner=None, now=touch_at)
        if max_steps is not None and seq[0]["step_count"] > max_steps:
            raise TooManySteps(
                f"run {run_id} holds {max_steps} steps, as many as it may: finish it",
                run_id=run_id,
                max_steps=max_steps,
            )
        return {**held[0], "step_count": seq[0]["step_count"]}

    async def start_step(
        self,
        *,
        run_id: str,
        worker_id: str,
        position: int | None,
        kind: StepKind,
        name: str,
        input: Any,
        now: datetime,
        max_steps: int | None = None,
    ) -> Step:
        async with self._db.write() as tx:
            held = await self._open_seq(tx, run_id, worker_id, max_steps=max_steps)
            params = self._step_params(
                held, run_id, position, kind, name, StepStatus.RUNNING, input, now
            )
            await tx.run("insert_step", **params)
            step = _inserted(params, kind, StepStatus.RUNNING, input, None, None, None)
            await self._step_event(tx, EventType.STEP_STARTED, step, held["owner"], now)
        return step

    def _step_params(
        self,
        held: dict[str, Any],
        run_id: str,
        position: int | None,
        kind: StepKind,
        name: str,
        status: StepStatus,
        input: Any,
        now: datetime,
        *,
        output: Any = None,
        error: ErrorInfo | None = None,
        usage: Usage | None = None,
        ended_at: datetime | None = None,
    ) -> dict[str, Any]:
        usage = usage or Usage()
        return {
            "id": new_id(),
            "run_id": run_id,
            "session_id": held["session_id"],
            "seq": held["step_count"],
            "position": held["step_count"] if position is None else position,
            "kind": kind.value,
            "name": name,
            "status": status.value,
            "input": self._j(input),
            "output": self._j(output),
            "error": self._j(error_data(error)),
            "started_at": to_us(now),
            "ended_at": opt_us(ended_at),
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "requests": usage.requests,
            "attempt": held["attempt"],
        }

    async def _step_event(
        self, tx: Tx, type_: EventType, step: Step, owner: str, now: datetime
    ) -> None:
        await self._event(
            tx,
            type_,
            owner=owner,
            now=now,
            session_id=step.session_id,
            run_id=step.run_id,
            data={"step": step},
        )

    async def _after_step(
        self,
        tx: Tx,
        step: Step,
        owner: str,
        now: datetime,
        message: tuple[Role, str, dict[str, Any]] | None,
        touched: Row | None = None,
    ) -> None:
        """Roll usage up, append the step's message, and record the activity (touched: the
        session's row when the transaction touched it for the message already)."""
        if not step.usage.is_zero():
            usage = {
                "input_tokens": step.usage.input_tokens,
                "output_tokens": step.usage.output_tokens,
                "requests": step.usage.requests,
            }
            await tx.run("add_run_usage", id=step.run_id, **usage)
            await tx.run("add_session_usage", id=step.session_id, **usage)
        if message is None:
            await tx.later("touch_session_softly", id=step.session_id, now=to_us(now))
            return
        role, content, metadata = message
        if touched is None:
            touched = await self._touch_active(
                tx, step.session_id, owner=owner, now=now, add_messages=1
            )
        await self._insert_message(
            tx,
            Message(
                id=new_id(),
                session_id=step.session_id,
                seq=touched["message_count"],
                role=role,
                content=content,
                created_at=now,
                run_id=step.run_id,
                metadata={**metadata, "step_id": step.id},
            ),
            owner,
        )

    async def finish_step(
        self,
        step_id: str,
        *,
        worker_id: str,
        status: StepStatus,
        now: datetime,
        output: Any = None,
        error: ErrorInfo | None = None,
        usage: Usage | None = None,
        message: tuple[Role, str, dict[str, Any]] | None = None,
    ) -> Step:
        check_transition(StepStatus.RUNNING, status)
        usage = usage or Usage()
        async with self._db.write() as tx:
            row = await tx.one(
                "finish_step",
                id=step_id,
                worker_id=worker_id,
                status=status.value,
                output=self._j(output),
                error=self._j(error_data(error)),
                now=to_us(now),
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                requests=usage.requests,
            )
            if row is None:
                current = await tx.one("get_step", id=step_id)
                if current is None:
                    raise NotFound("step", step_id)
                if current["status"] != StepStatus.RUNNING.value:
                    raise InvalidTransition("step", current["status"], status.value, step_id)
                await self._lost(tx, current["run_id"], worker_id)
            step = self._step(row)
            run_row = await tx.one("run_owner", id=step.run_id)
            assert run_row is not None
            owner = run_row["owner"]
            await self._after_step(tx, step, owner, now, message)
            await self._step_event(tx, step_event(status), step, owner, now)
        return step

    async def record_step(
        self,
        *,
        run_id: str,
        worker_id: str,
        position: int | None,
        kind: StepKind,
        name: str,
        input: Any,
        now: datetime,
        status: StepStatus = StepStatus.COMPLETED,
        output: Any = None,
        error: ErrorInfo | None = None,
        usage: Usage | None = None,
        message: tuple[Role, str, dict[str, Any]] | None = None,
        max_steps: int | None = None,
    ) -> Step:
        check_transition(StepStatus.RUNNING, status)
        async with self._db.write() as tx:
            # A message step touches its session in the guard's statement.
            held = await self._open_seq(
                tx,
                run_id,
                worker_id,
                touch_at=None if message is None else now,
                max_steps=max_steps,
            )
            params = self._step_params(
                held,
                run_id,
                position,
                kind,
                name,
                status,
                input,
                now,
                output=output,
                error=error,
                usage=usage,
                ended_at=now,
            )
            await tx.later("insert_step", **params)
            step = _inserted(params, kind, status, input, output, error, usage)
            counted = None if message is None else held
            await self._after_step(tx, step, held["owner"], now, message, counted)
            await self._step_event(tx, step_event(status), step, held["owner"], now)
        return step

    async def add_model_chunk(
        self, step_id: str, *, run_id: str, worker_id: str, index: int, text: str, now: datetime
    ) -> None:
        async with self._db.write() as tx:
            held = await tx.one("hold_run_for_step", run_id=run_id, worker_id=worker_id)
            if held is None:
                await self._lost(tx, run_id, worker_id)
            await self._event(
                tx,
                EventType.MODEL_CHUNK,
                owner=held["owner"],
                now=now,
                session_id=held["session_id"],
                run_id=run_id,
                data={"step_id": step_id, "index": index, "text": text},
            )

    async def list_steps(self, run_id: str) -> list[Step]:
        async with self._db.read() as tx:
            rows = await tx.all("steps_of_run", run_id=run_id)
        return [self._step(r) for r in rows]

    async def page_steps(self, run_id: str, *, after_seq: int, limit: int) -> list[Step]:
        async with self._db.read() as tx:
            rows = await tx.all(
                "steps_of_run_after", run_id=run_id, after_seq=after_seq, limit=limit
            )
        return [self._step(r) for r in rows]

    async def list_tool_calls(
        self,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        tool: str | None = None,
        status: StepStatus | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 100,
        cursor: str | None = None,
        newest_first: bool = False,
    ) -> Page[Step]:
        if session_id is None and run_id is None:
            raise ValueError("list_tool_calls needs session_id or run_id")
        after = before = None
        if cursor is not None:
            (position,) = decode_cursor(cursor, str)
            before, after = (position, None) if newest_first else (None, position)
        params: dict[str, Any] = {
            "run_id": run_id,
            "status": None if status is None else status.value,
            "since": opt_us(since),
            "until": opt_us(until),
            "after_id": after or _ID_MIN,
            "before_id": before or _ID_MAX,
            "limit": limit + 1,
        }
        direction = "backward" if newest_first else "forward"
        if session_id is None:
            name = f"tool_calls_of_run_{direction}"
            params["tool"] = tool
        elif tool is None:
            name = f"tool_calls_of_session_{direction}"
            params["session_id"] = session_id
        else:
            name = f"tool_calls_of_session_by_name_{direction}"
            params["session_id"] = session_id
            params["tool"] = tool
        async with self._db.read() as tx:
            rows = await tx.all(name, **params)
        steps = [self._step(r) for r in rows[:limit]]
        return Page(steps, encode_cursor(steps[-1].id) if len(rows) > limit else None)


def _inserted(
    params: dict[str, Any],
    kind: StepKind,
    status: StepStatus,
    input: Any,
    output: Any,
    error: ErrorInfo | None,
    usage: Usage | None,
) -> Step:
    """The step insert_step wrote, from its parameters (no read back)."""
    ended = params["ended_at"]
    return Step(
        id=params["id"],
        run_id=params["run_id"],
        session_id=params["session_id"],
        seq=params["seq"],
        position=params["position"],
        kind=kind,
        name=params["name"],
        status=status,
        started_at=from_us(params["started_at"]),
        input=input,
        output=output,
        error=error,
        ended_at=None if ended is None else from_us(ended),
        usage=usage or ZERO_USAGE,
        attempt=params["attempt"],
    )
