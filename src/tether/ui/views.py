"""What each page shows, read through the owner's Service: pages of lists, never whole tables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tether.core.event import EventType
from tether.core.run import Run
from tether.core.status import RUN_UNFINISHED, RunStatus, SessionStatus, StepStatus
from tether.core.step import Step
from tether.runtime import assistants, limits
from tether.runtime.service import Service
from tether.ui import charts
from tether.ui.format import duration

SESSIONS_PER_PAGE = 25
RUNS_PER_PAGE = 50
#: The creation-time filters of the runs page.
PERIODS = {
    "1h": timedelta(hours=1),
    "24h": timedelta(days=1),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
}
RUNS_SHOWN = 100
MESSAGES_SHOWN = 200
TOOL_CALLS_SHOWN = 100
USER_MEMORY_SHOWN = 100
#: Every event a page listens for on a run's stream (EventSource needs each type by name).
LIVE_EVENTS = sorted(t.value for t in EventType)


def _choice(value: str | None, allowed: list[str]) -> str:
    return value if value in allowed else ""


async def sessions_view(svc: Service, query: Mapping[str, str]) -> dict[str, Any]:
    """One page of the owner's sessions, newest activity first, filtered by status and text."""
    status = _choice(query.get("status"), [s.value for s in SessionStatus])
    text = (query.get("q") or "").strip()
    cursor = query.get("cursor") or None
    found = await svc.list_sessions(
        status=status or None, query=text or None, limit=SESSIONS_PER_PAGE, cursor=cursor
    )
    return {
        "sessions": found.data,
        "next_cursor": found.next_cursor,
        "status_filter": status,
        "q": text,
        "paged": cursor is not None,
        "filtered": bool(status or text),
        "now": svc.clock.now(),
    }


async def session_view(svc: Service, session_id: str, query: Mapping[str, str]) -> dict[str, Any]:
    """The session's header, its runs as a timeline, conversation, memory and tool history."""
    session = await svc.get_session(session_id)
    cursor = query.get("runs") or None
    newest = await svc.list_runs(session_id, limit=RUNS_SHOWN, newest_first=True, cursor=cursor)
    live = await _live(svc, next((r for r in newest.data if r.status in RUN_UNFINISHED), None))
    if live is not None:  # read again: the page then shows every change up to live["after"]
        newest = await svc.list_runs(session_id, limit=RUNS_SHOWN, newest_first=True, cursor=cursor)
    runs = list(reversed(newest.data))
    messages = await svc.list_messages(
        session_id, limit=MESSAGES_SHOWN, cursor=query.get("messages") or None
    )
    run_ids = {run.id for run in runs}
    tool = (query.get("tool") or "").strip()
    run_filter = _choice(query.get("run"), sorted(run_ids))
    outcome = _choice(query.get("outcome"), [s.value for s in StepStatus])
    tools = await svc.list_tool_calls(
        session_id=session_id,
        tool=tool or None,
        run_id=run_filter or None,
        status=outcome or None,
        limit=TOOL_CALLS_SHOWN,
        cursor=query.get("tools") or None,
    )
    return {
        "session": session,
        "runs": runs,
        "older_runs": newest.next_cursor,
        "run_seq": {run.id: run.seq for run in runs},
        "messages": messages.data,
        "more_messages": messages.next_cursor,
        "session_memory": await svc.list_session_memory(session_id),
        "user_memory": await svc.list_user_memory(namespace=None, limit=USER_MEMORY_SHOWN),
        "app_memory": [] if session.app is None else await svc.list_app_memory(session.app),
        "tool_calls": tools.data,
        "more_tool_calls": tools.next_cursor,
        "tool_filter": {"tool": tool, "run": run_filter, "outcome": outcome},
        "outcomes": [s.value for s in StepStatus],
        "agents": list(svc.agents),
        "unroutable": await _unroutable(svc, runs),
        "live": live,
        "now": svc.clock.now(),
    }


