"""``tether db copy``: move an installation to another database, with progress and a verdict."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Table

from tether.cli.app import console, err_console, fail, print_json
from tether.store.copy import CopyReport, copy_url
from tether.store.factory import check_url, is_postgres, sqlite_path


def run_copy(source: str, target: str, *, force: bool, batch: int, json: bool) -> None:
    """Copy source into target; print the per-table verdict; exit 1 if it does not verify."""
    for url in (source, target):  # refused before the progress display starts
        check_url(url)
    if not is_postgres(source) and not Path(sqlite_path(source)).exists():
        fail(f"no tether database at {sqlite_path(source)}")
    bar = Progress(
        TextColumn("{task.description:<16}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err_console,
        transient=True,
    )
    tasks: dict[tuple[str, str], TaskID] = {}

    def progress(phase: str, table: str, done: int, total: int) -> None:
        key = (phase, table)
        if key not in tasks:
            tasks[key] = bar.add_task(f"{phase} {table}", total=total)
        bar.update(tasks[key], completed=done)

    with bar:
        report = asyncio.run(
            copy_url(source, target, replace=force, batch=batch, progress=progress)
        )
    if json:
        print_json(report.to_data())
    else:
        _render(report)
    if not report.verified:
        fail("the copy does not match its source (see the table above)")


def _render(report: CopyReport) -> None:
    table = Table(title=f"{report.source} → {report.target}", title_justify="left")
    for column in ("table", "source rows", "target rows", "checksum (sha256)", "match"):
        table.add_column(column, justify="right" if "rows" in column else "left")
    for part in report.tables:
        same = part.source_checksum == part.target_checksum
        checksum = part.source_checksum[:16] + ("" if same else f" ≠ {part.target_checksum[:16]}")
        table.add_row(
            part.name,
            str(part.source_rows),
            str(part.target_rows),
            checksum,
            "[green]yes[/]" if part.ok else "[bold red]NO[/]",
        )
    console.print(table)
    verdict = "[green]verified[/]" if report.verified else "[bold red]NOT verified[/]"
    console.print(f"{report.rows} rows copied in {report.seconds:.2f} s: {verdict}")
