"""The ``tether`` command line."""

from __future__ import annotations

import copy
import importlib
import json as json_module
import math
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from typer.main import get_command_name
from typer.models import CommandInfo, TyperInfo

from tether.cli import drive, durations, render
from tether.cli.app import (
    DEFAULT_OWNER,
    DbOption,
    DurabilityOption,
    JsonOption,
    KeyOption,
    Target,
    UnroutableAfterOption,
    console,
    data_of,
    err_console,
    find_session,
    finite,
    handles_errors,
    open_db,
    print_json,
    with_target,
)
from tether.cli.graphs import GraphOption, LangGraphConfigOption, register_graphs
from tether.cli.observe import LogFormatOption, MetricsTokenOption, OtelOption, start_observing
from tether.cli.redaction import RedactOption, RedactPatternOption, redactor
from tether.cli.report import run_report, session_report
from tether.cli.roots import WorkspaceRootOption, workspace_roots
from tether.cli.webhooks import WebhookAllowOption, webhook_allow, webhooks_app
from tether.core.serde import to_data
from tether.runtime.settings import RuntimeSettings
from tether.store.factory import DEFAULT_DB, check_durability, redact_url

if TYPE_CHECKING:
    from tether.core.run import Run
    from tether.core.session import Session


class _Elsewhere(CommandInfo):
    """A command of another module, where it stands among its group's commands: the module
    loads when a command line names it (or needs them all: the group's help, a mistake)."""

    def __init__(self, name: str, where: str) -> None:
        super().__init__(name=name)
        self.where = where

    def load(self) -> CommandInfo:
        scratch = typer.Typer()
        scratch.command(self.name)(_imported(self.where))
        return scratch.registered_commands[0]


class _GroupElsewhere(TyperInfo):
    """A group of another module, where it stands among the groups (loaded as _Elsewhere is)."""

    def __init__(self, name: str, where: str) -> None:
        super().__init__(name=name)
        self.where = where

    def load(self) -> TyperInfo:
        scratch = typer.Typer()
        scratch.add_typer(_imported(self.where), name=self.name)
        return scratch.registered_groups[0]


def _imported(where: str) -> Any:
    module, name = where.split(":")
    return getattr(importlib.import_module(module), name)


