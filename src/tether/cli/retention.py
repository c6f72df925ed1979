"""Retention commands: ``tether db prune``, ``tether sessions export`` / ``import`` and
``tether owners erase``."""

from __future__ import annotations

import json as json_module
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from tether.cli import durations
from tether.cli.app import (
    DbOption,
    JsonOption,
    KeyOption,
    Target,
    console,
    err_console,
    fail,
    find_session,
    handles_errors,
    open_db,
    print_json,
    with_target,
)
from tether.store.factory import DEFAULT_DB, check_url, is_postgres, open_store, sqlite_path

if TYPE_CHECKING:
    from tether.runtime import retention

owners_app = typer.Typer(help="Owners: everything one API key owner has.", no_args_is_help=True)


def _existing(db: str) -> None:
    check_url(db)
    if not is_postgres(db) and not Path(sqlite_path(db)).exists():
        fail(f"no tether database at {sqlite_path(db)}")


def _counts(report: retention.RetentionReport, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("table", "before", "after"):
        table.add_column(column, justify="left" if column == "table" else "right")
    for name, before in report.before.items():
        table.add_row(name, str(before), str(report.after.get(name, before)))
    return table


def _progress(done: int) -> None:
    err_console.print(f"  {done} session(s) deleted so far", highlight=False)


@handles_errors
def db_prune(
    db: DbOption = DEFAULT_DB,
    closed_older_than: Annotated[
        str | None,
        typer.Option(help="Delete sessions closed longer ago than this (90d, 12w …)."),
    ] = None,
    expired_older_than: Annotated[
        str | None,
        typer.Option(help="Delete sessions expired longer ago than this (30d …)."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would go; delete nothing.")
    ] = False,
    batch_size: Annotated[int, typer.Option(help="Sessions per batch.", min=1, max=10_000)] = 100,
    json: JsonOption = False,
) -> None:
    """Delete old closed and expired sessions with all their runs, steps, messages, memory and
    events, one session per transaction (other writers go on in between)."""
    import asyncio

    from tether.core.clock import SystemClock
    from tether.runtime import retention

    if closed_older_than is None and expired_older_than is None:
        raise typer.BadParameter(
            "say what to prune: --closed-older-than and/or --expired-older-than",
            param_hint="--closed-older-than",
        )
    closed = _age(closed_older_than, "--closed-older-than")
    expired = _age(expired_older_than, "--expired-older-than")
    _existing(db)

    async def run() -> retention.RetentionReport:
        store = open_store(db)
        try:
            return await retention.prune(
                store,
                SystemClock(),
                closed_older_than=closed,
                expired_older_than=expired,
                batch=batch_size,
                dry_run=dry_run,
                progress=None if json or dry_run else _progress,
            )
        finally:
            await store.close()

    report = asyncio.run(run())
    if json:
        print_json(report.to_data())
        return
    verb = "would delete" if dry_run else "deleted"
    console.print(_counts(report, "Rows per table" + (" (dry run)" if dry_run else "")))
    console.print(f"{verb} {report.sessions} session(s)")


def _age(text: str | None, option: str) -> float | None:
    return None if text is None else durations.seconds(text, option=option)


@owners_app.command("erase")
@handles_errors
def owners_erase(
    name: Annotated[str, typer.Argument(help="The owner (as API keys name it).")],
    db: DbOption = DEFAULT_DB,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask: erase (for scripts).")] = False,
    json: JsonOption = False,
) -> None:
    """Erase everything of one owner: sessions (runs, steps, messages, memory, events), user and
    app memory, API keys and web UI sessions. Asks you to type the name unless --yes."""
    import asyncio

    from tether.runtime import retention

    _existing(db)
    if not yes:
        typed = typer.prompt(f"This erases everything of owner {name!r}. Type the name to confirm")
        if typed != name:
            fail("not confirmed: nothing was erased")

    async def run() -> retention.RetentionReport:
        store = open_store(db)
        try:
            return await retention.erase_owner(store, name, progress=None if json else _progress)
        finally:
            await store.close()

    report = asyncio.run(run())
    if json:
        print_json({"owner": name, **report.to_data()})
        return
    console.print(_counts(report, f"Rows per table (owner {name!r} erased)"))
    console.print(f"erased {report.sessions} session(s) of {name!r}")


@handles_errors
@with_target
def sessions_export(
    target: Target,
    session: Annotated[str, typer.Argument(help="The session's id (or its key, with --key).")],
    key: KeyOption = False,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the JSON here instead of standard output.")
    ] = None,
) -> None:
    """Export a session with everything in it (runs, steps, messages, memory, events) as one
    JSON document."""
    with target.open() as tt:
        archive = tt.export_session(find_session(tt, session, key).id)
    text = json_module.dumps(archive, ensure_ascii=False, indent=1)
    if out is None:
        print(text)
        return
    out.write_text(text + "\n", encoding="utf-8")
    err_console.print(f"session {archive['session']['id']} exported to {out}", highlight=False)


@handles_errors
def sessions_import(
    file: Annotated[Path, typer.Argument(help="A file `tether sessions export` wrote.")],
    db: DbOption = DEFAULT_DB,
    owner: Annotated[
        str | None,
        typer.Option(help="Import as this owner (default: the owner it was exported from)."),
    ] = None,
    json: JsonOption = False,
) -> None:
    """Import an exported session into this database, ids kept (refused if it is here)."""
    try:
        archive: Any = json_module.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        fail(f"cannot read {file}: {exc}")
    with open_db(db, create=True, owner=owner or "local") as tt:
        session = tt.import_session(archive, keep_owner=owner is None)
    if json:
        print_json({"id": session.id, "owner": session.owner})
    else:
        console.print(f"session {session.id} imported (owner {session.owner})")
