"""The ``tether`` command reading a conversation, as a whole process, beside a bare one.

In one SQLite file (durability ``normal``), a session holds H messages (default 10,000) of about
200 characters. Each command below is a new process (output to a pipe, read to its end: the
table 160 columns wide, COLUMNS unset), timed from its start to its exit, N times (default 15;
``--all`` 5), its median kept:

* ``tether sessions messages SID --tail N`` (default 50), ``--tail N --before SEQ`` (a message in
  the middle) and ``--all``, each with ``--db FILE`` and with ``--url`` against ``tether serve
  --no-auth --workers 0`` on the same file (started once, beside);
* the baseline of each: a bare ``python -c`` process that opens the file with ``sqlite3``, runs
  the same indexed read (the columns tether's own query selects, rows as tuples) and prints
  the rows, one per line;
* the interpreter's floor, ``python -c pass``, and ``python -c "import tether"``.

Then, in this process, the Python client against the same server (``tether.connect(url)``):
``messages.tail(N)``, ``tail(N, before=SEQ)`` and ``list()``, each beside the same pages read
with bare ``httpx`` (one kept-alive connection, the JSON decoded), call by call, median of the
rounds (``--client-rounds``, default 30; a whole read a fifth of them).

Every command runs once per round, the rounds in turn, so that a busy machine slows each alike.
Ratios are medians of the same run divided: each read against its bare read, and the floor's
share. Bytecode caches are written and used (PYTHONDONTWRITEBYTECODE is dropped from the
children's environment, and each command runs once before the rounds), as for an installed
package. Goal (issue 13): a tail read within 3x the bare read, the whole conversation within 2x.

    .venv/bin/python bench/cli.py
    .venv/bin/python bench/cli.py --history 1000 --rounds 9
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

import tether
from conversation import _message, read_columns
from http_load import start_server

BARE = """
import sqlite3, sys
db, sid, before, limit, whole = sys.argv[1:]
rows = sqlite3.connect(db).execute(
    {sql!r} if whole == "1" else {tail_sql!r},
    (sid,) if whole == "1" else (sid, int(before), int(limit)),
).fetchall()
if whole != "1":
    rows.reverse()
