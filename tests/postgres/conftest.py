"""Fixtures of the PostgreSQL tests: a fresh database per test, cloned from a template
(``pg_databases``, shared with the contract suite, lives in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.pg import Databases


@pytest.fixture
def pg(pg_databases: Databases) -> Iterator[Databases]:
    """Makes databases for this test; they are dropped when it ends."""
    yield pg_databases
    pg_databases.drop_made()


@pytest.fixture
def pg_url(pg: Databases) -> str:
    """A fresh, migrated, empty database."""
    return pg.new_url()
