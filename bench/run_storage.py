"""What one run costs on disk in a long session, beyond its own steps and messages.

    .venv/bin/python bench/run_storage.py [--runs 300]

Runs `runs` ``echo`` runs one after the other in one session through ``tether.open`` (so the
session is long: each run's context holds the conversation so far, up to its token budget),
then reads SQLite's ``dbstat`` table: the bytes each run adds (record payloads, without the
pages' free space), split into its row (without the assembled context), the context it started
from, its run events (``run.*``: their rows and their entries in the two event indexes) and the
run indexes. Steps, messages and their events
are counted apart: they are the run's own work, not its bookkeeping.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

import tether


def measure(path: Path, runs: int) -> dict[str, float]:
    with tether.open(path) as tt:
        session = tt.sessions.create(title="a long session")
        for i in range(runs):
            run = session.runs.create(f"run {i}", agent="echo", input={"text": f"hello {i}"})
            run.wait(60)
    with sqlite3.connect(path) as conn:
        one = conn.execute
        row = one(
            "SELECT sum(payload) - (SELECT sum(length(context)) FROM runs) FROM dbstat"
            " WHERE name = 'runs'"
        ).fetchone()[0]
        context = one("SELECT sum(length(context)) FROM runs").fetchone()[0]
        indexes = one(
            "SELECT sum(payload) FROM dbstat WHERE name LIKE 'sqlite_autoindex_runs%'"
            " OR name LIKE 'runs\\_%' ESCAPE '\\'"
        ).fetchone()[0]
        events, count = one(
            "SELECT sum(length(data) + length(type) + length(owner) + length(session_id)"
            " + length(run_id) + 16), count(*) FROM events WHERE type LIKE 'run.%'"
        ).fetchone()
        # The two event indexes, in the share of their entries that are run events.
        entries = one(
            "SELECT sum(payload) * (SELECT count(*) FROM events WHERE type LIKE 'run.%')"
            " / (SELECT count(*) FROM events) FROM dbstat"
            " WHERE name IN ('events_by_session', 'events_by_run')"
        ).fetchone()[0]
    return {
        "run row, without its context": row / runs,
        "run indexes": indexes / runs,
        f"run events ({count / runs:.0f} a run): rows": events / runs,
        "run events: index entries": entries / runs,
        "the context it started from": context / runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        found = measure(Path(folder) / "storage.db", args.runs)
    table = Table(
        title=f"Bytes per run, {args.runs:,} echo runs in one session", title_justify="left"
    )
    table.add_column("part")
    table.add_column("bytes per run", justify="right")
    beyond = 0.0
    for part, size in found.items():
        table.add_row(part, f"{size:,.0f}")
        if not part.startswith("the context"):
            beyond += size
    table.add_row("beyond its steps, messages and context", f"[bold]{beyond:,.0f}[/bold]")
    Console().print(table)


if __name__ == "__main__":
    main()
