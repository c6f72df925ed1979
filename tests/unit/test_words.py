"""Words people read: a run's wait for a person reads as a wait, not as a message; counts
agree with their nouns."""

from __future__ import annotations

from datetime import UTC, datetime

from tether.cli.render import plural
from tether.core.status import StepStatus
from tether.core.step import Step, StepKind

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _step(kind: StepKind, name: str) -> Step:
    return Step("s", "r", "ss", 1, 0, kind, name, StepStatus.COMPLETED, NOW)


def test_a_wait_reads_as_a_wait() -> None:
    assert _step(StepKind.MESSAGE, "wait_for_input").label == ("wait", "for input")
    assert _step(StepKind.MESSAGE, "wait_for_approval").waits_for == "approval"
    said = _step(StepKind.MESSAGE, "assistant_message")
    assert (said.waits_for, said.label) == (None, ("message", "assistant_message"))
    assert _step(StepKind.NOTE, "wait_for_input").waits_for is None  # only a message waits


def test_counts_agree_with_their_nouns() -> None:
    assert [plural(n, "tool call") for n in (0, 1, 2)] == [
        "0 tool calls",
        "1 tool call",
        "2 tool calls",
    ]
