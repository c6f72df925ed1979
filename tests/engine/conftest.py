"""Fixtures of the execution-engine tests (local to tests/engine); helpers are in
engine_helpers.py and the agents in engine_agents.py (both importable by a worker process).
``async def`` tests run on the suite's per-test loop (tests/conftest.py)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engine.engine_helpers import FakeOpenAI, WorkerProcess


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "tether.db"


@pytest.fixture
def worker_process(db_path: Path, tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    """Start ``tether worker`` processes on db_path; killed (if still alive) after the test,
    their output written to stderr (pytest shows it when the test failed)."""
    started: list[WorkerProcess] = []

    def start(**kwargs: Any) -> WorkerProcess:
        process = WorkerProcess(db_path, tmp_path / "logs", **kwargs)
        started.append(process)
        return process

    yield start
    for process in started:
        process.close()
        with contextlib.suppress(OSError):
            sys.stderr.write(f"\n--- worker {process.pid} output ---\n{process.output()}")


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    yield server
    server.close()
