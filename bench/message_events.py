"""Message events stored by reference (SQLite, schema 15) against full copies, in one process.

One SQLite file (durability ``normal``) and one library handle; the store's ``message_refs``
flag decides how the next ``message.added`` events are stored, so both forms are measured by
the same code, on the same file, interleaved in blocks (CPU time of the calling thread, which
does all the work here):

* appending: per block, B batches of 100 messages (``session.messages.add_many``) and S single
  appends (``session.messages.add``), to a session of H messages (default 10,000); a message in
  a batch, one ``add``, their ratio, and the WAL frames a batch's commit writes (checkpoints off
  while appending);
* reading: a session of each form (H / 2 batched messages and 500 single ones with metadata),
  ``store.list_events`` in pages of 500 (the path of ``GET …/events``, SSE replay and run
  events) and ``store.export_session`` (the ``events_read`` view), per event.

    .venv/bin/python bench/message_events.py
    .venv/bin/python bench/message_events.py --blocks 10 --history 2000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from random import Random
from typing import Any, TypeVar

import tether
from tether.store.sql.store import SqlStore

T = TypeVar("T")

_PHRASES = (
    "the tests fail because module calc imports tokenizer which is missing run pytest again",
    "fix the import keep the change minimal python version project requirements add a helper",
)
_WORDS = [word for phrase in _PHRASES for word in phrase.split(" ")]


def _message(rng: Random) -> dict[str, Any]:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < 200:
        words.append(rng.choice(_WORDS))
    return {"role": "user" if rng.random() < 0.5 else "assistant", "content": " ".join(words)}


def _cpu(call: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, float]:
    """call(*args, **kwargs) and the CPU time it took this thread, µs."""
    started = time.thread_time_ns()
    result = call(*args, **kwargs)
    return result, (time.thread_time_ns() - started) / 1000


def appends(tt: tether.Tether, store: SqlStore, args: argparse.Namespace) -> dict[str, float]:
    """Medians a form: µs a batched message, µs one add, WAL frames a batch."""
    conn: Any = store.database._conn  # type: ignore[attr-defined]
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    page = conn.execute("PRAGMA page_size").fetchone()[0] + 24
    wal = f"{store.location}-wal"
    session = tt.sessions.create(title="appends")
    rng = Random(7)
    for _ in range(0, args.history, 1000):
        session.messages.add_many([_message(rng) for _ in range(1000)])
    found: dict[str, list[float]] = {}
    for _ in range(args.blocks):
        for refs in (False, True):
            store.database.message_refs = refs
            form = "refs" if refs else "full"
            for _ in range(args.batches):
                batch = [_message(rng) for _ in range(100)]
                before = os.path.getsize(wal)
                _, spent = _cpu(session.messages.add_many, batch)
                frames = (os.path.getsize(wal) - before) / page
                found.setdefault(f"{form} frames", []).append(frames)
                found.setdefault(f"{form} batched", []).append(spent / 100)
            for _ in range(args.singles):
                _, spent = _cpu(session.messages.add, **_message(rng))
                found.setdefault(f"{form} one", []).append(spent)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA wal_autocheckpoint = 1000")
    store.database.message_refs = True
    return {name: statistics.median(values) for name, values in found.items()}


def reads(tt: tether.Tether, store: SqlStore, args: argparse.Namespace) -> dict[str, float]:
    """Medians a form: µs CPU a listed event, µs CPU an exported event."""
    sessions: dict[str, str] = {}
    for form in ("full", "refs"):
        store.database.message_refs = form == "refs"
        session = tt.sessions.create(title=form)
        rng = Random(11)
        for _ in range(0, args.history // 2, 100):
            session.messages.add_many([_message(rng) for _ in range(100)])
        for n in range(500):
            session.messages.add(**_message(rng), metadata={"n": n, "t": "ü"})
        sessions[form] = session.id
    store.database.message_refs = True
    loop = asyncio.new_event_loop()
    found: dict[str, list[float]] = {}
    try:
        for _ in range(args.blocks):
            for form, sid in sessions.items():
                after = 0
                while True:
                    listing = store.list_events(session_id=sid, after_id=after, limit=500)
                    page, spent = _cpu(loop.run_until_complete, listing)
                    if not page:
                        break
                    found.setdefault(f"{form} listed", []).append(spent / len(page))
                    after = page[-1].id
                export = store.export_session(sid, owner=None)
                archive, spent = _cpu(loop.run_until_complete, export)
                found.setdefault(f"{form} exported", []).append(spent / len(archive["events"]))
    finally:
        loop.close()
    return {name: statistics.median(values) for name, values in found.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=int, default=10_000, help="messages in the session")
    parser.add_argument("--blocks", type=int, default=20, help="blocks of each form")
    parser.add_argument("--batches", type=int, default=10, help="batches of 100 a block")
    parser.add_argument("--singles", type=int, default=20, help="single appends a block")
    parser.add_argument("--dir", help="where the database file goes (default: a temp dir)")
    args = parser.parse_args()
    if min(args.history, args.blocks, args.batches, args.singles) < 1:
        parser.error("sizes and counts must be >= 1")
    folder = Path(tempfile.mkdtemp(prefix="tether-message-events-", dir=args.dir))
    with tether.open(folder / "tether.db", worker=False) as tt:
        backend = tt.async_backend
        assert isinstance(backend, tether.Service)
        store = backend.store
        assert isinstance(store, SqlStore)
        wrote = appends(tt, store, args)
        read = reads(tt, store, args)
    with open("/proc/loadavg") as load:
        print(f"load average {load.read().split()[:3]}, H = {args.history:,}")
    print("| | full copies | by reference | by reference ÷ full |")
    print("|---|---:|---:|---:|")
    rows = (
        ("a message in a batch of 100, µs CPU", wrote, "batched"),
        ("one `add`, µs CPU", wrote, "one"),
        ("WAL frames a batch of 100", wrote, "frames"),
        ("a listed event (`list_events`), µs CPU", read, "listed"),
        ("an exported event (`export_session`), µs CPU", read, "exported"),
    )
    for label, values, name in rows:
        full, refs = values[f"full {name}"], values[f"refs {name}"]
        print(f"| {label} | {full:.2f} | {refs:.2f} | {refs / full:.2f} |")
    ratio = [wrote[f"{form} one"] / wrote[f"{form} batched"] for form in ("full", "refs")]
    print(f"| one `add` ÷ a message in a batch | {ratio[0]:.1f} | {ratio[1]:.1f} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
