"""TetherStore: a graph's long-term memory is the owner's user memory."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.integrations.lgkit import langgraph_or_skip

langgraph_or_skip()

import tether  # noqa: E402
from tests.support import Backend  # noqa: E402
from tether.integrations.langgraph import TetherStore  # noqa: E402
from tether.runtime.facade import Tether  # noqa: E402


@pytest.fixture
def tt(backend: Backend, db_url: str) -> Iterator[Tether]:
    handle = tether.open(db_url, owner="alice", worker=False)
    yield handle
    handle.close()


def test_items_are_user_memory(tt: Tether) -> None:
    store = TetherStore(tt)
    store.put(("prefs", "style"), "tone", {"value": "brief", "level": 2})
    item = store.get(("prefs", "style"), "tone")
    assert item is not None and item.value == {"value": "brief", "level": 2}
    assert item.namespace == ("prefs", "style") and item.key == "tone"
    # the same item through the library: what the UI and the APIs show
    found = tt.backend.get_user_memory("tone", namespace=("prefs", "style"))
    assert found.value == {"value": "brief", "level": 2}
    store.delete(("prefs", "style"), "tone")
    assert store.get(("prefs", "style"), "tone") is None
    store.delete(("prefs", "style"), "tone")  # deleting what is gone is no error


def test_search_filters_and_pages(tt: Tether) -> None:
    store = TetherStore(tt)
    for n in range(6):
        store.put(
            ("docs", "a" if n % 2 else "b"), f"k{n}", {"n": n, "kind": "odd" if n % 2 else "even"}
        )
    store.put(("other",), "x", {"n": 99})
    everything = store.search(("docs",), limit=100)
    assert {i.key for i in everything} == {f"k{n}" for n in range(6)}
    odd = store.search(("docs",), filter={"kind": "odd"})
    assert {i.key for i in odd} == {"k1", "k3", "k5"}
    big = store.search(("docs",), filter={"n": {"$gte": 3}, "kind": {"$ne": "odd"}})
    assert {i.key for i in big} == {"k4"}
    first, second = store.search(("docs",), limit=3), store.search(("docs",), limit=3, offset=3)
    assert len(first) == 3 and len(second) == 3
    assert {i.key for i in first} | {i.key for i in second} == {f"k{n}" for n in range(6)}
    assert all(i.score is None for i in store.search(("docs",), query="anything"))  # no index


def test_namespaces_list_with_conditions_and_depth(tt: Tether) -> None:
    store = TetherStore(tt)
    for ns in [("a", "x", "1"), ("a", "y", "1"), ("b", "x", "2")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == [("a", "x", "1"), ("a", "y", "1"), ("b", "x", "2")]
    assert store.list_namespaces(prefix=("a",)) == [("a", "x", "1"), ("a", "y", "1")]
    assert store.list_namespaces(suffix=("1",)) == [("a", "x", "1"), ("a", "y", "1")]
    assert store.list_namespaces(prefix=("*", "x")) == [("a", "x", "1"), ("b", "x", "2")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("b",)]
    assert store.list_namespaces(limit=1, offset=1) == [("a", "y", "1")]


def test_async_methods(tt: Tether, loop: asyncio.AbstractEventLoop) -> None:
    store = TetherStore(tt)

    async def scenario() -> None:
        await store.aput(("n",), "k", {"v": 1})
        assert (await store.aget(("n",), "k")).value == {"v": 1}  # type: ignore[union-attr]
        assert [i.key for i in await store.asearch(("n",))] == ["k"]
        assert await store.alist_namespaces() == [("n",)]
        await store.adelete(("n",), "k")
        assert await store.aget(("n",), "k") is None

    loop.run_until_complete(scenario())
