"""Event types: one enum, the sets derived from the status tables, typed payload accessors, and the
wire format unchanged (the type is its plain string)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tether.core.event import (
    STEP_END_EVENTS,
    TERMINAL_RUN_EVENTS,
    Event,
    EventType,
    run_event,
    step_event,
)
from tether.core.message import Message, Role
from tether.core.run import Run
from tether.core.serde import from_data, to_data
from tether.core.status import RUN_TERMINAL, RunStatus, StepStatus
from tether.core.step import Step, StepKind

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
DOCS = Path(__file__).parents[2] / "docs" / "api.md"


def _documented_types() -> set[str]:
    """The event types docs/api.md lists (``run.created|started|…`` groups)."""
    text = DOCS.read_text()
    paragraph = text[text.index("Event types:") :].split("\n\n")[0]
    found: set[str] = set()
    for group in re.findall(r"`([a-z_]+)\.([a-z_|]+)`", paragraph):
        prefix, names = group
        found.update(f"{prefix}.{name}" for name in names.split("|"))
    return found


def test_the_enum_holds_exactly_the_documented_types() -> None:
    assert {t.value for t in EventType} == _documented_types()


def test_terminal_run_events_are_one_per_terminal_status() -> None:
    assert {
        EventType.RUN_COMPLETED,
        EventType.RUN_FAILED,
        EventType.RUN_TIMED_OUT,
        EventType.RUN_CANCELLED,
    } == TERMINAL_RUN_EVENTS
    assert {run_event(s) for s in RUN_TERMINAL} == TERMINAL_RUN_EVENTS
    assert {
        EventType.STEP_COMPLETED,
        EventType.STEP_FAILED,
        EventType.STEP_IN_DOUBT,
    } == STEP_END_EVENTS


def test_statuses_without_an_event_of_their_own_are_refused() -> None:
    assert run_event(RunStatus.WAITING) is EventType.RUN_WAITING
    assert step_event(StepStatus.IN_DOUBT) is EventType.STEP_IN_DOUBT
    with pytest.raises(ValueError):
        run_event(RunStatus.READY)
    with pytest.raises(ValueError):
        step_event(StepStatus.RUNNING)


def _run() -> Run:
    return Run(
        id="r-1",
        session_id="s-1",
        owner="alice",
        seq=1,
        agent="echo",
        goal="go",
        status=RunStatus.WAITING,
        created_at=NOW,
        updated_at=NOW,
        waiting_for={"kind": "input", "prompt": "ok?"},
    )


def test_the_wire_form_is_unchanged_and_reads_back_typed() -> None:
    run = _run()
    event = Event(
        id=7,
        type=EventType.RUN_WAITING,
        owner="alice",
        created_at=NOW,
        session_id="s-1",
        run_id="r-1",
        data=to_data({"run": run}),
    )
    wire = to_data(event)
    assert wire["type"] == "run.waiting"
    assert json.loads(json.dumps(wire))["type"] == "run.waiting"
    back = from_data(Event, wire)
    assert back == event
    assert back.type is EventType.RUN_WAITING
    assert back.run == run


def test_payload_accessors_rebuild_each_record() -> None:
    step = Step(
        id="st-1",
        run_id="r-1",
        session_id="s-1",
        seq=1,
        position=1,
        kind=StepKind.TOOL_CALL,
        name="run_command",
        status=StepStatus.COMPLETED,
        started_at=NOW,
        ended_at=NOW,
        output="1 failed",
    )
    message = Message(
        id="m-1", session_id="s-1", seq=1, role=Role.USER, content="hi", created_at=NOW
    )
    stepped = Event(1, EventType.STEP_COMPLETED, "alice", NOW, data=to_data({"step": step}))
    added = Event(2, EventType.MESSAGE_ADDED, "alice", NOW, data=to_data({"message": message}))
    assert stepped.step == step
    assert added.message == message
    assert stepped.changed == []


def test_an_accessor_for_a_record_the_event_lacks_names_both() -> None:
    added = Event(1, EventType.MEMORY_SET, "alice", NOW, data={"item": {}})
    with pytest.raises(ValueError, match=r"memory\.set event carries no run"):
        _ = added.run


def test_an_unknown_type_is_no_event_type() -> None:
    with pytest.raises(ValueError):
        EventType("run.paused")
