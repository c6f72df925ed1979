"""Fixtures for the HTTP tests: one real server, and a client per owner."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.api.httpkit import Server, start_server


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the run: every test makes its own sessions."""
    running = start_server(tmp_path_factory.mktemp("server"))
    yield running
    running.stop()


@pytest.fixture
def alice(server: Server) -> Iterator[httpx.Client]:
    with server.client("alice") as client:
        yield client


@pytest.fixture
def bob(server: Server) -> Iterator[httpx.Client]:
    with server.client("bob") as client:
        yield client
