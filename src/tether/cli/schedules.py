"""``tether schedules``: create, list, show, pause, resume and delete schedules, on a database
or a server (--url)."""

from __future__ import annotations

import json as jsonlib
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from tether.cli import render
from tether.cli.app import JsonOption, Target, console, handles_errors, print_json, with_target
from tether.cli.render import add_columns
from tether.core.errors import UsageError
from tether.core.serde import to_data

if TYPE_CHECKING:
    from tether.core.schedule import Schedule

schedules_app = typer.Typer(
    help="Schedules: runs created on a cron expression.", no_args_is_help=True
)

IdArgument = Annotated[str, typer.Argument(help="The schedule's id.")]


def _object(name: str, text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = jsonlib.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise UsageError(f"--{name} must be a JSON object")
    return value


def _moment(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise UsageError(f"--end-at {text!r} must be an ISO 8601 time with an offset")
    return moment


def _print(schedule: Schedule, json: bool) -> None:
    if json:
        print_json(to_data(schedule))
        return
    state = "enabled" if schedule.enabled else "paused"
    console.print(
        f"schedule {schedule.id}: {schedule.cron!r} ({schedule.timezone}), agent "
        f"{render.clean(schedule.agent)}, {state}, next run {render.when(schedule.next_run_at)}",
        highlight=False,
        markup=False,
    )


@schedules_app.command("create")
@handles_errors
@with_target
def schedules_create(
    target: Target,
    cron: Annotated[str, typer.Argument(help='Five fields, e.g. "0 9 * * mon-fri".')],
    agent: Annotated[str | None, typer.Option(help="Default: echo.")] = None,
    goal: Annotated[str | None, typer.Option(help="Each run's goal.")] = None,
    input: Annotated[str | None, typer.Option(help="Each run's input (a JSON object).")] = None,
    session: Annotated[
        str | None, typer.Option(help="Create the runs in this session (default: a new one each).")
    ] = None,
    timezone: Annotated[str | None, typer.Option(help="IANA time zone (default UTC).")] = None,
    metadata: Annotated[str | None, typer.Option(help="Each run's metadata (JSON).")] = None,
    end_at: Annotated[str | None, typer.Option(help="No run at or after this time.")] = None,
    paused: Annotated[bool, typer.Option(help="Create it paused.")] = False,
    json: JsonOption = False,
) -> None:
    """Create a schedule."""
    with target.open() as tt:
        made = tt.schedules.create(
            cron,
            agent=agent,
            goal=goal,
            input=_object("input", input),
            session_id=session,
            timezone=timezone,
            metadata=_object("metadata", metadata),
            end_at=_moment(end_at),
            enabled=not paused,
        )
        _print(made, json)


@schedules_app.command("list")
@handles_errors
@with_target
def schedules_list(
    target: Target,
    json: JsonOption = False,
    session: Annotated[str | None, typer.Option(help="Only this session's.")] = None,
    agent: Annotated[str | None, typer.Option(help="Only this agent's.")] = None,
) -> None:
    """List schedules, oldest first."""
    with target.open() as tt:
        found = tt.schedules.list(session_id=session, agent=agent, limit=None)
    if json:
        print_json({"data": to_data(found)})
        return
    table = Table(title="Schedules", title_justify="left")
    add_columns(table, "id", "cron", "timezone", "agent", "session", "state", "next run")
    for s in found:
        table.add_row(
            s.id,
            s.cron,
            s.timezone,
            render.plain(s.agent),
            s.session_id or "new each time",
            "enabled" if s.enabled else "paused",
            render.when(s.next_run_at),
        )
    console.print(table)


@schedules_app.command("show")
@handles_errors
@with_target
def schedules_show(target: Target, schedule: IdArgument, json: JsonOption = False) -> None:
    """Show a schedule."""
    with target.open() as tt:
        found = tt.schedules.get(schedule)
    if json:
        _print(found, json)
        return
    _print(found, False)
    console.print(
        f"goal: {render.clean(found.goal or '(from the input)')}\n"
        f"input: {jsonlib.dumps(found.input)}\nlast run: {found.last_run_id or '—'}",
        highlight=False,
        markup=False,
    )


@schedules_app.command("pause")
@handles_errors
@with_target
def schedules_pause(target: Target, schedule: IdArgument, json: JsonOption = False) -> None:
    """Pause a schedule: its ticks pass without runs."""
    with target.open() as tt:
        _print(tt.schedules.update(schedule, enabled=False), json)


@schedules_app.command("resume")
@handles_errors
@with_target
def schedules_resume(target: Target, schedule: IdArgument, json: JsonOption = False) -> None:
    """Resume a schedule from its next tick (the ticks it missed while paused do not fire)."""
    with target.open() as tt:
        _print(tt.schedules.update(schedule, enabled=True), json)


@schedules_app.command("delete")
@handles_errors
@with_target
def schedules_delete(target: Target, schedule: IdArgument) -> None:
    """Delete a schedule (the runs it created stay)."""
    with target.open() as tt:
        tt.schedules.delete(schedule)
    console.print(f"schedule {schedule} is deleted", highlight=False)