#: The whole command line as a program outside this module sees it: ``app`` (module
#: __getattr__) is this with every command of another module loaded.
_app = typer.Typer(
    name="tether",
    help="tether: durable Sessions and Runs for AI agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
sessions_app = typer.Typer(help="Sessions: the long conversations.", no_args_is_help=True)
runs_app = typer.Typer(help="Runs: one task inside a session.", no_args_is_help=True)
messages_app = typer.Typer(help="Messages: a session's conversation.", no_args_is_help=True)
db_app = typer.Typer(help="The database.", no_args_is_help=True)
_app.add_typer(sessions_app, name="sessions")
_app.add_typer(runs_app, name="runs")
_app.add_typer(messages_app, name="messages")
_app.add_typer(db_app, name="db")
_app.registered_groups += [
    _GroupElsewhere("keys", "tether.cli.keys:keys_app"),
    _GroupElsewhere("schedules", "tether.cli.schedules:schedules_app"),
]
_app.add_typer(webhooks_app, name="webhooks")
_app.registered_groups.append(_GroupElsewhere("owners", "tether.cli.retention:owners_app"))
sessions_app.registered_commands += [
    _Elsewhere("export", "tether.cli.retention:sessions_export"),
    _Elsewhere("import", "tether.cli.retention:sessions_import"),
]
db_app.registered_commands.append(_Elsewhere("prune", "tether.cli.retention:db_prune"))
_app.registered_commands += [
    _Elsewhere("serve", "tether.cli.serve:serve"),
    _Elsewhere("tail", "tether.cli.tail:tail"),
]
sessions_app.command("create")(drive.sessions_create)
runs_app.command("create")(drive.runs_create)
messages_app.command("add")(drive.messages_add)
#: The defaults of ``tether worker``'s options.
_RUNTIME = RuntimeSettings()


def _print_version(wanted: bool) -> None:
    if wanted:
        from tether.version import __version__

        sys.stdout.write(f"tether {__version__}\n")
        raise typer.Exit()


@_app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """tether: durable Sessions and Runs for AI agents."""


@_app.command()
@handles_errors
def demo(
    db: DbOption = DEFAULT_DB,
    json: JsonOption = False,
    workspace: Annotated[
        Path | None,
        typer.Option(help="Copy the demo project here instead of a new temporary folder."),
    ] = None,
) -> None:
    """Play the seed scenario: one session, runs that analyse, fix and verify a real project
    (a temporary copy, removed at the end, unless --workspace keeps it)."""
    import shutil
    import tempfile

    from tether.demo.scenario import copy_project

    if workspace is not None and workspace.exists():
        raise typer.BadParameter(f"{workspace} already exists", param_hint="--workspace")
    # The demo's runs may use its own copy only: the root they are confined to is the copy
    # given with --workspace, or a temporary folder holding it in the demo owner's folder
    # (ROOT/OWNER/calc), where a database with API keys wants an owner's workspaces.
    temp = None if workspace is not None else Path(tempfile.mkdtemp(prefix="tether-demo-"))
    project = copy_project(workspace if temp is None else temp / DEFAULT_OWNER / "calc")
    try:
        _play_demo(db, project, root=temp or project, kept=temp is None, json=json)
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


def _play_demo(db: str, project: Path, *, root: Path, kept: bool, json: bool) -> None:
    from tether.demo.scenario import play

    shown = redact_url(db)  # a PostgreSQL password is never printed
    allowed = RuntimeSettings(workspace_roots=(str(root),))
    with open_db(db, create=True, worker=True, settings=allowed) as tt:
        if not json:
            where = "" if kept else " (a temporary copy, removed at the end; --workspace keeps it)"
            console.print(f"[dim]project copied to {project}{where}; database {shown}[/]")

        def progress(number: int, run: Run) -> None:
            if not json:
                console.print(
                    f"  Run {number} ",
                    render.status(run.status.value),
                    f" {run.goal}",
                    style="bold",
                )

        result = play(tt, project, on_run=progress)
        report = session_report(tt, result.session.id)
        if json:
            data = report.to_data()
            data["workspace"] = str(project)
            data["workspace_kept"] = kept
            data["db"] = shown
            print_json(data)
            return
        console.print()
        render.print_session(console, report, tt.backend.clock.now())
        console.print(
            f"\nThe session is still [bold green]{report.session.status.value}[/]: runs finished, "
            "the conversation goes on. Look again from a new process with\n"
            f"  {_program()} sessions show {report.session.id} --db {shown}\n"
            f"  {_program()} runs show {report.runs[0].run.id} --db {shown}\n"
            f"or in the web UI, as the demo's owner {report.session.owner!r}: "
            f"`{_program()} keys create --owner {report.session.owner} --db {shown}`, then "
            f"`{_program()} serve --db {shown}`, and log in at http://127.0.0.1:8080/ui with "
            f"that key (or `{_program()} serve --no-auth --db {shown}` on this machine alone)"
        )


def _program() -> str:
    """How to call this command again: ``tether`` if that is on PATH, else the path used."""
    import shutil

    used = sys.argv[0]
    if os.path.basename(used) == "tether" and shutil.which("tether") != os.path.abspath(used):
        return used
    return "tether"


@sessions_app.command("list")
@handles_errors
@with_target
def sessions_list(
    target: Target,
    json: JsonOption = False,
    status: Annotated[str | None, typer.Option(help="active, closed or expired")] = None,
    query: Annotated[
        str | None, typer.Option(help="Text in the title, the metadata or the external key.")
    ] = None,
    app_name: Annotated[
        str | None, typer.Option("--app", help="Only sessions of this app.")
    ] = None,
    limit: Annotated[
        int, typer.Option(min=1, max=1000, help="At most this many, newest activity first.")
    ] = 50,
    cursor: Annotated[
        str | None, typer.Option(help="Where the previous page ended (its next_cursor).")
    ] = None,
) -> None:
    """List sessions, newest activity first, a page at a time."""
    with target.open() as tt:
        page = tt.backend.list_sessions(
            status=status, query=query, app=app_name, limit=limit, cursor=cursor
        )
        if json:
            print_json({"data": data_of(page.data), "next_cursor": page.next_cursor})
            return
        console.print(render.sessions_table(page.data, tt.backend.clock.now()))
        if page.next_cursor is not None:
            console.print(f"[dim]more: --cursor {page.next_cursor}[/]", highlight=False)


@sessions_app.command("show")
@handles_errors
@with_target
def sessions_show(
    target: Target,
    session: Annotated[str, typer.Argument(help="The session's id (or its key, with --key).")],
    key: KeyOption = False,
    json: JsonOption = False,
) -> None:
    """Show a session: its runs with their steps and tool calls, and its memory."""
    with target.open() as tt:
        report = session_report(tt, find_session(tt, session, key).id)
        if json:
            print_json(report.to_data())
        else:
            render.print_session(console, report, tt.backend.clock.now())


@sessions_app.command("close")
@handles_errors
@with_target
def sessions_close(
    target: Target,
    session: Annotated[str, typer.Argument(help="The session's id (or its key, with --key).")],
    key: KeyOption = False,
    json: JsonOption = False,
) -> None:
    """Close a session (its unfinished runs are cancelled); closing twice is harmless."""
    with target.open() as tt:
        _print_outcome("session", find_session(tt, session, key).close(), json)


@sessions_app.command("messages")
@handles_errors
@with_target
def sessions_messages(
    target: Target,
    session: Annotated[str, typer.Argument(help="The session's id (or its key, with --key).")],
    key: KeyOption = False,
    tail: Annotated[
        int, typer.Option(min=1, max=1_000_000, help="How many of the newest messages.")
    ] = 20,
    before: Annotated[
        int | None, typer.Option(min=1, help="Only messages before this seq (the N before it).")
    ] = None,
    everything: Annotated[
        bool, typer.Option("--all", help="The whole conversation instead of its tail.")
    ] = False,
    include_removed: Annotated[
        bool, typer.Option("--include-removed", help="Also popped and cleared messages (--all).")
    ] = False,
    json: JsonOption = False,
) -> None:
    """Show a session's conversation: its newest messages (oldest of them first), or all."""
    if include_removed and not everything:
        raise typer.BadParameter(
            "--include-removed goes with --all", param_hint="--include-removed"
        )
    if everything and before is not None:
        raise typer.BadParameter("--before reads a tail: not with --all", param_hint="--before")
    with target.open() as tt:
        handle = find_session(tt, session, key)
        if everything:
            messages = handle.messages.list(include_removed=include_removed)
        else:
            messages = handle.messages.tail(tail, before=before)
        if json:
            print_json({"data": to_data(messages)})
        else:
            console.print(render.messages_table(messages))


@runs_app.command("list")
@handles_errors
@with_target
def runs_list(
    target: Target,
    session: Annotated[
        str | None,
        typer.Argument(help="A session's id (or its key, with --key); none: every session."),
    ] = None,
    key: KeyOption = False,
    json: JsonOption = False,
    status: Annotated[str | None, typer.Option(help="Only runs with this status.")] = None,
    agent: Annotated[str | None, typer.Option(help="Only runs of this agent.")] = None,
    since: Annotated[
        str | None,
        typer.Option(help="Only runs created since: a duration ago (1h, 1d …) or an ISO time."),
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="Only runs created before: a duration ago or an ISO time.")
    ] = None,
    query: Annotated[
        str | None, typer.Option(help="Text in the goal, agent, input, output or error.")
    ] = None,
    stuck: Annotated[
        bool, typer.Option("--stuck", help="Only ready runs whose agent no running worker has.")
    ] = False,
    limit: Annotated[
        int, typer.Option(min=1, max=100_000, help="At most this many (every session).")
    ] = 100,
) -> None:
    """List the runs of a session (Run 1 first), or of every session (newest first) with
    filters: ``tether runs list --status failed --since 1d``."""
    across = {"--agent": agent, "--since": since, "--until": until, "--query": query}
    if session is not None:
        given = [name for name, value in across.items() if value is not None]
        if stuck:
            given.append("--stuck")
        if given:
            raise typer.BadParameter(
                f"{', '.join(given)} filter runs of every session: leave out SESSION",
                param_hint=given[0],
            )
    now = datetime.now(UTC)
    created_since = None if since is None else durations.moment(since, option="--since", now=now)
    created_until = None if until is None else durations.moment(until, option="--until", now=now)
    with target.open() as tt:
        if session is not None:
            runs = list(find_session(tt, session, key).runs.list(status=status))
            if json:
                print_json({"data": to_data(runs)})
            else:
                console.print(render.runs_table(runs))
            return
        found = list(
            tt.runs.list(
                status=status,
                agent=agent,
                since=created_since,
                until=created_until,
                query=query,
                stuck=stuck,
                limit=limit,
            )
        )
        if json:
            print_json({"data": to_data(found)})
        else:
            console.print(render.all_runs_table(found, live_agents=tt.live_agents()))


