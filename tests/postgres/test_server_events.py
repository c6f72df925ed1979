"""A run's claim and finish on PostgreSQL append their run events in the statement that changes
the run (schema 14's functions make the event's JSON, its lock key and its notification): the
events must be the ones tether's Python makes for every other write, key by key and as the
database keeps their text, in the same id order, with the same notifications."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from tests.postgres.helpers import run, service, sql, with_stores
from tether.core.event import Event, EventType
from tether.core.run import ErrorInfo, Run
from tether.core.serde import to_data
from tether.core.status import RunStatus
from tether.core.step import StepKind
from tether.core.usage import Usage
from tether.store.base import Store
from tether.store.postgres.listener import notify_payloads
from tether.store.postgres.store import PostgresStore
from tether.store.sql.common import event_topics
from tether.store.sql.rows import to_us

pytestmark = pytest.mark.postgres

#: Outputs whose JSON could come out differently from the server than from Python.
OUTPUTS: list[Any] = [
    {"text": "echo: hi"},
    {"float": 1.0, "tiny": 0.1, "exp": 2.5e-7, "big": 2**70, "neg": -3},
    {"text": 'é ü 中文 \u2028 "quoted" \\ tab\t', "nested": {"none": None, "list": [1, None]}},
    "a string",
    [1, 2, 3],
    False,
    {},
]


def _python_event(run: Run) -> dict[str, Any]:
    """A run event's data as tether's Python makes it (SqlBase._event)."""
    data: dict[str, Any] = to_data({"run": run.summary().data()})
    return data


def _same_event(url: str, event: Event, run: Run) -> None:
    """event is the event Python makes for run: key by key, and as the database's text."""
    expected = _python_event(run)
    assert event.data == expected
    assert json.dumps(event.data["run"], sort_keys=True) == json.dumps(
        expected["run"], sort_keys=True
    )
    ((stored, made),) = sql(
        url,
        "SELECT data::text, %s::jsonb::text FROM events WHERE id = %s",
        json.dumps(expected, separators=(",", ":"), ensure_ascii=False),
        event.id,
    )
    assert stored == made


def _next_second() -> datetime:
    """Now, to the next whole second (a time without microseconds)."""
    return datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)


@pytest.mark.parametrize("output", OUTPUTS)
def test_a_claim_and_a_finish_append_the_events_python_makes(pg_url: str, output: Any) -> None:
    async def body(store: Store) -> None:
        assert isinstance(store, PostgresStore)
        svc = service(store)
        t0 = _next_second()
        session = await svc.create_session()
        created = await svc.create_run(session.id, "the goal", input={"text": "x"})
        claimed = await store.claim_run(worker_id="w1", now=t0, lease_seconds=60)
        assert claimed is not None and claimed.id == created.id
        await store.record_step(
            run_id=created.id,
            worker_id="w1",
            position=None,
            kind=StepKind.MODEL_CALL,
            name="model",
            input={},
            now=t0 + timedelta(seconds=0.0625),
            usage=Usage(3, 4, 1),
        )
        finished = await store.finish_run(
            created.id,
            worker_id="w1",
            status=RunStatus.COMPLETED,
            now=t0 + timedelta(seconds=0.123457),
            output=output,
        )
        assert finished.usage == Usage(3, 4, 1) and finished.output == output
        events = await store.list_events(run_id=created.id)
        assert [e.type for e in events] == [
            EventType.RUN_CREATED,
            EventType.RUN_STARTED,
            EventType.STEP_COMPLETED,
            EventType.RUN_COMPLETED,
        ]
        assert [e.id for e in events] == sorted(e.id for e in events)
        _same_event(pg_url, events[1], claimed)
        _same_event(pg_url, events[3], finished)
        assert events[3].created_at == t0 + timedelta(seconds=0.123457)
        assert finished == await store.get_run(created.id)

    run(with_stores(pg_url, 1, body))


@pytest.mark.parametrize("step_id", [None, "step-1"])
def test_a_failed_run_carries_its_error_as_python_writes_it(
    pg_url: str, step_id: str | None
) -> None:
    async def body(store: Store) -> None:
        svc = service(store)
        t0 = _next_second()
        session = await svc.create_session()
        created = await svc.create_run(session.id, "fails")
        await store.claim_run(worker_id="w1", now=t0 + timedelta(seconds=0.5), lease_seconds=60)
        failed = await store.finish_run(
            created.id,
            worker_id="w1",
            status=RunStatus.FAILED,
            now=t0 + timedelta(seconds=0.75),
            error=ErrorInfo("ValueError", "boom \u00e9", step_id=step_id),
        )
        events = await store.list_events(run_id=created.id)
        assert events[-1].type == EventType.RUN_FAILED
        assert events[-1].data["run"]["error"] == {
            "type": "ValueError",
            "message": "boom \u00e9",
            "step_id": step_id,
        }
        assert "usage" not in events[-1].data["run"] and "output" not in events[-1].data["run"]
        _same_event(pg_url, events[-1], failed)

    run(with_stores(pg_url, 1, body))


def test_a_run_with_open_steps_closes_them_first_then_finishes(pg_url: str) -> None:
    async def body(store: Store) -> None:
        svc = service(store)
        t0 = _next_second()
        session = await svc.create_session()
        created = await svc.create_run(session.id, "open step")
        await store.claim_run(worker_id="w1", now=t0, lease_seconds=60)
        await store.start_step(
            run_id=created.id,
            worker_id="w1",
            position=None,
            kind=StepKind.TOOL_CALL,
            name="tool",
            input={},
            now=t0 + timedelta(seconds=0.1),
        )
        cancelled = await store.finish_run(
            created.id, worker_id="w1", status=RunStatus.CANCELLED, now=t0 + timedelta(seconds=0.2)
        )
        events = await store.list_events(run_id=created.id)
        assert [e.type for e in events][-2:] == [EventType.STEP_IN_DOUBT, EventType.RUN_CANCELLED]
        _same_event(pg_url, events[-1], cancelled)

    run(with_stores(pg_url, 1, body))


def test_the_server_writes_times_as_python_does(pg_url: str) -> None:
    moments = [0, 1, 999_999, 1_000_000, 1_733_337_944_000_000, 1_733_337_944_000_010, -1]
    moments.append(to_us(datetime(2026, 12, 4, 18, 45, 44, 120000, tzinfo=UTC)))
    for us in moments:
        expected = to_data(datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us))
        assert sql(pg_url, "SELECT tether_iso(%s)", us) == [(expected,)]


def test_a_claim_and_a_finish_notify_as_other_events_do(pg_url: str) -> None:
    async def body(store: Store) -> None:
        assert isinstance(store, PostgresStore)
        svc = service(store)
        t0 = _next_second()
        session = await svc.create_session()
        created = await svc.create_run(session.id, "told")
        with psycopg.connect(pg_url, autocommit=True) as listening:
            listening.execute("LISTEN tether")
            await store.claim_run(worker_id="w1", now=t0, lease_seconds=60)
            await store.finish_run(
                created.id,
                worker_id="w1",
                status=RunStatus.COMPLETED,
                now=t0 + timedelta(seconds=0.5),
            )
            heard = [n.payload for n in listening.notifies(timeout=5, stop_after=2)]
        source = store.database.source
        assert heard == [
            *notify_payloads(
                source, event_topics(EventType.RUN_STARTED, "alice", session.id, created.id)
            ),
            *notify_payloads(
                source, event_topics(EventType.RUN_COMPLETED, "alice", session.id, created.id)
            ),
        ]

    run(with_stores(pg_url, 1, body))
