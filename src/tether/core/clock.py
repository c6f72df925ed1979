"""The only source of "now" in tether; tests inject a manual clock."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol, overload, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Tells the current time as an aware UTC datetime."""

    def now(self) -> datetime: ...


class SystemClock:
    """The wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that moves only when told to; for tests and simulations."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        """Move time forward and return the new now."""
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now


@overload
def to_iso(moment: datetime) -> str: ...


@overload
def to_iso(moment: datetime | None) -> str | None: ...


def to_iso(moment: datetime | None) -> str | None:
    """ISO 8601 UTC with a Z suffix, or None."""
    if moment is None:
        return None
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    return moment.isoformat().replace("+00:00", "Z")


def from_iso(text: str | None) -> datetime | None:
    """Parse what to_iso wrote (or any ISO 8601 string) into an aware UTC datetime."""
    if text is None:
        return None
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
