"""Fixtures of the PostgreSQL tests: a fresh database per test, cloned from a template."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..pg import Databases, template_databases


@pytest.fixture(scope="session")
def pg_databases() -> Iterator[Databases]:
    """The server (skipped, or failed under CI=true, when unreachable) and its template."""
    yield from template_databases()


@pytest.fixture
def pg(pg_databases: Databases) -> Iterator[Databases]:
    """Makes databases for this test; they are dropped when it ends."""
    yield pg_databases
    pg_databases.drop_made()


@pytest.fixture
def pg_url(pg: Databases) -> str:
    """A fresh, migrated, empty database."""
    return pg.new_url()