@runs_app.command("show")
@handles_errors
@with_target
def runs_show(
    target: Target,
    run_id: str,
    json: JsonOption = False,
) -> None:
    """Show a run: status, times, steps (tool calls with input and output), memory, error."""
    with target.open() as tt:
        report = run_report(tt, drive.find_run(tt, run_id))
        if json:
            print_json(report.to_data())
        else:
            console.print(render.run_tree(report))


@runs_app.command("cancel")
@handles_errors
@with_target
def runs_cancel(
    target: Target,
    run_id: str,
    reason: Annotated[str, typer.Option(help="Why (kept on the run's error).")] = (
        "cancelled from the command line"
    ),
    json: JsonOption = False,
) -> None:
    """Cancel a ready, running or waiting run (its steps so far are kept)."""
    with target.open() as tt:
        _print_outcome("run", drive.find_run(tt, run_id).cancel(reason), json)


@runs_app.command("resume")
@handles_errors
@with_target
def runs_resume(
    target: Target,
    run_id: str,
    input: Annotated[str, typer.Argument(help="What the run asked for (text, or JSON).")],
    json: JsonOption = False,
) -> None:
    """Resume a waiting run with the input it asks for."""
    with target.open() as tt:
        drive.print_run(drive.find_run(tt, run_id).resume(_json_or_text(input)), json)


