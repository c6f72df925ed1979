"""The Schedule record: runs created on a cron expression, in one session or a new one each
time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Schedule:
    """Creates a run of ``agent`` at each time ``cron`` names in ``timezone``, until ``end_at``."""

    id: str
    owner: str
    #: Five-field cron expression (core.cron).
    cron: str
    #: IANA time zone the expression is read in.
    timezone: str
    agent: str
    #: The runs' goal (None: taken from the input, else the schedule's cron expression).
    goal: str | None
    input: dict[str, Any]
    #: The session each run is created in; None: a new session for each run.
    session_id: str | None
    #: Given to each run as its metadata.
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    #: No run is created at or after this time.
    end_at: datetime | None = None
    #: False while paused: ticks pass without runs.
    enabled: bool = True
    #: The next tick; None when there is none (past end_at).
    next_run_at: datetime | None = None
    #: The run the last tick created.
    last_run_id: str | None = None
