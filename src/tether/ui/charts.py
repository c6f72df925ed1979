"""The overview's charts as geometry for inline SVG (drawn by overview.html): no script, no
library; every chart also has its numbers in a table beside it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from tether.core.stats import RunStats
from tether.core.status import RunStatus

#: Width and height of the runs-per-hour chart's viewBox (stretched to its card: no text).
WIDTH, COLUMN_HEIGHT = 1000, 240
#: Width of a bar chart's viewBox and height of one of its rows (a label over a bar): scaled
#: evenly, so that its labels stay readable on a phone.
BAR_WIDTH, ROW_HEIGHT = 600, 56
#: Stacking order of the statuses, finished first.
STATUSES = [
    RunStatus.COMPLETED,
    RunStatus.FAILED,
    RunStatus.TIMED_OUT,
    RunStatus.CANCELLED,
    RunStatus.WAITING,
    RunStatus.RUNNING,
    RunStatus.READY,
]


@dataclass(frozen=True, slots=True)
class Rect:
    """One bar (or one part of a stacked bar), with the text its tooltip shows."""

    x: float
    y: float
    width: float
    height: float
    css: str
    title: str


@dataclass(frozen=True, slots=True)
class Row:
    """One labelled value of a horizontal bar chart."""

    label: str
    value: float
    text: str
    css: str = "bar"


def runs_per_hour(stats: RunStats) -> tuple[list[Rect], dict[RunStatus, int], float]:
    """Stacked columns, one per hour of the period; the totals by status; the highest column."""
    hours = round((stats.until - stats.since) / timedelta(hours=1))
    columns: dict[datetime, dict[RunStatus, int]] = {}
    totals = dict.fromkeys(STATUSES, 0)
    for slot in stats.by_hour:
        columns.setdefault(slot.start, {})[slot.status] = slot.runs
        totals[slot.status] += slot.runs
    top = max((sum(c.values()) for c in columns.values()), default=0)
    step = WIDTH / hours
    rects = []
    for start, counts in columns.items():
        index = round((start - stats.since) / timedelta(hours=1))
        y = float(COLUMN_HEIGHT)
        for status in STATUSES:
            n = counts.get(status, 0)
            if n:
                height = n / top * COLUMN_HEIGHT
                y -= height
                when = start.strftime("%d %b %H:00 UTC")
                rects.append(
                    Rect(
                        round(index * step + step * 0.1, 2),
                        round(y, 2),
                        round(step * 0.8, 2),
                        round(height, 2),
                        f"s-{status.value}",
                        f"{when}: {n} {status.value.replace('_', ' ')}",
                    )
                )
    return rects, {s: n for s, n in totals.items() if n}, top


def bars(rows: Sequence[Row]) -> list[Rect]:
    """Horizontal bars, one row each, scaled to the largest value; the title is the label
    drawn above the bar."""
    top = max((r.value for r in rows), default=0) or 1
    return [
        Rect(
            0,
            i * ROW_HEIGHT + 28,
            round(max(r.value / top * BAR_WIDTH, 2), 2),
            20,
            r.css,
            f"{r.label}: {r.text}",
        )
        for i, r in enumerate(rows)
    ]