def _print_outcome(kind: str, record: Session | Run, json: bool) -> None:
    """What an action left: the record (--json), or one line with its status."""
    if json:
        print_json(data_of(record))
    else:
        console.print(f"{kind} {record.id} is", render.status(record.status.value))


def _json_or_text(text: str) -> Any:
    """A JSON value if text is strict JSON (``{"approved": true}``, ``42``), else the text
    itself (``NaN``, ``1e999`` and ``Infinity`` are not JSON: they stay text)."""
    try:
        return json_module.loads(text, parse_constant=_not_json, parse_float=_finite)
    except ValueError:
        return text


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _finite(number: str) -> float:
    value = float(number)
    if not math.isfinite(value):
        raise ValueError(f"{number} is out of range")
    return value


@_app.command()
@handles_errors
def sweep(db: DbOption = DEFAULT_DB, json: JsonOption = False) -> None:
    """Persist the expiry of every session past its TTL (cancelling their unfinished runs)."""
    with open_db(db) as tt:
        swept = tt.sweep_expired()
        if json:
            print_json({"expired": [s.id for s in swept]})
        else:
            console.print(f"{render.plural(len(swept), 'session')} expired")


@db_app.command("migrate")
@handles_errors
def db_migrate(db: DbOption = DEFAULT_DB, json: JsonOption = False) -> None:
    """Create the database or bring it to the newest schema."""
    from tether.store.factory import migrate_store, redact_url

    before, after = migrate_store(db)
    where = redact_url(db)
    if json:
        print_json({"db": where, "from_version": before, "to_version": after})
    elif before == after:
        console.print(f"{where} is at schema version {after}: nothing to do")
    else:
        console.print(f"{where} migrated from schema version {before} to {after}")


@db_app.command("copy")
@handles_errors
def db_copy(
    source: Annotated[
        str, typer.Option("--from", help="The database to copy: a SQLite path or URL.")
    ],
    target: Annotated[str, typer.Option("--to", help="Where to copy it: e.g. postgresql://…")],
    force: Annotated[
        bool, typer.Option("--force", help="Replace the contents of a non-empty target.")
    ] = False,
    batch_size: Annotated[int, typer.Option(help="Rows per round trip.", min=1)] = 1000,
    json: JsonOption = False,
) -> None:
    """Copy everything (sessions, runs, steps, messages, memory, events, API keys) into another
    database, ids preserved, and verify it by per-table counts and checksums."""
    from tether.cli.dbcopy import run_copy

    run_copy(source, target, force=force, batch=batch_size, json=json)


