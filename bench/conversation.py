"""Reading and appending a conversation through the public library, beside bare SQL.

In one SQLite file (durability ``normal``), a session holds H messages (default 10,000) of about
200 characters. Each operation is timed through the synchronous library (``tether.open``, which
runs each call in the calling thread) and through the async one (``tether.open_async`` on the
caller's loop), each interleaved in the same rounds with a bare ``sqlite3`` read on its own
connection to the same file (the sync library and the async one in two phases: a sync call from
inside a running event loop pays for the two loops' threads taking turns):

* the newest N messages (default 50): ``session.messages.tail(N)`` vs ``SELECT <columns> FROM
  messages WHERE session_id = ? AND seq < ? ORDER BY seq DESC LIMIT N`` (the index tether
  reads by, the columns tether's own query selects, rows as plain tuples);
* the N before a message in the middle: ``tail(N, before=SEQ)`` vs the same with ``seq < SEQ``;
* the whole conversation: ``session.messages.list()`` vs ``SELECT <columns> ... ORDER BY seq``;
* appending: one message per call (``session.messages.add``) vs batches of B (default 100,
  ``session.messages.add_many``), each message with its event, per message; a single append
  right after a batch costs more than one among single appends, so the batch is compared with
  both (the second from the rounds below);
* one message per call again, beside the store's own append (``SqliteStore.add_message``,
  what ``add`` comes down to: awaited in the async phase, and in the sync phase run with no
  event loop at all, its strictest measure), in rounds of their own.

Each figure is the median of the rounds; the ratio of two medians measured in the same run, in
elapsed time and in CPU time of the calling thread (which does all the work of every operation
here; on a busy machine a long call, such as a batch, waits for a CPU more often than a short
one). Goals (issue 13): a tail read within 3x the bare read, the whole conversation within 2x, a
message appended in a batch of 100 at least 10x cheaper than one appended alone, and the
library's append within 1.5x the store's own.

    .venv/bin/python bench/conversation.py
    .venv/bin/python bench/conversation.py --history 1000 --rounds 50
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

from rich.console import Console
from rich.table import Table

import tether
from tether.core.message import Role
from tether.store.sql.queries import load_queries

_PHRASES = (
    "the tests fail because module calc imports tokenizer which is missing run pytest again",
    "fix the import keep the change minimal python version project requirements add a helper",
)
_WORDS = [word for phrase in _PHRASES for word in phrase.split(" ")]


def _text(rng: Random) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < 200:
        words.append(rng.choice(_WORDS))
    return " ".join(words)


@dataclass
class Timed:
    """One operation and its samples (nanoseconds, per call or per message): elapsed, and
    the CPU time of the calling thread (where every operation here does all its work)."""

    name: str
    run: Callable[[], Any]
    per: int = 1
    samples: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def once(self) -> None:
        started, cpu = time.perf_counter_ns(), time.thread_time_ns()
        self.run()
        self._record(started, cpu)

    async def aonce(self) -> None:
        started, cpu = time.perf_counter_ns(), time.thread_time_ns()
        done = self.run()
        if inspect.isawaitable(done):
            await done
        self._record(started, cpu)

    def _record(self, started: int, cpu: int) -> None:
        self.cpu.append((time.thread_time_ns() - cpu) / self.per)
        self.samples.append((time.perf_counter_ns() - started) / self.per)

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples) / 1000

    @property
    def cpu_us(self) -> float:
        return statistics.median(self.cpu) / 1000


def measure(groups: list[list[Timed]], rounds: int, warmup: int) -> None:
    """Interleave every operation, one call each per round; the warm-up rounds are dropped."""
    for index in range(warmup + rounds):
        for group in groups:
            for op in group:
                op.once()
        if index + 1 == warmup:
            _forget(groups)


async def ameasure(groups: list[list[Timed]], rounds: int, warmup: int) -> None:
    """measure, on the running event loop (operations may be coroutines)."""
    for index in range(warmup + rounds):
        for group in groups:
            for op in group:
                await op.aonce()
        if index + 1 == warmup:
            _forget(groups)


def _forget(groups: list[list[Timed]]) -> None:
    for group in groups:
        for op in group:
            op.samples.clear()
            op.cpu.clear()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=int, default=10_000, help="messages in the session")
    parser.add_argument("--tail", type=int, default=50, help="messages a tail read takes")
    parser.add_argument("--batch", type=int, default=100, help="messages per batch append")
    parser.add_argument("--rounds", type=int, default=200, help="timed rounds")
    parser.add_argument("--whole-rounds", type=int, default=20, help="rounds reading it whole")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--dir", help="where the database file goes (default: a temp dir)")
    args = parser.parse_args()
    if min(args.history, args.tail, args.batch, args.rounds, args.whole_rounds) < 1:
        parser.error("sizes and rounds must be >= 1")
    if args.batch > 1000 or args.tail > 1000:
        parser.error("--batch and --tail are at most 1000")
    console = Console(width=160 if not sys.stdout.isatty() else None)
    folder = Path(tempfile.mkdtemp(prefix="tether-conversation-", dir=args.dir))
    path = folder / "tether.db"
    bare = sqlite3.connect(path)
    try:
        console.print(f"filling a session with {args.history:,} messages in {folder} …")
        with tether.open(path, worker=False) as tt:
            session = tt.sessions.create(title="bench")
            appends = tt.sessions.create(title="appends")
            for start in range(0, args.history, 1000):
                size = min(1000, args.history - start)
                session.messages.add_many([_message(Random(start + n)) for n in range(size)])
            console.print(f"timing {args.rounds} rounds ({args.whole_rounds} for whole reads) …")
            sync = Phase(args, bare, session.id)
            sync.reads(session.messages.tail, session.messages.list)
            service = tt.async_backend
            assert isinstance(service, tether.Service)
            store_add = _store_append(service, appends.id)
            sync.writes(
                appends.messages.add,
                appends.messages.add_many,
                lambda **message: _without_a_loop(store_add(**message)),
            )
            sync.run_sync()

        async def run_async() -> Phase:
            async with await tether.open_async(path, worker=False) as att:
                phase = Phase(args, bare, session.id)
                asession = await att.sessions.get(session.id)
                aappends = await att.sessions.get(appends.id)
                phase.reads(asession.messages.tail, asession.messages.list)
                service = att.backend
                assert isinstance(service, tether.Service)
                phase.writes(
                    aappends.messages.add,
                    aappends.messages.add_many,
                    _store_append(service, appends.id),
                )
                await phase.run_async()
                return phase

        report(console, args, {"tether.open": sync, "tether.open_async": asyncio.run(run_async())})
    finally:
        bare.close()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


def _without_a_loop(coro: Coroutine[Any, Any, Any]) -> Any:
    """What coro returns, run to its end with no event loop at all (the store's own cost, with
    nothing to drive it: its append does not wait for anything when nothing else writes)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("the store's append waited for something")