sys.stdout.write("".join("\\t".join(map(str, row)) + "\\n" for row in rows))
"""


@dataclass
class Command:
    """A process to time, and its wall times (seconds)."""

    name: str
    argv: list[str]
    runs: int
    samples: list[float] = field(default_factory=list)

    def run(self, env: dict[str, str]) -> None:
        start = time.perf_counter()
        done = subprocess.run(self.argv, capture_output=True, env=env, check=False)
        self.samples.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{self.name} failed: {done.stderr.decode()[-2000:]}")

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--history", type=int, default=10_000, help="messages in the session")
    parser.add_argument("--tail", type=int, default=50, help="messages a tail read reads")
    parser.add_argument("--rounds", type=int, default=15, help="runs of each short command")
    parser.add_argument("--whole-rounds", type=int, default=5, help="runs of each --all")
    parser.add_argument("--client-rounds", type=int, default=30, help="client reads of each")
    args = parser.parse_args()
    console = Console()
    folder = Path(tempfile.mkdtemp(prefix="tether-bench-cli-"))
    db = folder / "bench.db"
    server = None
    try:
        with tether.open(str(db), worker=False) as tt:
            session = tt.sessions.create(title="reads")
            for start in range(0, args.history, 1000):
                size = min(1000, args.history - start)
                session.messages.add_many([_message(Random(start + n)) for n in range(size)])
        server, url = start_server(folder, workers=0)  # it only answers the reads
        commands = commands_for(args, str(db), session.id, url)
        unset = ("PYTHONDONTWRITEBYTECODE", "COLUMNS")  # bytecode cached; a pipe's width
        env = {k: v for k, v in os.environ.items() if k not in unset}
        load_before = Path("/proc/loadavg").read_text().strip()
        console.print(f"{args.history} messages; load {load_before}; warming up …")
        for command in commands:
            command.run(env)
            command.samples.clear()
        for round_ in range(args.rounds):
            for command in commands[round_ % len(commands) :] + commands[: round_ % len(commands)]:
                if len(command.samples) < command.runs:
                    command.run(env)
        load_after = Path("/proc/loadavg").read_text().strip()
        report(console, args, {c.name: c for c in commands}, load_before, load_after)
        client_reads(console, args, url, session.id)
    finally:
        if server is not None:
            server.terminate()
            server.wait(20)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


def commands_for(args: argparse.Namespace, db: str, sid: str, url: str) -> list[Command]:
    python = sys.executable
    script = Path(python).with_name("tether")
    tether_cmd = [str(script)] if script.exists() else [python, "-m", "tether"]
    columns = read_columns()
    bare = BARE.format(
        sql=f"SELECT {columns} FROM messages WHERE session_id = ? ORDER BY seq",
        tail_sql=(
            f"SELECT {columns} FROM messages"
            " WHERE session_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?"
        ),
    )
    middle = args.history // 2
    reads = {
        "tail": (
            ["--tail", str(args.tail)],
            [str(2**62), str(args.tail), "0"],
            args.rounds,
        ),
        "before": (
            ["--tail", str(args.tail), "--before", str(middle)],
            [str(middle), str(args.tail), "0"],
            args.rounds,
        ),
        "all": (["--all"], ["0", "0", "1"], args.whole_rounds),
    }
    made = [
        Command("python -c pass", [python, "-c", "pass"], args.rounds),
        Command("import tether", [python, "-c", "import tether"], args.rounds),
    ]
    for read, (options, bare_args, runs) in reads.items():
        made.append(Command(f"bare {read}", [python, "-c", bare, db, sid, *bare_args], runs))
        for where in (["--db", db], ["--url", url]):
            argv = [*tether_cmd, "sessions", "messages", sid, *options, *where]
            made.append(Command(f"tether {read} {where[0]}", argv, runs))
    return made


def report(
    console: Console,
    args: argparse.Namespace,
    timed: dict[str, Command],
    load_before: str,
    load_after: str,
) -> None:
    floor = timed["python -c pass"].median
    table = Table(
        title=f"tether sessions messages, as processes ({args.history} messages, "
        f"tail {args.tail}; median of {args.rounds} runs, --all {args.whole_rounds})",
        title_justify="left",
    )
    for column in (
        "process",
        "wall ms",
        "vs its bare read",
        "above the floor, ms",
        "goal",
    ):
        table.add_column(column, justify="left" if column == "process" else "right")
    for name, command in timed.items():
        read = name.split()[1] if name.startswith("tether ") else None
        bare = timed[f"bare {read}"].median if read else None
        ratio = f"{command.median / bare:.1f}x" if bare else ""
        goal = "" if read is None else ("2x" if read == "all" else "3x")
        above = f"{(command.median - floor) * 1000:.0f}"
        table.add_row(name, f"{command.median * 1000:.0f}", ratio, above, goal)
    console.print(table)
    console.print(f"load before {load_before}; after {load_after}")


def client_reads(console: Console, args: argparse.Namespace, url: str, sid: str) -> None:
    """The client's reads beside bare httpx GETs of the same pages, alternating."""
    middle = args.history // 2
    path = f"/v1/sessions/{sid}/messages"
    with tether.connect(url) as tt, httpx.Client(base_url=url) as http:
        messages = tt.sessions.get(sid).messages

        def get(**params: Any) -> list[Any]:
            return list(http.get(path, params=params).json()["data"])

        def pages() -> list[Any]:
            got: list[Any] = []
            cursor = None
            while True:
                body = http.get(
                    path,
                    params={"limit": 1000, **({"cursor": cursor} if cursor else {})},
                )
                page = body.json()
                got += page["data"]
                if (cursor := page["next_cursor"]) is None:
                    return got

        pairs: dict[str, tuple[Callable[[], Any], Callable[[], Any], int]] = {
            f"tail({args.tail})": (
                lambda: messages.tail(args.tail),
                lambda: get(limit=args.tail, order="desc"),
                args.client_rounds,
            ),
            f"tail({args.tail}, before={middle})": (
                lambda: messages.tail(args.tail, before=middle),
                lambda: get(limit=args.tail, order="desc", before=middle),
                args.client_rounds,
            ),
            "list()": (messages.list, pages, max(3, args.client_rounds // 5)),
        }
        table = Table(
            title=f"the client beside bare httpx, the same pages ({args.history} messages)",
            title_justify="left",
        )
        for column in ("read", "client ms", "httpx ms", "client / httpx"):
            table.add_column(column, justify="left" if column == "read" else "right")
        for name, (client, bare, rounds) in pairs.items():
            timed: tuple[list[float], list[float]] = ([], [])
            for _ in range(rounds + 1):  # the first of each is a warm-up
                for call, samples in ((client, timed[0]), (bare, timed[1])):
                    start = time.perf_counter()
                    call()
                    samples.append(time.perf_counter() - start)
            ours, theirs = (statistics.median(samples[1:]) for samples in timed)
            table.add_row(
                name,
                f"{ours * 1000:.2f}",
                f"{theirs * 1000:.2f}",
                f"{ours / theirs:.2f}x",
            )
    console.print(table)


if __name__ == "__main__":
    sys.exit(main())