@_app.command()
@handles_errors
def worker(
    db: DbOption = DEFAULT_DB,
    durability: DurabilityOption = "normal",
    concurrency: Annotated[
        int, typer.Option(envvar="TETHER_CONCURRENCY", help="Runs executed at once.", min=1)
    ] = _RUNTIME.concurrency,
    lease_seconds: Annotated[
        float,
        typer.Option(
            help="A run's lease; renewed every third of it.", min=1.0, max=3600, callback=finite
        ),
    ] = _RUNTIME.lease_seconds,
    grace_seconds: Annotated[
        float,
        typer.Option(
            help="On SIGTERM, how long running runs may take before handed back.",
            min=0,
            max=86400,
            callback=finite,
        ),
    ] = _RUNTIME.shutdown_grace,
    agents: Annotated[
        str | None,
        typer.Option(envvar="TETHER_AGENTS", help="Comma-separated modules that register agents."),
    ] = None,
    graph: GraphOption = None,
    langgraph_config: LangGraphConfigOption = None,
    log_format: LogFormatOption = "plain",
    otel: OtelOption = False,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            envvar="TETHER_METRICS_PORT",
            min=0,
            max=65535,
            help="Serve GET /metrics on this port (extra: metrics).",
        ),
    ] = None,
    metrics_host: Annotated[
        str,
        typer.Option(envvar="TETHER_METRICS_HOST", help="Address of the metrics port."),
    ] = "127.0.0.1",
    metrics_token: MetricsTokenOption = None,
    unroutable_after: UnroutableAfterOption = "1h",
    redact: RedactOption = True,
    redact_pattern: RedactPatternOption = None,
    workspace_root: WorkspaceRootOption = None,
    webhook_allowed: WebhookAllowOption = None,
) -> None:
    """Execute runs from the database until SIGTERM (then drain gracefully). The worker takes
    only runs of the agents it has (built-in ones, those of --agents and the --graph graphs)."""
    from tether.cli.worker import MetricsEndpoint, serve_worker

    check_durability(durability)
    register_graphs(graph, langgraph_config)
    grace = durations.grace(unroutable_after, option="--unroutable-after")
    roots = workspace_roots(workspace_root)
    start_observing(log_format, otel=otel)
    serve_worker(
        db,
        concurrency=concurrency,
        lease_seconds=lease_seconds,
        grace_seconds=grace_seconds,
        agents=agents,
        unroutable_after=grace,
        redactor=redactor(redact, redact_pattern),
        workspace_roots=roots,
        webhook_allow=webhook_allow(webhook_allowed),
        metrics=(
            None
            if metrics_port is None
            else MetricsEndpoint(metrics_host, metrics_port, metrics_token)
        ),
        durability=durability,
    )


def main() -> None:
    """Run the command; a usage mistake is one line on stderr (exit 2), like every error."""
    try:
        code = _narrowed(_app, sys.argv[1:3])(standalone_mode=False)
    except typer.Abort:
        err_console.print("[bold red]error:[/] interrupted", highlight=False)
        sys.exit(130)
    except typer.TyperException as exc:  # usage mistakes: bad option, missing argument…
        ctx = getattr(exc, "ctx", None)
        hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        if not message.strip():  # (a bare group or command: its help, printed already)
            sys.exit(getattr(exc, "exit_code", 2))
        err_console.print(
            f"[bold red]error:[/] {escape(message + hint)}",
            highlight=False,
            soft_wrap=True,
            markup=True,
        )
        sys.exit(getattr(exc, "exit_code", 2))
    sys.exit(code if isinstance(code, int) else 0)


def _narrowed(root: typer.Typer, names: list[str]) -> typer.Typer:
    """root holding only the command or group the first of names names, and that group only
    the command the next one names (the same command, usage, help and errors: Typer builds
    every command it holds, reading each one's options, at each start, and a command of
    another module loads that module); root itself, whole, for anything else (no argument, an
    option, a mistake)."""
    name = names[0] if names else None
    _load(root, name)
    groups = [g for g in root.registered_groups if g.name == name]
    commands = [c for c in root.registered_commands if _command_name(c) == name]
    if len(groups) + len(commands) != 1:
        return _whole(root)
    if groups and groups[0].typer_instance is not None:
        group = copy.copy(groups[0])
        group.typer_instance = _narrowed(groups[0].typer_instance, names[1:])
        groups = [group]
    narrow = copy.copy(root)
    narrow.registered_groups, narrow.registered_commands = groups, commands
    return narrow


def _command_name(command: CommandInfo) -> str | None:
    if command.name is not None:
        return command.name
    return None if command.callback is None else get_command_name(command.callback.__name__)


def _load(group: typer.Typer, name: str | None) -> None:
    """Load group's commands and groups of other modules named name (None: all), in place."""
    commands, groups = group.registered_commands, group.registered_groups
    for index, command in enumerate(commands):
        if isinstance(command, _Elsewhere) and name in (None, command.name):
            commands[index] = command.load()
    for index, info in enumerate(groups):
        if isinstance(info, _GroupElsewhere) and name in (None, info.name):
            groups[index] = info.load()


def _whole(group: typer.Typer) -> typer.Typer:
    """group with every command of its own and of its groups loaded."""
    _load(group, None)
    for info in group.registered_groups:
        if info.typer_instance is not None:
            _whole(info.typer_instance)
    return group


def __getattr__(name: str) -> typer.Typer:
    if name == "app":  # the whole command line, for programs that build it (tests, docs)
        return _whole(_app)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
