"""Fixtures of the LangGraph-compatibility tests: one real server for the folder, the official
``langgraph-sdk`` clients (sync and async) for two owners, and the native API beside them.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.langgraph.lgkit import Server, start_server


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the folder: every test makes its own threads."""
    running = start_server(tmp_path_factory.mktemp("langgraph"))
    yield running
    running.stop()


@pytest.fixture
def client(server: Server) -> Iterator[SyncLangGraphClient]:
    """Alice's official sync client."""
    with server.sdk("alice") as sdk:
        yield sdk


@pytest.fixture
def bob(server: Server) -> Iterator[SyncLangGraphClient]:
    with server.sdk("bob") as sdk:
        yield sdk


@pytest.fixture
def native(server: Server) -> Iterator[httpx.Client]:
    """Alice's client of the native /v1 API."""
    with server.native("alice") as http:
        yield http


@pytest.fixture
def raw(server: Server) -> Iterator[httpx.Client]:
    """Alice's plain HTTP client with x-api-key."""
    with server.raw("alice") as http:
        yield http
