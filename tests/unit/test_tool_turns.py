"""The tool-call messages of the LangGraph view, read from a run's steps: a model call that asked
for tools is an AI message with tool_calls, each finished tool call a model asked for a tool
message (its error as the model saw it); a call still running, a call the agent made itself and
an earlier attempt at a position show nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tether.api.langgraph.shapes import lc_message
from tether.api.langgraph.tool_turns import merged, run_messages
from tether.core.message import Message, Role
from tether.core.run import ErrorInfo
from tether.core.status import StepStatus
from tether.core.step import Step, StepKind

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _step(seq: int, kind: StepKind, status: StepStatus, **fields: Any) -> Step:
    at = T0 + timedelta(seconds=seq)
    ended = None if status is StepStatus.RUNNING else at + timedelta(milliseconds=500)
    position = fields.pop("position", seq)
    return Step(
        id=f"s{seq}",
        run_id="r",
        session_id="t",
        seq=seq,
        position=position,
        kind=kind,
        name=fields.pop("name", "weather"),
        status=status,
        started_at=at,
        ended_at=ended,
        **fields,
    )


def test_a_runs_tool_calls_as_messages() -> None:
    asked = {
        "content": "Let me look.",
        "tool_calls": [
            {"id": "c1", "name": "weather", "arguments": {"city": "Oslo"}},
            {"id": "c2", "name": "weather", "arguments": {"city": "Atlantis"}},
        ],
    }
    steps = [
        _step(1, StepKind.MODEL_CALL, StepStatus.COMPLETED, output=asked),
        _step(2, StepKind.TOOL_CALL, StepStatus.COMPLETED, input={"call_id": "c1"}, output="sun"),
        # The first attempt at position 3 was cut off; the second one failed.
        _step(3, StepKind.TOOL_CALL, StepStatus.FAILED, input={"call_id": "c2"}, position=3),
        _step(
            4,
            StepKind.TOOL_CALL,
            StepStatus.FAILED,
            input={"call_id": "c2"},
            position=3,
            error=ErrorInfo("ToolError", "no such city"),
        ),
        _step(5, StepKind.TOOL_CALL, StepStatus.COMPLETED, input={"call_id": None}, output=1),
        _step(6, StepKind.MODEL_CALL, StepStatus.COMPLETED, output={"content": "Sunny."}),
        _step(7, StepKind.TOOL_CALL, StepStatus.RUNNING, input={"call_id": "c3"}),
    ]
    shown = [lc_message(m) for m in run_messages(steps)]
    assert [(m["type"], m["id"], m["content"]) for m in shown] == [
        ("ai", "s1", "Let me look."),
        ("tool", "s2", "sun"),
        ("tool", "s4", "ERROR: no such city"),
    ]
    assert [(c["id"], c["args"]) for c in shown[0]["tool_calls"]] == [
        ("c1", {"city": "Oslo"}),
        ("c2", {"city": "Atlantis"}),
    ]
    assert [m.get("tool_call_id") for m in shown[1:]] == ["c1", "c2"]


def test_they_go_among_the_conversation_by_time() -> None:
    def said(i: int, seconds: float) -> Message:
        at = T0 + timedelta(seconds=seconds)
        return Message(f"m{i}", "t", i, Role.USER, f"text {i}", at)

    turns = run_messages(
        [_step(1, StepKind.TOOL_CALL, StepStatus.COMPLETED, input={"call_id": "c"}, output="x")]
    )
    conversation = [said(1, 0), said(2, 1.5)]  # the tool call ends at 1.5 s too
    assert [m.id for m in merged(conversation, turns)] == ["m1", "s1", "m2"]
    assert merged(conversation, []) is conversation
