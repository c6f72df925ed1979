"""The Assistant record: a named configuration of an agent, kept in versions."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Assistant:
    """One version of an assistant (the assistant itself: the version its runs use)."""

    id: str
    owner: str
    #: The agent it configures (LangGraph's graph id).
    graph_id: str
    name: str
    version: int
    created_at: datetime
    #: When the assistant last changed (a version's: when it was made).
    updated_at: datetime
    description: str | None = None
    #: Given to its runs as the agent's configuration (``ctx.run.metadata["assistant"]``).
    config: dict[str, Any] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
