"""Store append cost against history length (issue: core).

For H existing items (messages + steps of real runs, with their events) in one session, this
measures, each as its own committed call:

* appending one message (``store.add_message``),
* appending one step (``store.record_step`` on a running run held by a worker),
* assembling a run's context (``assemble_context``),

and reports the median and p95 of each, in microseconds and as a ratio to a bare sqlite3
``INSERT`` + ``COMMIT`` of a comparable row with the same durability settings, measured in the
same run, interleaved with the store calls (same file system, WAL, same ``synchronous``).

The bare baseline inserts the same message row (and, for steps, the same step row) into a table
with the keys tether's own table has (a UUID text primary key and a unique (parent, seq) key),
pre-filled with H rows, through a plain ``sqlite3`` connection: ``conn.execute(INSERT);
conn.commit()``. Everything tether adds on top (the session guard and counters, the event in the
same transaction, the change feed, its Python layers) is what the ratio shows.

Each H is filled once through the real store (a session of runs with user messages, model
calls, tool calls, notes and assistant replies, each run with the context it started from,
events included; ``synchronous=OFF`` while filling, which is not measured), then copied for each
durability level. During the measurement the appended rows are removed every few iterations
(not timed) so that the history stays at H.

    .venv/bin/python bench/store_append.py             # H = 100, 1k, 10k, 100k; normal and full
    .venv/bin/python bench/store_append.py --sizes 100,10000 --durability normal
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, cast

from rich.console import Console
from rich.table import Table

from tether.core.clock import ManualClock, SystemClock
from tether.core.ids import new_id
from tether.core.message import Role
from tether.core.session import Session
from tether.core.status import RunStatus, StepStatus
from tether.core.step import StepKind
from tether.core.usage import Usage
from tether.runtime.context_assembly import assemble_context
from tether.runtime.service import Service
from tether.store.sqlite.database import SqliteDatabase
from tether.store.sqlite.store import SqliteStore

WORKER = "bench-host:1:worker"
OWNER = "local"

# -- realistic content ---------------------------------------------------------------------------

_PHRASES = (
    "the tests fail because module calc imports tokenizer which is missing run pytest",
    "again fix the import keep the change minimal python version project requirements",
    "add a small helper check the output read the file write the patch explain why",
    "it broke and what changed",
)
_WORDS = [word for phrase in _PHRASES for word in phrase.split(" ")]


def _text(rng: random.Random, low: int, high: int) -> str:
    n = rng.randint(low, high)
    return " ".join(rng.choice(_WORDS) for _ in range(n)).capitalize() + "."


def _file_body(rng: random.Random) -> str:
    lines = [
        f"def f{i}(x):\n    return x + {rng.randint(0, 99)}\n" for i in range(rng.randint(8, 20))
    ]
    return "\n".join(lines)


def _tool_call(rng: random.Random) -> tuple[str, dict[str, Any], Any]:
    kind = rng.randrange(4)
    if kind == 0:
        path = f"src/calc/mod{rng.randint(1, 9)}.py"
        return "read_file", {"path": path}, _file_body(rng)
    if kind == 1:
        out = "\n".join(
            f"tests/test_mod{i}.py::test_case_{j} PASSED"
            for i in range(rng.randint(2, 5))
            for j in range(rng.randint(2, 6))
        )
        return "run_command", {"cmd": "python -m pytest -q"}, {"exit_code": 0, "output": out}
    if kind == 2:
        return "list_files", {"path": "."}, [f"src/calc/mod{i}.py" for i in range(1, 10)]
    body = _file_body(rng)
    return "write_file", {"path": "src/calc/tokenizer.py", "content": body}, {"written": len(body)}


def _usage(rng: random.Random) -> Usage:
    return Usage(rng.randint(800, 6000), rng.randint(20, 400), 1)


# -- filling a session through the real store -----------------------------------------------------


@dataclass
class Filled:
    path: Path
    h: int
    session_id: str
    messages: int
    steps: int
    runs: int
    events: int
    seconds: float


async def _fill_run(
    store: SqliteStore, service: Service, clock: ManualClock, rng: random.Random, session: Session
) -> tuple[int, int]:
    """One real-looking run, written with the calls the runtime makes; (messages, steps)."""

    def tick() -> datetime:
        return clock.advance(rng.uniform(0.2, 2.0))

    text = _text(rng, 8, 40)
    await service.add_message(session.id, "user", text)
    tick()
    run = await service.create_run(session.id, text[:120], agent="coder", input={"text": text})
    claimed = await store.claim_run(worker_id=WORKER, now=tick(), lease_seconds=15)
    assert claimed is not None and claimed.id == run.id
    context = await assemble_context(store, session, before_seq=run.seq, now=clock.now())
    await store.update_run(run.id, worker_id=WORKER, now=tick(), context=context)
    position = 0
    history: list[dict[str, Any]] = [{"role": "user", "content": text}]
    steps = 0

    async def model_call(content: str | None, calls: list[dict[str, Any]]) -> None:
        nonlocal position, steps
        position += 1
        step = await store.start_step(
            run_id=run.id,
            worker_id=WORKER,
            position=position,
            kind=StepKind.MODEL_CALL,
            name="offline",
            input={"messages": history[-2:], "message_count": len(history)},
            now=tick(),
        )
        usage = _usage(rng)
        output = {
            "content": content,
            "tool_calls": calls,
            "model": "offline",
            "finish_reason": "tool_calls" if calls else "stop",
            "usage": {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "requests": 1,
            },
        }
        await store.finish_step(
            step.id,
            worker_id=WORKER,
            status=StepStatus.COMPLETED,
            now=tick(),
            output=output,
            usage=usage,
        )
        steps += 1

    for _ in range(3):
        name, args, result = _tool_call(rng)
        call_id = f"call_{new_id()[-12:]}"
        await model_call(None, [{"id": call_id, "name": name, "arguments": args}])
        position += 1
        step = await store.start_step(
            run_id=run.id,
            worker_id=WORKER,
            position=position,
            kind=StepKind.TOOL_CALL,
            name=name,
            input={"arguments": args, "call_id": call_id},
            now=tick(),
        )
        await store.finish_step(
            step.id, worker_id=WORKER, status=StepStatus.COMPLETED, now=tick(), output=result
        )
        steps += 1
        history.append({"role": "tool", "content": json.dumps(result)[:400]})
    position += 1
    await store.record_step(
        run_id=run.id,
        worker_id=WORKER,
        position=position,
        kind=StepKind.NOTE,
        name="hypothesis",
        input={"text": _text(rng, 6, 20)},
        now=tick(),
    )
    answer = _text(rng, 20, 80)
    await model_call(answer, [])
    position += 1
    await store.record_step(
        run_id=run.id,
        worker_id=WORKER,
        position=position,
        kind=StepKind.MESSAGE,
        name="assistant_message",
        input={"role": "assistant", "content": answer},
        now=tick(),
        message=(Role.ASSISTANT, answer, {}),
    )
    steps += 2
    await store.finish_run(
        run.id, worker_id=WORKER, status=RunStatus.COMPLETED, now=tick(), output={"text": answer}
    )
    return 2, steps


async def fill(path: Path, items: int, seed: int = 7) -> Filled:
    """A session holding at least `items` messages + steps, written through the store."""
    started = time.perf_counter()
    rng = random.Random(seed)
    # The history ends a little before now, so the measurement's wall clock follows it.
    clock = ManualClock(datetime.now(UTC) - timedelta(seconds=items * 3 + 60))
    store = SqliteStore(path, durability="normal")
    _sqlite(store)._conn.execute("PRAGMA synchronous = OFF")  # filling is not measured
    service = Service(store, clock=clock)
    session = await service.create_session(
        title="Keep helping me with this project",
        project={"workspace": "./calc", "python": "3.11", "notes": _text(rng, 20, 40)},
    )
    await service.set_session_memory(session.id, "python", "3.11")
    await service.set_session_memory(session.id, "style", "the user wants minimal changes")
    messages = steps = runs = 0
    while messages + steps < items:
        m, s = await _fill_run(store, service, clock, rng, session)
        messages, steps, runs = messages + m, steps + s, runs + 1
    conn = _sqlite(store)._conn
    events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    await store.close()
    return Filled(
        path, items, session.id, messages, steps, runs, events, time.perf_counter() - started
    )


async def _filled(workdir: Path, h: int, keep: str | None) -> Filled:
    if keep is None:
        return await fill(workdir / f"fill-{h}.db", h)
    cached = _cached(Path(keep), h)
    if cached is not None:
        return cached
    filled = await fill(Path(keep) / f"fill-{h}.db", h)
    _remember(filled)
    return filled


def _cached(folder: Path, h: int) -> Filled | None:
    folder.mkdir(parents=True, exist_ok=True)
    path, meta = folder / f"fill-{h}.db", folder / f"fill-{h}.json"
    if path.exists() and meta.exists():
        return Filled(**{**json.loads(meta.read_text()), "path": path, "seconds": 0.0})
    return None


def _remember(filled: Filled) -> None:
    fields = {k: v for k, v in vars(filled).items() if k not in ("path", "seconds")}
    filled.path.with_suffix(".json").write_text(json.dumps(fields))


# -- the bare baseline ----------------------------------------------------------------------------

_BARE_SCHEMA = """
CREATE TABLE messages (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, seq INTEGER NOT NULL, role TEXT NOT NULL,
    content TEXT NOT NULL, run_id TEXT, metadata TEXT NOT NULL, created_at INTEGER NOT NULL,
    UNIQUE (session_id, seq));
