"""LangGraph thread search and count against the number of threads an owner has.

    .venv/bin/python bench/langgraph_threads.py [--sizes 100,1000] [--repeat 5]

Calls the LangGraph layer's route functions (``POST /threads/search`` and ``/threads/count``)
directly, on a service over a SQLite file in a temporary folder, for an owner with N threads of
five messages each, N growing: a search page of 10, the same with a ``status`` filter, and a
count with it. Medians of `repeat` calls, in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from tether.api.langgraph.threads import count_threads, search_threads
from tether.runtime.service import Service
from tether.store.sqlite.store import SqliteStore

CALLS: dict[str, Callable[[Service], Awaitable[Any]]] = {
    "search, limit 10": lambda svc: search_threads(svc, {"limit": 10}),
    "search status=idle, limit 10": lambda svc: search_threads(
        svc, {"limit": 10, "status": "idle"}
    ),
    "count status=idle": lambda svc: count_threads(svc, {"status": "idle"}),
}


async def measure(folder: Path, sizes: list[int], repeat: int) -> dict[int, dict[str, float]]:
    store = SqliteStore(folder / "threads.db")
    svc = Service(store, owner="alice")
    found: dict[int, dict[str, float]] = {}
    made = 0
    try:
        for size in sizes:
            while made < size:
                session = await svc.create_session(metadata={"kind": "chat"})
                for i in range(5):
                    await svc.add_message(session.id, "user", f"message {i}")
                made += 1
            found[size] = {}
            for name, call in CALLS.items():
                samples = []
                for _ in range(repeat):
                    started = time.perf_counter()
                    await call(svc)
                    samples.append(time.perf_counter() - started)
                found[size][name] = statistics.median(samples) * 1000
    finally:
        await store.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000", help="threads of the owner")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as folder:
        found = asyncio.run(measure(Path(folder), sizes, args.repeat))
    table = Table(title="LangGraph threads: median ms per call", title_justify="left")
    table.add_column("owner's threads", justify="right")
    for name in CALLS:
        table.add_column(name, justify="right")
    for size, row in found.items():
        table.add_row(f"{size:,}", *(f"{row[name]:.1f}" for name in CALLS))
    Console().print(table)


if __name__ == "__main__":
    main()