def _store_append(service: tether.Service, session_id: str) -> Callable[..., Any]:
    """The store's own append (what the library's add comes down to): a coroutine."""
    store, owner, clock = service.store, service.owner, service.clock

    def append(role: str, content: str) -> Any:
        return store.add_message(
            session_id=session_id, owner=owner, role=Role(role), content=content, now=clock.now()
        )

    return append


def read_columns() -> str:
    """The columns tether's own conversation read selects (its query's select list), which the
    bare read selects too."""
    query = " ".join(load_queries("sqlite")["messages_forward"].split())
    return query.removeprefix("SELECT ").split(" FROM messages ", 1)[0]


def _message(rng: Random) -> dict[str, Any]:
    return {"role": "user" if rng.random() < 0.5 else "assistant", "content": _text(rng)}


def _checked(expected: int) -> Callable[[Any], Any]:
    def check(got: Any) -> Any:
        if inspect.isawaitable(got):
            return _acheck(got, expected)
        if len(got) != expected:
            raise AssertionError(f"read {len(got)} messages, expected {expected}")
        return got

    return check


async def _acheck(got: Any, expected: int) -> None:
    _checked(expected)(await got)


class Phase:
    """The operations of one library (sync or async), each beside its bare read."""

    def __init__(self, args: argparse.Namespace, bare: sqlite3.Connection, session_id: str):
        self.args = args
        self.bare = bare
        self.session_id = session_id
        self.middle = args.history // 2 + 1
        self.read_groups: list[list[Timed]] = []
        self.whole: list[Timed] = []
        self.write_group: list[Timed] = []
        self.one_group: list[Timed] = []

    def reads(self, tail: Callable[..., Any], whole: Callable[[], Any]) -> None:
        args, sid, middle = self.args, self.session_id, self.middle
        columns = read_columns()
        tail_sql = (
            f"SELECT {columns} FROM messages"
            " WHERE session_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?"
        )
        whole_sql = f"SELECT {columns} FROM messages WHERE session_id = ? ORDER BY seq"
        newest, before = _checked(args.tail), _checked(min(args.tail, middle - 1))
        everything = _checked(args.history)
        query = self.bare.execute
        self.read_groups = [
            [
                Timed("bare", lambda: newest(query(tail_sql, (sid, 2**62, args.tail)).fetchall())),
                Timed("tether", lambda: newest(tail(args.tail))),
            ],
            [
                Timed("bare", lambda: before(query(tail_sql, (sid, middle, args.tail)).fetchall())),
                Timed("tether", lambda: before(tail(args.tail, before=middle))),
            ],
        ]
        self.whole = [
            Timed("bare", lambda: everything(query(whole_sql, (sid,)).fetchall())),
            Timed("tether", lambda: everything(whole())),
        ]

    def writes(
        self,
        add: Callable[..., Any],
        add_many: Callable[..., Any],
        store_add: Callable[..., Any],
    ) -> None:
        rng = Random(11)
        count = self.args.rounds + self.args.warmup
        singles = iter([_message(rng) for _ in range(count)])
        batches = iter([[_message(rng) for _ in range(self.args.batch)] for _ in range(count)])
        self.write_group = [
            Timed("one", lambda: add(**next(singles))),
            Timed("batch", lambda: add_many(next(batches)), per=self.args.batch),
        ]
        # One append per call again, beside the store's own append, in rounds of their own:
        # right after a batch, any call runs on colder caches.
        again = iter([_message(rng) for _ in range(count)])
        for_store = iter([_message(rng) for _ in range(count)])
        self.one_group = [
            Timed("one", lambda: add(**next(again))),
            Timed("store", lambda: store_add(**next(for_store))),
        ]

    def run_sync(self) -> None:
        measure(self.read_groups, self.args.rounds, self.args.warmup)
        measure([self.whole], self.args.whole_rounds, 1)
        measure([self.write_group], self.args.rounds, self.args.warmup)
        measure([self.one_group], self.args.rounds, self.args.warmup)

    async def run_async(self) -> None:
        await ameasure(self.read_groups, self.args.rounds, self.args.warmup)
        await ameasure([self.whole], self.args.whole_rounds, 1)
        await ameasure([self.write_group], self.args.rounds, self.args.warmup)
        await ameasure([self.one_group], self.args.rounds, self.args.warmup)


