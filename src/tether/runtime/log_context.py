"""Which run a log line is about, so every line logged while a run executes carries its ids.

The executor marks each execution with ``about(run)``; anything logged inside it (tether's own
lines, the agent's, its tools') is about that run. A line about a run logged elsewhere passes
``extra=ids(run)``. ``tether.telemetry.logs`` writes the ids on every line.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from tether.core.run import Run

#: The log record attributes that name a run and its session.
RUN_ID = "run_id"
SESSION_ID = "session_id"

_current: ContextVar[dict[str, str] | None] = ContextVar("tether_log_run", default=None)


def ids(run: Run) -> dict[str, str]:
    """The ids of run, as log record attributes (``extra=``)."""
    return {RUN_ID: run.id, SESSION_ID: run.session_id}


@contextmanager
def about(run: Run) -> Iterator[None]:
    """Lines logged inside the block (and in tasks it starts) are about run."""
    token = _current.set(ids(run))
    try:
        yield
    finally:
        _current.reset(token)


def current() -> dict[str, str] | None:
    """The ids of the run the code logging now works for, if any."""
    return _current.get()
