"""Graphs run by ``tether worker --graph`` processes beside a ``tether serve --workers 0``: a
worker without the graph leaves its runs to one that has it; a graph that cannot be loaded
stops the command with one line."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.langgraph.lgkit import Server, said, wire
from tests.serving import TETHER, cli, serve

GRAPH = f"weather={Path(__file__).resolve().parent / 'graphs' / 'weather.py'}:graph"

pytestmark = pytest.mark.slow


class Worker:
    """``tether worker`` on a database, started once it says so."""

    def __init__(self, db: Path, *args: str) -> None:
        self.process = subprocess.Popen(
            [*TETHER, "worker", "--db", str(db), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.log: list[str] = []
        started = threading.Event()

        def read() -> None:
            assert self.process.stderr is not None
            with self.process.stderr:
                for line in self.process.stderr:
                    self.log.append(line)
                    if " started on " in line:
                        started.set()
            started.set()

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        if not started.wait(60) or self.process.poll() is not None:
            self.stop()
            pytest.fail("tether worker did not start:\n" + "".join(self.log))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(30)
        self._reader.join(30)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Server]:
    running = serve(
        Server, tmp_path / "tether.db", "--workers", "0", "--graph", GRAPH, owners=("alice",)
    )
    yield running
    running.stop()


def test_only_a_worker_with_the_graph_runs_it(served: Server) -> None:
    without = Worker(served.db)
    with_graph = Worker(served.db, "--graph", GRAPH)
    try:
        with served.sdk("alice") as client:
            tid = client.threads.create()["thread_id"]
            asked = wire(client.runs.wait(tid, "weather", input=said("and Bern?")))
            assert asked["__interrupt__"][0]["value"]["tool_calls"][0]["args"] == {"city": "Bern"}
            done = wire(client.runs.wait(tid, "weather", command={"resume": "yes"}))
            assert done["messages"][-1]["content"] == "The weather: sunny in Bern."
            assert [r["status"] for r in client.runs.list(tid)] == ["success"]
    finally:
        without.stop()
        with_graph.stop()
    assert not any("weather" in line for line in without.log)


def test_a_graph_that_cannot_be_loaded_is_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    for command in ("serve", "worker"):
        done = cli(
            command, "--db", tmp_path / "t.db", "--graph", "w=no_such_module_here:graph", env=env
        )
        assert done.returncode != 0
        lines = done.stderr.strip().splitlines()
        assert "cannot import graph module 'no_such_module_here'" in lines[-1], done.stderr