def report(console: Console, args: argparse.Namespace, phases: dict[str, Phase]) -> None:
    table = Table(
        title=f"the conversation through the library, H = {args.history:,}, durability=normal"
    )
    columns = ("operation", "library", "median µs", "against", "median µs ", "ratio", "CPU ratio")
    for column in (*columns, "goal"):
        left = column in ("operation", "library", "against")
        table.add_column(column, justify="left" if left else "right")
    middle = args.history // 2 + 1
    names = (
        f"newest {args.tail}: messages.tail({args.tail})",
        f"{args.tail} before #{middle}: tail({args.tail}, before={middle})",
        f"whole conversation ({args.history:,}): messages.list()",
    )
    for index, name in enumerate(names):
        goal = 2.0 if index == 2 else 3.0
        for library, phase in phases.items():
            baseline, op = phase.whole if index == 2 else phase.read_groups[index]
            _row(table, name, library, op, "bare SQL read", baseline, goal)
    for library, phase in phases.items():
        one, batch = phase.write_group
        for against, single in (("same rounds", one), ("rounds of its own", phase.one_group[0])):
            cheaper = single.median_us / batch.median_us
            table.add_row(
                f"append in batches of {args.batch}: add_many, per message",
                library,
                f"{batch.median_us:,.1f}",
                f"one per call: add ({against})",
                f"{single.median_us:,.1f}",
                f"{cheaper:.1f}x cheaper",
                f"{single.cpu_us / batch.cpu_us:.1f}x cheaper",
                f">= 10x {'met' if cheaper >= 10 else 'MISSED'}",
            )
    for library, phase in phases.items():
        one, store = phase.one_group
        against = "store.add_message" + (", awaited" if library.endswith("async") else "")
        _row(table, "append one: add", library, one, against, store, 1.5)
    console.print(table)
    console.print(
        "CPU ratio: the same medians in CPU time of the calling thread (on a busy machine a long"
        " call such as a batch waits for a CPU more often than a short one). The store's own"
        " append: beside the sync library run with no event loop at all, beside the async one"
        " awaited on its loop."
    )


def _row(
    table: Table, name: str, library: str, op: Timed, against: str, base: Timed, goal: float
) -> None:
    ratio = op.median_us / base.median_us
    table.add_row(
        name,
        library,
        f"{op.median_us:,.1f}",
        against,
        f"{base.median_us:,.1f}",
        f"{ratio:.2f}x",
        f"{op.cpu_us / base.cpu_us:.2f}x",
        f"<= {goal:g}x {'met' if ratio <= goal else 'MISSED'}",
    )


if __name__ == "__main__":
    sys.exit(main())
