"""Driving sessions and runs from the shell: ``sessions create``, ``runs create``, ``messages
add``, and what ``runs resume`` and ``runs show`` say besides the record."""

from __future__ import annotations

import json as json_module
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tether.cli import render
from tether.cli.app import (
    JsonOption,
    KeyOption,
    Target,
    console,
    data_of,
    err_console,
    fail,
    find_session,
    handles_errors,
    print_json,
    with_target,
)
from tether.core.errors import NotFound
from tether.core.run import IfBusy  # a parameter's type: Typer reads it
from tether.core.serde import to_data

if TYPE_CHECKING:
    from tether.core.run import Run
    from tether.runtime.facade import Tether
    from tether.runtime.handles import RunHandle

SessionArgument = Annotated[str, typer.Argument(help="The session's id (or its key, with --key).")]


def json_object(option: str, text: str | None) -> dict[str, Any] | None:
    """The JSON object an option holds (``--input '{"text": "hi"}'``), or a usage error."""
    if text is None:
        return None
    try:
        value = json_module.loads(text)
    except ValueError as exc:
        raise typer.BadParameter(f"not JSON: {exc}", param_hint=option) from exc
    if not isinstance(value, dict):
        raise typer.BadParameter("must be a JSON object ({…})", param_hint=option)
    return value


def find_run(tt: Tether, run_id: str) -> RunHandle:
    """The run run_id names; when it names a session instead, the error says so."""
    try:
        return tt.runs.get(run_id)
    except NotFound as missing:
        try:
            tt.sessions.get(run_id)
        except NotFound:
            raise missing from None
        raise NotFound(
            "run",
            run_id,
            hint=f"it is a session's id (`tether sessions show {run_id}` shows the session, "
            f"`tether runs list {run_id}` its runs)",
        ) from None


def worker_hint(run: Run) -> str:
    """Who must be running for a run nobody holds yet to go on."""
    return (
        f"it goes on when a worker that has agent {run.agent!r} takes it: `tether serve` or "
        f"`tether worker` on the same database (with `--agents MODULE` for your own agents)"
    )


def print_run(run: Run, json: bool) -> None:
    """A run just created or resumed: its record (--json), or its status and what comes next."""
    if json:
        print_json(to_data(run))
        return
    console.print(f"run {run.id} is", render.status(run.status.value))
    if run.worker_id is None and run.status.value in ("ready", "running"):
        console.print(f"[dim]{worker_hint(run)}[/]", highlight=False)


@handles_errors
@with_target
def sessions_create(
    target: Target,
    title: Annotated[str | None, typer.Option(help="A title for people.")] = None,
    project: Annotated[
        str | None,
        typer.Option(help='What it works on, a JSON object (e.g. {"workspace": "./calc"}).'),
    ] = None,
    context: Annotated[
        str | None, typer.Option(hidden=True, help="Deprecated name of --project.")
    ] = None,
    metadata: Annotated[str | None, typer.Option(help="Metadata, a JSON object.")] = None,
    ttl_seconds: Annotated[
        int | None, typer.Option(min=1, help="Expire after this long without activity.")
    ] = None,
    external_key: Annotated[
        str | None, typer.Option("--external-key", help="Your own name for it (unique).")
    ] = None,
    app_name: Annotated[str | None, typer.Option("--app", help="The app it belongs to.")] = None,
    json: JsonOption = False,
) -> None:
    """Open a session (a long conversation); prints its id."""
    fields: dict[str, Any] = {} if ttl_seconds is None else {"ttl_seconds": ttl_seconds}
    if context is not None:
        if project is not None:
            fail("give --project only (--context is its deprecated name)")
        err_console.print("[yellow]warning:[/] --context is deprecated: use --project")
        project = context
    with target.open() as tt:
        session = tt.sessions.create(
            title=title,
            project=json_object("--project", project),
            metadata=json_object("--metadata", metadata),
            external_key=external_key,
            app=app_name,
            **fields,
        )
        if json:
            print_json(data_of(session))
        else:
            console.print(f"session {session.id} is", render.status(session.status.value))


@handles_errors
@with_target
def runs_create(
    target: Target,
    session: SessionArgument,
    goal: Annotated[str, typer.Argument(help="What the run is to do.")],
    key: KeyOption = False,
    agent: Annotated[
        str | None,
        typer.Option(help="The agent that executes it (default: echo, which repeats the goal)."),
    ] = None,
    input: Annotated[str | None, typer.Option(help="The run's input, a JSON object.")] = None,
    if_busy: Annotated[
        IfBusy, typer.Option(help="When another run of the session is unfinished.")
    ] = IfBusy.REJECT,
    json: JsonOption = False,
) -> None:
    """Start a run in a session; it is ready until a worker takes it."""
    with target.open() as tt:
        handle = find_session(tt, session, key)
        run = handle.runs.create(
            goal, agent=agent, input=json_object("--input", input), if_busy=if_busy
        )
        print_run(run, json)


@handles_errors
@with_target
def messages_add(
    target: Target,
    session: SessionArgument,
    content: Annotated[str, typer.Argument(help="The message's text.")],
    key: KeyOption = False,
    role: Annotated[str, typer.Option(help="user, assistant, system or tool.")] = "user",
    json: JsonOption = False,
) -> None:
    """Add a message to a session's conversation."""
    with target.open() as tt:
        message = find_session(tt, session, key).messages.add(role, content)
        if json:
            print_json(to_data(message))
        else:
            console.print(f"message {message.seq} added ({message.role.value})")