CREATE TABLE steps (
    id TEXT PRIMARY KEY, run_id TEXT NOT NULL, session_id TEXT NOT NULL, seq INTEGER NOT NULL,
    position INTEGER NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, status TEXT NOT NULL,
    input TEXT, output TEXT, error TEXT, started_at INTEGER NOT NULL, ended_at INTEGER,
    input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
    model_requests INTEGER NOT NULL, attempt INTEGER NOT NULL,
    UNIQUE (run_id, seq));
"""
_BARE_MESSAGE = "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
_BARE_STEP = "INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


class Bare:
    """Plain sqlite3: the same rows, inserted and committed one at a time."""

    def __init__(self, path: Path, durability: str, prefill: int) -> None:
        self.conn = sqlite3.connect(path)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute(f"PRAGMA synchronous = {durability.upper()}")
        self.conn.executescript(_BARE_SCHEMA)
        self.session_id = new_id()
        self.run_id = new_id()
        self.seq = 0
        rows = [self._message_row() for _ in range(prefill // 2)]
        self.conn.executemany(_BARE_MESSAGE, rows)
        self.step_seq = 0
        self.conn.executemany(_BARE_STEP, [self._step_row() for _ in range(prefill - len(rows))])
        self.conn.commit()

    def _message_row(self) -> tuple[Any, ...]:
        self.seq += 1
        return (
            new_id(),
            self.session_id,
            self.seq,
            "user",
            MESSAGE_TEXT,
            None,
            "{}",
            time.time_ns() // 1000,
        )

    def _step_row(self) -> tuple[Any, ...]:
        self.step_seq += 1
        now = time.time_ns() // 1000
        return (
            new_id(),
            self.run_id,
            self.session_id,
            self.step_seq,
            self.step_seq,
            "note",
            "progress",
            "completed",
            STEP_INPUT_JSON,
            None,
            None,
            now,
            now,
            0,
            0,
            0,
            1,
        )

    def message_rows(self, n: int) -> list[tuple[Any, ...]]:
        return [self._message_row() for _ in range(n)]

    def step_rows(self, n: int) -> list[tuple[Any, ...]]:
        return [self._step_row() for _ in range(n)]


MESSAGE_TEXT = (
    "Now run the full test suite again and tell me whether anything else broke; keep the "
    "change minimal and explain it in two sentences."
)
STEP_INPUT = {"text": "checked the imports of calc/ops.py", "i": 3, "of": 10}
STEP_INPUT_JSON = json.dumps(STEP_INPUT, separators=(",", ":"))


# -- measurement -----------------------------------------------------------------------------------

OPS = ("bare_message", "message", "bare_step", "step", "context")


@dataclass
class Cell:
    durability: str
    h: int
    samples: dict[str, list[int]] = field(default_factory=lambda: {op: [] for op in OPS})

    def median(self, op: str) -> float:
        return statistics.median(self.samples[op]) / 1000

    def p95(self, op: str) -> float:
        data = sorted(self.samples[op])
        return data[min(len(data) - 1, int(len(data) * 0.95))] / 1000

    def baseline(self, op: str) -> str:
        return "bare_step" if op == "step" else "bare_message"

    def ratio(self, op: str) -> float:
        return self.median(op) / self.median(self.baseline(op))

    def ratio_p95(self, op: str) -> float:
        return self.p95(op) / self.p95(self.baseline(op))


async def _timed(samples: list[int], call: Callable[[], Awaitable[Any]]) -> None:
    started = time.perf_counter_ns()
    await call()
    samples.append(time.perf_counter_ns() - started)


async def measure(
    filled: Filled,
    workdir: Path,
    durability: str,
    iterations: int,
    context_every: int,
    round_size: int,
) -> Cell:
    path = workdir / f"h{filled.h}-{durability}.db"
    bare_path = workdir / f"bare-h{filled.h}-{durability}.db"
    shutil.copyfile(filled.path, path)
    bare = Bare(bare_path, durability, filled.h)
    os.sync()  # let the copy reach the disk now, not during the measurement
    store = SqliteStore(path, durability=durability)  # type: ignore[arg-type]
    conn = _sqlite(store)._conn
    clock = SystemClock()
    service = Service(store, clock=clock)
    session = await service.get_session(filled.session_id)
    run = await service.create_run(session.id, "measure appends", agent="echo")
    claimed = await store.claim_run(worker_id=WORKER, now=clock.now(), lease_seconds=3600)
    assert claimed is not None and claimed.id == run.id
    base_messages = conn.execute(
        "SELECT message_count FROM sessions WHERE id = ?", (session.id,)
    ).fetchone()[0]
    base_event = conn.execute("SELECT max(id) FROM events").fetchone()[0]
    position = 0

    def reset() -> None:
        nonlocal position
        position = 0
        with _sqlite(store)._lock.hold():
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "DELETE FROM messages WHERE session_id = ? AND seq > ?", (session.id, base_messages)
            )
            conn.execute("DELETE FROM steps WHERE run_id = ?", (run.id,))
            conn.execute("DELETE FROM events WHERE id > ?", (base_event,))
            conn.execute(
                "UPDATE sessions SET message_count = ? WHERE id = ?", (base_messages, session.id)
            )
            conn.execute("UPDATE runs SET step_count = 0 WHERE id = ?", (run.id,))
            conn.execute("COMMIT")
        bare.conn.execute("DELETE FROM messages WHERE seq > ?", (bare_base[0],))
        bare.conn.execute("DELETE FROM steps WHERE seq > ?", (bare_base[1],))
        bare.conn.commit()
        bare.seq, bare.step_seq = bare_base

    bare_base = (bare.seq, bare.step_seq)
    cell = Cell(durability, filled.h)

    async def add_message() -> None:
        await store.add_message(
            session_id=session.id,
            owner=OWNER,
            role=Role.USER,
            content=MESSAGE_TEXT,
            now=clock.now(),
        )

    async def add_step() -> None:
        nonlocal position
        position += 1
        await store.record_step(
            run_id=run.id,
            worker_id=WORKER,
            position=position,
            kind=StepKind.NOTE,
            name="progress",
            input=STEP_INPUT,
            now=clock.now(),
        )

    async def context() -> None:
        await assemble_context(store, session, before_seq=run.seq, now=clock.now())

    warmup = max(round_size, 50)
    done = 0
    total = warmup + iterations
    while done < total:
        n = min(round_size, total - done)
        message_rows, step_rows = bare.message_rows(n), bare.step_rows(n)
        record = done >= warmup
        junk = Cell(durability, 0)
        target = cell.samples if record else junk.samples
        for i in range(n):
            row = message_rows[i]
            await _timed(target["bare_message"], partial(_bare, bare.conn, _BARE_MESSAGE, row))
            await _timed(target["message"], add_message)
            row = step_rows[i]
            await _timed(target["bare_step"], partial(_bare, bare.conn, _BARE_STEP, row))
            await _timed(target["step"], add_step)
            if (done + i) % context_every == 0:
                await _timed(target["context"], context)
        done += n
        reset()
    await store.close()
    bare.conn.close()
    _remove(path, bare_path)
    return cell


def _write(path: str, text: str) -> None:
    Path(path).write_text(text, encoding="utf-8")


def _remove(*paths: Path) -> None:
    for done_path in paths:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{done_path}{suffix}").unlink(missing_ok=True)


def _sqlite(store: SqliteStore) -> SqliteDatabase:
    """The store's SQLite database, whose connection the benchmark uses directly."""
    return cast(SqliteDatabase, store.database)


