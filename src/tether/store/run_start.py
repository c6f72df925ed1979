"""What a claimed run starts from, read at once (Store.run_start): values the store returns, not
records it keeps (so they live here rather than among core's JSON records)."""

from __future__ import annotations

from dataclasses import dataclass

from tether.core.memory import MemoryItem, MemoryScope
from tether.core.message import Message
from tether.core.run import RunSummary
from tether.core.session import Session
from tether.core.step import Step


@dataclass(frozen=True, slots=True)
class SourceLimits:
    """How much of each source of a context to read (the newest first)."""

    runs: int
    tool_calls: int
    messages: int


@dataclass(frozen=True, slots=True)
class ContextSources:
    """The newest of what a run's context is assembled from, newest first each: the session's
    earlier runs (before the run's seq, as summaries), its tool calls, and a first page of its
    conversation (at most SourceLimits.messages)."""

    runs: list[RunSummary]
    tool_calls: list[Step]
    messages: list[Message]


@dataclass(frozen=True, slots=True)
class RunStart:
    """A run's session, the memory it starts with (as Store.memory_of_run gives it, for the
    session's app), the steps it recorded, and, when asked for, its context's sources."""

    session: Session
    memory: dict[MemoryScope, list[MemoryItem]]
    steps: list[Step]
    sources: ContextSources | None = None
