from __future__ import annotations

import asyncio

import pytest

from tether.store.factory import open_store

pytestmark = pytest.mark.postgres


def test_open(pg_url: str) -> None:
    async def main() -> int:
        store = open_store(pg_url)
        try:
            return await store.schema_version()
        finally:
            await store.close()

    assert asyncio.run(main()) == 1