async def _bare(conn: sqlite3.Connection, sql: str, row: tuple[Any, ...]) -> None:
    conn.execute(sql, row)
    conn.commit()


# -- report --------------------------------------------------------------------------------------


def machine() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpus": str(os.cpu_count()),
        "cpu": cpu,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
    }


LABELS = {"message": "add_message", "step": "record_step", "context": "assemble_context"}


def report(cells: list[Cell], console: Console) -> bool:
    ok = True
    for durability in dict.fromkeys(c.durability for c in cells):
        rows = [c for c in cells if c.durability == durability]
        table = Table(
            title=f"Store append vs history length, durability={durability} "
            f"(WAL, synchronous={durability.upper()})",
            title_justify="left",
        )
        for name in (
            "H",
            "operation",
            "median us",
            "p95 us",
            "bare median us",
            "bare p95 us",
            "x bare (median)",
            "x bare (p95)",
            "n",
        ):
            table.add_column(name, justify="left" if name == "operation" else "right")
        for c in rows:
            for op in ("message", "step", "context"):
                base = c.baseline(op)
                table.add_row(
                    f"{c.h:,}" if op == "message" else "",
                    LABELS[op],
                    f"{c.median(op):.1f}",
                    f"{c.p95(op):.1f}",
                    f"{c.median(base):.1f}",
                    f"{c.p95(base):.1f}",
                    f"{c.ratio(op):.2f}",
                    f"{c.ratio_p95(op):.2f}",
                    f"{len(c.samples[op])}",
                    end_section=op == "context",
                )
        console.print(table)
        first, last = rows[0], rows[-1]
        checks = []
        for op in ("message", "step"):
            worst = max(c.ratio(op) for c in rows)
            checks.append((f"{LABELS[op]} <= 2x bare at every H (worst {worst:.2f}x)", worst <= 2))
        notes = []
        if len(rows) > 1:
            # Appends are judged in bare units (the same commit cost, measured alongside);
            # context assembly is a read, so in microseconds (a bare commit under FULL is an
            # fsync, no yardstick for a read).
            for op in ("message", "step", "context"):
                growth = last.ratio(op) / first.ratio(op)
                abs_growth = last.median(op) / first.median(op)
                judged = abs_growth if op == "context" else growth
                checks.append(
                    (
                        f"{LABELS[op]} at H={last.h:,} within 1.2x of H={first.h:,} "
                        f"({growth:.2f}x in bare units, {abs_growth:.2f}x in us)",
                        judged <= 1.2,
                    )
                )
            for c in rows[1:-1]:
                notes.append(
                    f"(info) assemble_context at H={last.h:,} vs H={c.h:,}: "
                    f"{last.median('context') / c.median('context'):.2f}x in us"
                )
        for text, passed in checks:
            ok &= passed
            mark = "[green]met   [/green]" if passed else "[red]MISSED[/red]"
            console.print(f"  {mark} {text}")
        for text in notes:
            console.print(f"         {text}")
        console.print()
    return ok


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default="100,1000,10000,100000",
        help="history lengths H (the targets compare the first and the last)",
    )
    parser.add_argument("--durability", default="normal,full")
    parser.add_argument(
        "--iterations",
        type=int,
        default=3000,
        help="appends of each kind per cell with durability=normal",
    )
    parser.add_argument(
        "--full-iterations",
        type=int,
        default=600,
        help="appends of each kind per cell with durability=full",
    )
    parser.add_argument(
        "--context-every", type=int, default=5, help="assemble the context once every N iterations"
    )
    parser.add_argument("--round", type=int, default=10, help="appends between two resets to H")
    parser.add_argument("--dir", help="where the database files go (default: a temp dir)")
    parser.add_argument("--json", help="also write the raw figures to this file")
    parser.add_argument(
        "--keep-fill",
        metavar="DIR",
        help="keep the filled files in DIR and reuse them on the next run (same schema only)",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    levels = [d.strip() for d in args.durability.split(",")]
    console = Console(width=max(100, shutil.get_terminal_size((120, 40)).columns))
    info = machine()
    console.print(
        f"[bold]tether store append benchmark[/bold] — {info['cpus']} CPUs, {info['cpu']}, "
        f"Python {info['python']}, SQLite {info['sqlite']}"
    )
    workdir = Path(tempfile.mkdtemp(prefix="tether-bench-", dir=args.dir))
    cells: list[Cell] = []
    try:
        for h in sizes:
            filled = await _filled(workdir, h, args.keep_fill)
            console.print(
                f"H={h:,}: filled {filled.messages:,} messages + {filled.steps:,} steps in "
                f"{filled.runs:,} runs ({filled.events:,} events, "
                f"{filled.path.stat().st_size / 1e6:.1f} MB) in {filled.seconds:.1f} s"
            )
            for level in levels:
                n = args.iterations if level == "normal" else args.full_iterations
                cells.append(
                    await measure(filled, workdir, level, n, args.context_every, args.round)
                )
            if not args.keep_fill:
                filled.path.unlink()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    cells.sort(key=lambda c: (levels.index(c.durability), c.h))
    console.print()
    ok = report(cells, console)
    if args.json:
        _write(
            args.json,
            json.dumps(
                {
                    "machine": info,
                    "cells": [
                        {
                            "durability": c.durability,
                            "h": c.h,
                            **{f"{op}_median_us": round(c.median(op), 2) for op in OPS},
                            **{f"{op}_p95_us": round(c.p95(op), 2) for op in OPS},
                        }
                        for c in cells
                    ],
                },
                indent=2,
            ),
        )
    console.print("all targets met" if ok else "some targets missed (see above)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
