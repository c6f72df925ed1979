"""Five-field cron expressions (minute hour day-of-month month day-of-week) in a time zone.

Each field is ``*``, a number, a range ``a-b``, a step ``*/n`` or ``a-b/n`` or ``a/n``, or a
comma-separated list of those; months and weekdays may be named (``jan``, ``mon``), and weekday
7 is Sunday like 0. When both day fields are restricted, a day matches either (as in Vixie
cron). Times are wall-clock times of the zone: a time the zone skips (the hour lost when
daylight saving time starts) does not happen, and a time it repeats (the hour when it ends)
happens once, at its first occurrence.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import TYPE_CHECKING

from tether.core.errors import UsageError

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")

#: (name, lowest, highest, names) of each field, in order.
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {n: i + 1 for i, n in enumerate(_MONTHS)}),
    ("day of week", 0, 7, {n: i for i, n in enumerate(_DAYS)}),
)

#: How far ahead a next time is looked for (a 29 February on a given weekday comes back
#: within 28 years).
_HORIZON_DAYS = 366 * 29


@dataclass(frozen=True, slots=True)
class Cron:
    """A parsed cron expression: the values each field allows."""

    expression: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: tuple[int, ...]
    months: tuple[int, ...]
    #: 0 = Sunday … 6 = Saturday.
    weekdays: tuple[int, ...]
    #: The day-of-month field is not ``*``.
    days_restricted: bool
    #: The day-of-week field is not ``*``.
    weekdays_restricted: bool

    def day_matches(self, day: date) -> bool:
        """True when the expression allows this calendar day."""
        if day.month not in self.months:
            return False
        by_day = day.day in self.days
        by_weekday = (day.weekday() + 1) % 7 in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return by_day or by_weekday
        return by_day and by_weekday

    def matches(self, local: datetime) -> bool:
        """True when the wall-clock time (its minute) is one the expression names."""
        return (
            local.minute in self.minutes
            and local.hour in self.hours
            and self.day_matches(local.date())
        )

    def next_after(self, after: datetime, zone: tzinfo) -> datetime | None:
        """The first time strictly after ``after`` (aware) the expression names in ``zone``,
        in UTC; None when there is none within about 29 years."""
        start = after.astimezone(zone).replace(tzinfo=None, second=0, microsecond=0)
        start += timedelta(minutes=1)
        day = start.date()
        for _ in range(_HORIZON_DAYS):
            if self.day_matches(day):
                found = self._first_in_day(day, start, zone, after)
                if found is not None:
                    return found
            day += timedelta(days=1)
        return None

    def _first_in_day(
        self, day: date, start: datetime, zone: tzinfo, after: datetime
    ) -> datetime | None:
        for hour in self.hours:
            for minute in self.minutes:
                wall = datetime.combine(day, time(hour, minute))
                if wall < start:
                    continue
                found = _instant(wall, zone)
                if found is not None and found > after:
                    return found
        return None


def _instant(wall: datetime, zone: tzinfo) -> datetime | None:
    """The UTC instant of a wall-clock time (its first occurrence), or None when the zone
    skips it."""
    instant = wall.replace(tzinfo=zone).astimezone(UTC)
    if instant.astimezone(zone).replace(tzinfo=None) != wall:
        return None
    return instant


def parse(expression: str) -> Cron:
    """The cron expression, or UsageError saying which field is wrong."""
    if not isinstance(expression, str):
        raise UsageError("schedule must be a cron expression (5 fields)")
    parts = expression.split()
    if len(parts) != 5:
        raise UsageError(
            f"schedule {expression!r} must have 5 fields: minute hour day-of-month month "
            "day-of-week"
        )
    values = [_field(part, *spec) for part, spec in zip(parts, _FIELDS, strict=True)]
    weekdays = tuple(sorted({d % 7 for d in values[4]}))
    return Cron(
        expression=" ".join(parts),
        minutes=tuple(sorted(values[0])),
        hours=tuple(sorted(values[1])),
        days=tuple(sorted(values[2])),
        months=tuple(sorted(values[3])),
        weekdays=weekdays,
        days_restricted=parts[2] != "*",
        weekdays_restricted=parts[4] != "*",
    )


def _field(text: str, name: str, low: int, high: int, names: dict[str, int]) -> set[int]:
    allowed: set[int] = set()
    for item in text.split(","):
        allowed |= _item(item, name, low, high, names)
    return allowed


def _item(item: str, name: str, low: int, high: int, names: dict[str, int]) -> set[int]:
    span, _, step_text = item.partition("/")
    step = 1
    if step_text:
        step = _number(step_text, name, 1, high - low + 1, {})
    if span == "*":
        first, last = low, high
    elif "-" in span:
        a, _, b = span.partition("-")
        first, last = _number(a, name, low, high, names), _number(b, name, low, high, names)
        if first > last:
            raise UsageError(f"{name}: range {span!r} goes backwards")
    else:
        first = _number(span, name, low, high, names)
        last = high if step_text else first
    return set(range(first, last + 1, step))


def _number(text: str, name: str, low: int, high: int, names: dict[str, int]) -> int:
    lowered = text.lower()
    if lowered in names:
        return names[lowered]
    if not text.isascii() or not text.isdigit():
        raise UsageError(f"{name}: {text!r} is not a number from {low} to {high}")
    value = int(text)
    if not low <= value <= high:
        raise UsageError(f"{name}: {value} is not from {low} to {high}")
    return value


def zone(name: str | None) -> ZoneInfo:
    """The IANA time zone (None: UTC), or UsageError."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # here: a Service's import needs none

    if name is None or name == "":
        return ZoneInfo("UTC")
    if not isinstance(name, str) or len(name) > 64 or ".." in name or name.startswith("/"):
        raise UsageError(f"timezone {name!r} is not an IANA time zone name")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"timezone {name!r} is not an IANA time zone name") from None
