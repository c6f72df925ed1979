"""The Step record: one unit of work inside a run."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from tether.core.run import ErrorInfo
from tether.core.status import StepStatus
from tether.core.usage import ZERO_USAGE, Usage


class StepKind(StrEnum):
    """What a step did."""

    MODEL_CALL = "model_call"  #: one request to a model
    TOOL_CALL = "tool_call"  #: a tool call and its result, together
    MESSAGE = "message"  #: a message exchanged with a person (including waiting for input)
    NOTE = "note"  #: anything else the agent wants on record


#: A run's wait for a person is a message step named ``wait_for_input`` or ``wait_for_approval``.
WAIT_PREFIX = "wait_for_"


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a run; a tool call and its result live in the same step."""

    id: str
    run_id: str
    session_id: str
    #: 1, 2, 3 … within the run, in the order steps were opened.
    seq: int
    #: Where the agent's code opened it; replay matches recorded steps by position.
    position: int
    kind: StepKind
    name: str
    status: StepStatus
    started_at: datetime
    input: Any = None
    output: Any = None
    error: ErrorInfo | None = None
    ended_at: datetime | None = None
    usage: Usage = ZERO_USAGE
    #: The run attempt that recorded the step.
    attempt: int = 1

    @property
    def duration_seconds(self) -> float | None:
        if self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()

    @property
    def waits_for(self) -> str | None:
        """What the step waited for a person to give ("input", "approval"), if it is a wait."""
        if self.kind is StepKind.MESSAGE and self.name.startswith(WAIT_PREFIX):
            return self.name.removeprefix(WAIT_PREFIX)
        return None

    @property
    def label(self) -> tuple[str, str]:
        """Its kind and name as people read them: a wait is ("wait", "for input")."""
        waits_for = self.waits_for
        if waits_for is not None:
            return "wait", f"for {waits_for}"
        return self.kind.value, self.name
