"""The three status enums: every transition pair, allowed or refused, by the one guard."""

from __future__ import annotations

import itertools
from enum import StrEnum

import pytest

from tether.core.errors import Conflict, InvalidTransition
from tether.core.status import (
    RUN_ACTIVE,
    RUN_TERMINAL,
    RUN_TRANSITIONS,
    RUN_UNFINISHED,
    SESSION_TRANSITIONS,
    STEP_TRANSITIONS,
    RunStatus,
    SessionStatus,
    StepStatus,
    can_transition,
    check_transition,
    sources_of,
)

S, R, T = SessionStatus, RunStatus, StepStatus

#: The allowed transitions, written out by hand from DESIGN.md §1 (not read from the tables).
ALLOWED: set[tuple[StrEnum, StrEnum]] = {
    (S.ACTIVE, S.CLOSED),
    (S.ACTIVE, S.EXPIRED),
    (R.READY, R.RUNNING),
    (R.READY, R.CANCELLED),
    (R.READY, R.FAILED),  # no running worker has its agent (after the grace period)
    (R.RUNNING, R.COMPLETED),
    (R.RUNNING, R.FAILED),
    (R.RUNNING, R.TIMED_OUT),
    (R.RUNNING, R.WAITING),
    (R.RUNNING, R.CANCELLED),
    (R.RUNNING, R.READY),  # the reaper's retry / a worker draining on shutdown
    (R.WAITING, R.RUNNING),
    (R.WAITING, R.CANCELLED),
    (R.WAITING, R.TIMED_OUT),
    (T.RUNNING, T.COMPLETED),
    (T.RUNNING, T.FAILED),
    (T.RUNNING, T.IN_DOUBT),
}

KIND = {SessionStatus: "session", RunStatus: "run", StepStatus: "step"}

PAIRS = [
    pytest.param(current, target, id=f"{KIND[enum]}:{current.value}->{target.value}")
    for enum in (SessionStatus, RunStatus, StepStatus)
    for current, target in itertools.product(enum, repeat=2)
]


@pytest.mark.parametrize(("current", "target"), PAIRS)
def test_every_transition_pair(current: StrEnum, target: StrEnum) -> None:
    if (current, target) in ALLOWED:
        assert can_transition(current, target)
        check_transition(current, target)  # does not raise
        assert current in sources_of(target)
        return
    assert not can_transition(current, target)
    assert current not in sources_of(target)
    with pytest.raises(InvalidTransition) as caught:
        check_transition(current, target)
    error = caught.value
    assert isinstance(error, Conflict)
    assert error.current == current.value
    assert error.target == target.value
    message = str(error)
    assert f"from {current.value} to {target.value}" in message
    assert KIND[type(current)] in message
    assert error.code == "invalid_transition"
    assert error.http_status == 409


def test_tables_hold_exactly_the_designed_transitions() -> None:
    tables = (SESSION_TRANSITIONS, RUN_TRANSITIONS, STEP_TRANSITIONS)
    from_tables = {(c, t) for table in tables for c, targets in table.items() for t in targets}
    assert from_tables == ALLOWED
    assert set(SESSION_TRANSITIONS) == set(SessionStatus), "every session status has a row"
    assert set(RUN_TRANSITIONS) == set(RunStatus), "every run status has a row"
    assert set(STEP_TRANSITIONS) == set(StepStatus), "every step status has a row"


def test_terminal_run_states_have_no_exits() -> None:
    assert {R.COMPLETED, R.FAILED, R.TIMED_OUT, R.CANCELLED} == RUN_TERMINAL
    for terminal in RUN_TERMINAL:
        assert RUN_TRANSITIONS[terminal] == frozenset()
        for target in RunStatus:
            with pytest.raises(InvalidTransition):
                check_transition(terminal, target)
    assert {R.RUNNING, R.WAITING} == RUN_ACTIVE
    assert {R.READY, R.RUNNING, R.WAITING} == RUN_UNFINISHED


def test_closed_and_expired_sessions_are_terminal() -> None:
    for status in (S.CLOSED, S.EXPIRED):
        assert SESSION_TRANSITIONS[status] == frozenset()


def test_guard_refuses_comparing_different_enums() -> None:
    with pytest.raises(TypeError):
        check_transition(RunStatus.RUNNING, StepStatus.COMPLETED)


def test_invalid_transition_names_the_object_when_given() -> None:
    error = InvalidTransition("run", "completed", "cancelled", "r-1")
    assert str(error) == "run r-1 cannot go from completed to cancelled"


def test_status_values_are_lower_case_wire_names() -> None:
    for enum in (SessionStatus, RunStatus, StepStatus):
        for member in enum:
            assert member.value == member.name.lower()