@dataclass(frozen=True, slots=True)
class Bar:
    """A step in the waterfall: where its bar starts and how long it is, in 1/1000 of the span."""

    step: Step
    offset: float
    width: float


#: A run page shows this many first and last steps; the API pages through all of them.
SHOWN_HEAD, SHOWN_TAIL = 200, 300


def waterfall(run: Run, steps: list[Step], now: datetime) -> tuple[list[Bar], float]:
    """Bars for the steps over the run's span (open steps reach now); the span in seconds."""
    if not steps:
        return [], 0.0
    start = min([s.started_at for s in steps] + ([run.started_at] if run.started_at else []))
    ends = [s.ended_at or now for s in steps]
    end = max([*ends, run.ended_at or (start if run.is_terminal else now)])
    span = max((end - start).total_seconds(), 0.001)
    bars = []
    for step, stop in zip(steps, ends, strict=True):
        offset = (step.started_at - start).total_seconds() / span * 1000
        width = max((stop - step.started_at).total_seconds() / span * 1000, 4.0)
        bars.append(Bar(step, round(min(offset, 996.0), 1), round(min(width, 1000 - offset), 1)))
    return bars, span


async def run_view(svc: Service, run_id: str) -> dict[str, Any]:
    """The run's header, steps as a waterfall, working memory, error and usage."""
    run = await svc.get_run(run_id)
    live = await _live(svc, None if run.is_terminal else run)
    run = await svc.get_run(run_id)  # read again: the page then shows every event up to "after"
    session = await svc.get_session(run.session_id)
    steps = await svc.list_steps(run_id)
    now = svc.clock.now()
    bars, span = waterfall(run, steps, now)
    hidden = max(0, len(bars) - SHOWN_HEAD - SHOWN_TAIL)
    if hidden:  # a page stays readable (and small) however many steps a run records
        bars = bars[:SHOWN_HEAD] + bars[-SHOWN_TAIL:]
    in_session = {
        item.key
        for item in await svc.list_session_memory(session.id)
        if item.source_run_id == run.id
    }
    error_step = None
    if run.error is not None and run.error.step_id is not None:
        error_step = next((s for s in steps if s.id == run.error.step_id), None)
    return {
        "run": run,
        "session": session,
        "bars": bars,
        "step_count": len(steps),
        "hidden_steps": hidden,
        "span": span,
        "error_step": error_step,
        "memory": await svc.list_run_memory(run_id),
        "promoted": in_session,
        "unroutable": await _unroutable(svc, [run]),
        "live": None if run.is_terminal else live,
        "webhooks": await _webhook_attempts(svc, run) if run.is_terminal else [],
        "now": now,
    }


async def _webhook_attempts(svc: Service, run: Run) -> list[dict[str, Any]]:
    """The attempts to deliver the run's webhook (its run.webhook events), oldest first."""
    found: list[dict[str, Any]] = []
    after = 0
    while True:
        events = await svc.list_events(run_id=run.id, after_id=after, limit=1000)
        found += [{**e.data, "at": e.created_at} for e in events if e.type == EventType.RUN_WEBHOOK]
        if len(events) < 1000:
            return found
        after = events[-1].id


async def runs_view(svc: Service, query: Mapping[str, str]) -> dict[str, Any]:
    """One page of the owner's runs across sessions, newest first, filtered by status, agent,
    creation time, text, and stuck (ready with no running worker for its agent)."""
    status = _choice(query.get("status"), [s.value for s in RunStatus])
    agent = (query.get("agent") or "").strip()
    period = _choice(query.get("period"), list(PERIODS))
    text = (query.get("q") or "").strip()
    stuck = query.get("stuck") == "1"
    cursor = query.get("cursor") or None
    now = svc.clock.now()
    found = await svc.list_all_runs(
        status=status or None,
        agent=agent or None,
        since=now - PERIODS[period] if period else None,
        query=text or None,
        stuck=stuck,
        limit=RUNS_PER_PAGE,
        cursor=cursor,
    )
    filters = {"status": status, "agent": agent, "period": period, "q": text}
    if stuck:
        filters["stuck"] = "1"
    return {
        "runs": found.data,
        "next_cursor": found.next_cursor,
        "filters": filters,
        "statuses": [s.value for s in RunStatus],
        "periods": list(PERIODS),
        "agents": sorted(set(svc.agents) | {agent} - {""}),
        "unroutable": await _unroutable(svc, found.data),
        "paged": cursor is not None,
        "filtered": bool(status or agent or period or text or stuck),
        "now": now,
    }


