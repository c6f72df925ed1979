"""Aggregates of an owner's runs over a period: what the UI's overview charts."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from tether.core.status import RunStatus


@dataclass(frozen=True, slots=True)
class SlotCount:
    """Runs created in one hour with one status."""

    start: datetime  #: the first moment of the hour (UTC)
    status: RunStatus
    runs: int


@dataclass(frozen=True, slots=True)
class AgentDurations:
    """Nearest-rank percentiles of the durations of an agent's finished runs."""

    agent: str
    runs: int  #: finished runs that started (the sample)
    p50_seconds: float
    p95_seconds: float


@dataclass(frozen=True, slots=True)
class ModelTokens:
    """Tokens of one model's calls on one UTC day."""

    day: datetime  #: midnight UTC
    model: str
    input_tokens: int
    output_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class ToolFailures:
    """How often one tool's calls failed (failed or in doubt) out of all its calls."""

    tool: str
    calls: int
    failed: int


@dataclass(frozen=True, slots=True)
class RunStats:
    """An owner's runs created in [since, until), aggregated."""

    since: datetime
    until: datetime
    by_hour: list[SlotCount] = field(default_factory=list)
    durations: list[AgentDurations] = field(default_factory=list)
    tokens: list[ModelTokens] = field(default_factory=list)
    failing_tools: list[ToolFailures] = field(default_factory=list)
