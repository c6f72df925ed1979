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