#: Schedules on one page of the UI.
SCHEDULES_PER_PAGE = 50


async def schedules_view(svc: Service, query: Mapping[str, str]) -> dict[str, Any]:
    """One page of the owner's schedules, oldest first."""
    cursor = query.get("cursor") or None
    found = await svc.list_schedules(limit=SCHEDULES_PER_PAGE, cursor=cursor)
    return {
        "schedules": found.data,
        "next_cursor": found.next_cursor,
        "paged": cursor is not None,
    }


#: The overview's periods, in hours.
OVERVIEW_PERIODS = {"24h": 24, "7d": 7 * 24}


async def assistants_view(svc: Service) -> dict[str, Any]:
    """The owner's assistants, oldest first, and the registered agents with their
    descriptions."""
    return {
        "assistants": await assistants.list_all(svc),
        "agents": [(name, svc.agents.describe(name)) for name in sorted(svc.agents)],
    }


async def overview_view(svc: Service, query: Mapping[str, str]) -> dict[str, Any]:
    """The owner's runs of the last 24 h or 7 d as charts, each with its numbers."""
    period = _choice(query.get("period"), list(OVERVIEW_PERIODS)) or "24h"
    stats = await svc.run_stats(hours=OVERVIEW_PERIODS[period])
    columns, totals, top = charts.runs_per_hour(stats)
    durations = [
        row
        for d in stats.durations
        for row in (
            charts.Row(f"{d.agent} p50", d.p50_seconds, duration(d.p50_seconds), "bar-p50"),
            charts.Row(f"{d.agent} p95", d.p95_seconds, duration(d.p95_seconds), "bar-p95"),
        )
    ]
    tokens = [
        charts.Row(f"{t.day:%d %b} {t.model}", t.total_tokens, f"{t.total_tokens:,} tokens")
        for t in stats.tokens
    ]
    tools = [
        charts.Row(f.tool, f.failed, f"{f.failed} of {f.calls} failed", "bar-bad")
        for f in stats.failing_tools
    ]
    return {
        "period": period,
        "periods": list(OVERVIEW_PERIODS),
        "stats": stats,
        "columns": columns,
        "totals": totals,
        "top": top,
        "total_runs": sum(totals.values()),
        "duration_bars": charts.bars(durations),
        "token_bars": charts.bars(tokens),
        "tool_bars": charts.bars(tools),
        "chart": {
            "width": charts.WIDTH,
            "column": charts.COLUMN_HEIGHT,
            "bar_width": charts.BAR_WIDTH,
            "row": charts.ROW_HEIGHT,
        },
        "now": svc.clock.now(),
    }


async def _unroutable(svc: Service, runs: list[Run]) -> set[str]:
    """Ids of the ready runs among runs whose agent no running worker has."""
    ready = [r for r in runs if r.status is RunStatus.READY]
    if not ready:
        return set()
    live = await svc.live_agents()
    return {r.id for r in ready if r.agent not in live}


async def _live(svc: Service, run: Run | None) -> dict[str, Any] | None:
    """The stream a page follows while run is unfinished: its URL and the id of the last event
    so far (read before the page's state, so the page misses no change)."""
    if run is None:
        return None
    last = 0
    while True:
        events = await svc.list_events(run_id=run.id, after_id=last, limit=limits.MAX_PAGE)
        if events:
            last = events[-1].id
        if len(events) < limits.MAX_PAGE:
            break
    return {"url": f"/ui/runs/{run.id}/events", "after": last, "events": LIVE_EVENTS}
