"""Durations on the command line: ``90`` or ``90s``, ``15m``, ``1h``, ``1d``, ``2w``; and the
``--since``/``--until`` times they make (a duration ago, or an ISO 8601 time)."""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta

import typer

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
#: Long enough for any retention or grace period, short enough for datetime arithmetic.
_MAX_SECONDS = 100 * 366 * 86400


def seconds(text: str, *, option: str) -> float:
    """The seconds text says; typer.BadParameter naming option for anything else."""
    match = _DURATION.match(text)
    value = float(match[1]) * _UNITS[match[2].lower() or "s"] if match else math.nan
    if not 0 <= value <= _MAX_SECONDS:
        raise typer.BadParameter(
            f"{text!r} is no duration: write e.g. 90s, 15m, 1h, 1d or 2w", param_hint=option
        )
    return value


def moment(text: str, *, option: str, now: datetime) -> datetime:
    """A time: a duration before now (``1d``), or an ISO 8601 time (UTC when it names no
    zone)."""
    if _DURATION.match(text):
        return now - timedelta(seconds=seconds(text, option=option))
    try:
        found = datetime.fromisoformat(text.strip())
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is neither a duration (1h, 1d …) nor an ISO 8601 time", param_hint=option
        ) from None
    return found if found.utcoffset() is not None else found.replace(tzinfo=now.tzinfo)


def grace(text: str, *, option: str) -> float | None:
    """A grace period: a duration, or ``never`` (None)."""
    if text.strip().lower() == "never":
        return None
    return seconds(text, option=option)
