"""The base every SQL store part builds on: events, guards and the session-state diagnosis."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any, NoReturn

from tether.core.errors import LeaseLost, NotFound, SessionClosed, SessionExpired, UsageError
from tether.core.event import EventType, step_event
from tether.core.run import ErrorInfo, Run
from tether.core.serde import to_data
from tether.core.session import Session
from tether.core.status import SessionStatus, StepStatus
from tether.store.base import EventObserver
from tether.store.changes import (
    RUNS_TOPIC,
    ChangeFeed,
    run_status_topic,
    run_topic,
    session_topic,
)
from tether.store.sql.database import Database, Events, ReadTx, Row, Tx
from tether.store.sql.rows import error_data, run_from_row, session_from_row, step_from_row, to_us

log = logging.getLogger("tether.store")


class SqlBase:
    """State and helpers shared by the parts of SqlStore."""

    def __init__(self, db: Database) -> None:
        self._db = db
        #: The backend's connections and named queries (for tools such as db copy).
        self.database: Database = db
        self.changes: ChangeFeed = db.changes
        self.location: str = db.location
        self.any_loop: bool = db.any_loop
        self._observers: list[EventObserver] = []

    def observe(self, observer: EventObserver) -> None:
        self._observers.append(observer)

    def _tell(self, type_: str, data: dict[str, Any]) -> None:
        """Hand a committed event to the observers; one that fails is logged and skipped."""
        for observer in self._observers:
            try:
                observer(type_, data)
            except Exception:
                log.exception("an observer of %s events failed", type_)

    def _tell_all(self, type_: str, payloads: list[dict[str, Any]]) -> None:
        for payload in payloads:
            self._tell(type_, payload)

    def _j(self, value: Any) -> Any:
        """value as a JSON column parameter; UsageError when it is not JSON (NaN included)."""
        try:
            return self._db.dump_json(value)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"not storable as JSON: {exc}") from exc

    async def _event(
        self,
        tx: Tx,
        type_: EventType,
        *,
        owner: str,
        now: datetime,
        session_id: str | None = None,
        run_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        """Append an event in tx and announce it when tx commits. A run is carried as its
        summary (RunSummary): not its input, metadata or assembled context, which stay on it.
        A type that is not an EventType is refused before anything is written (ValueError)."""
        type_ = EventType(type_)
        payload = {} if data is None else data
        run = payload.get("run")
        if isinstance(run, Run):
            payload = {**payload, "run": run.summary().data()}
        payload = to_data(payload)
        await self._events(
            tx,
            type_,
            owner=owner,
            now=now,
            session_id=session_id,
            run_id=run_id,
            data=[payload],
            told=[data or {}],
        )

    async def _events(
        self,
        tx: Tx,
        type_: EventType,
        *,
        owner: str,
        now: datetime,
        session_id: str | None,
        run_id: str | None = None,
        data: list[dict[str, Any]],
        told: list[dict[str, Any]] | None = None,
    ) -> None:
        """Append one event of type_ per payload in data (each already in its JSON form), in
        order, and announce them when tx commits; the observers get told (the payloads with
        their records, one per event), or else data."""
        await self._encoded_events(
            tx,
            type_,
            owner=owner,
            now=now,
            session_id=session_id,
            run_id=run_id,
            texts=[self._j(payload) for payload in data],
            told=lambda: data if told is None else told,
        )

    async def _encoded_events(
        self,
        tx: Tx,
        type_: EventType,
        *,
        owner: str,
        now: datetime,
        session_id: str | None,
        run_id: str | None,
        texts: list[str],
        told: Callable[[], list[dict[str, Any]]],
    ) -> None:
        """_events, with each payload already encoded as the JSON text of its data column;
        told() makes what the observers get (only called when there are observers)."""
        await tx.append_events(Events(type_._value_, owner, session_id, run_id, to_us(now), texts))
        tx.publish(*event_topics(type_, owner, session_id, run_id))
        if self._observers:
            payloads = told()
            tx.after_commit(lambda: self._tell_all(type_, payloads))

    async def _touch_active(
        self,
        tx: Tx,
        session_id: str,
        *,
        owner: str | None,
        now: datetime,
        add_messages: int = 0,
        add_runs: int = 0,
    ) -> Row:
        """Record activity on an active session; raise why not if it is not active (the row:
        owner, message_count, run_count)."""
        row = await tx.one(
            "touch_active_session",
            id=session_id,
            owner=owner,
            now=to_us(now),
            add_messages=add_messages,
            add_runs=add_runs,
        )
        if row is None:
            await self._refuse(tx, session_id, owner=owner, now=now)
        return row

    async def _refuse(
        self, tx: Tx, session_id: str, *, owner: str | None, now: datetime
    ) -> NoReturn:
        """Raise the error that explains why session_id takes no writes."""
        session = await self._session_in(tx, session_id, owner)
        if session.status is SessionStatus.CLOSED:
            raise SessionClosed(session_id)
        if session.is_expired_at(now):
            raise SessionExpired(session_id)
        raise AssertionError(f"session {session_id} is active yet refused a write")

    async def _lost(self, tx: ReadTx, run_id: str, worker_id: str) -> NoReturn:
        """Raise why worker_id may not write to run_id."""
        row = await tx.one("get_run", id=run_id, owner=None)
        if row is None:
            raise NotFound("run", run_id)
        raise LeaseLost(
            f"run {run_id} is {row['status']} and no longer held by worker {worker_id}",
            run_id=run_id,
            status=row["status"],
        )

    async def _session_in(self, tx: Tx, session_id: str, owner: str | None) -> Session:
        row = await tx.one("get_session", id=session_id, owner=owner)
        if row is None:
            raise NotFound("session", session_id)
        return session_from_row(row, self._db.load_json)

    async def _close_open_steps(
        self,
        tx: Tx,
        run: Run,
        *,
        now: datetime,
        error: ErrorInfo,
    ) -> None:
        """Close a run's unfinished steps: tool calls as in_doubt (their effect may have
        happened without its result being recorded), the others as failed with error."""
        query, params = self._closing_steps(run.id, now=now, error=error)
        await self._steps_closed(tx, run, await tx.all(query, **params), now=now)

    def _closing_steps(
        self, run_id: str, *, now: datetime, error: ErrorInfo
    ) -> tuple[str, dict[str, Any]]:
        """The statement that closes a run's unfinished steps (for tx.batch)."""
        params = {"run_id": run_id, "error": self._j(error_data(error)), "now": to_us(now)}
        return "close_open_steps", params

    async def _steps_closed(self, tx: Tx, run: Run, rows: list[Row], *, now: datetime) -> None:
        """The events of the steps close_open_steps closed (its rows)."""
        steps = [step_from_row(row, self._db.load_json) for row in rows]
        steps.sort(key=lambda step: (step.status is not StepStatus.IN_DOUBT, step.seq))
        for step in steps:
            await self._event(
                tx,
                step_event(step.status),
                owner=run.owner,
                now=now,
                session_id=run.session_id,
                run_id=run.id,
                data={"step": step},
            )

    async def _cancel_in(
        self, tx: Tx, run_id: str, *, owner: str, now: datetime, reason: str
    ) -> Run | None:
        """Cancel an unfinished run inside tx; None if it was already finished."""
        error = ErrorInfo(type="cancelled", message=reason)
        row = await tx.one(
            "cancel_run", id=run_id, now=to_us(now), error=self._j(error_data(error))
        )
        if row is None:
            return None
        run = run_from_row(row, self._db.load_json)
        await self._close_open_steps(tx, run, now=now, error=error)
        await self._event(
            tx,
            EventType.RUN_CANCELLED,
            owner=owner,
            now=now,
            session_id=run.session_id,
            run_id=run.id,
            data={"run": run, "reason": reason},
        )
        return run

    async def _cancel_unfinished(
        self, tx: Tx, session_id: str, *, owner: str, now: datetime, reason: str
    ) -> list[Run]:
        """Cancel every unfinished run of a session inside tx."""
        cancelled = []
        for row in await tx.all("unfinished_runs", session_id=session_id):
            run = await self._cancel_in(tx, row["id"], owner=owner, now=now, reason=reason)
            if run is not None:
                cancelled.append(run)
        return cancelled


def event_topics(
    type_: EventType, owner: str, session_id: str | None, run_id: str | None
) -> list[str]:
    """The change topics an event of type_ is published on (PostgreSQL's claim_run and
    finish_run_told name the same ones for the run events they append)."""
    topics = [f"owner:{owner}"]
    if session_id:
        topics.append(session_topic(session_id))
    if run_id:
        topics.append(run_topic(run_id))
    if type_.startswith("run."):
        if run_id:
            topics.append(run_status_topic(run_id))
        if type_ is not EventType.RUN_STARTED:  # a start makes no run claimable
            topics.append(RUNS_TOPIC)
    return topics
