"""Thread search, count, state and history cost the same whatever number of threads an owner
has: filters, sort and page run in the database, and only the page's threads are built. Counted
in store calls (the store under the service), never timed."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from tether.api.langgraph.threads import count_threads, get_history, get_state, search_threads
from tether.runtime import builtin
from tether.runtime.agent import AgentRegistry
from tether.runtime.service import Service
from tether.store.base import Store
from tether.store.sqlite.store import SqliteStore


class CountingStore:
    """A store that counts the calls made to it."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._store, name)
        if not callable(found):
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return found(*args, **kwargs)

        return counted


@pytest.fixture
def counted(tmp_path: Path) -> Iterator[tuple[Service, CountingStore]]:
    store = SqliteStore(tmp_path / "t.db")
    counting = CountingStore(store)
    svc = Service(cast(Store, counting), agents=builtin.register(AgentRegistry()), owner="alice")
    yield svc, counting
    asyncio.run(store.close())


def _body(response: Any) -> Any:
    return json.loads(response.body)


def _calls(counting: CountingStore, call: Callable[[], Any]) -> Counter[str]:
    counting.calls.clear()
    asyncio.run(call())
    return Counter(counting.calls)


def _search_and_count(svc: Service, counting: CountingStore, total: int) -> Counter[str]:
    """Grow the owner's threads to total; the store calls of one search page."""

    async def grow() -> None:
        while await svc.count_sessions() < total:
            session = await svc.create_session(metadata={"kind": "chat"})
            await svc.add_message(session.id, "user", "hi")

    asyncio.run(grow())
    page: list[Any] = []

    async def search() -> None:
        body = {"limit": 3, "metadata": {"kind": "chat"}, "status": "idle"}
        page.extend(_body(await search_threads(svc, body)))

    calls = _calls(counting, search)
    assert len(page) == 3 and all(t["status"] == "idle" for t in page)
    assert [t["values"]["messages"][0]["content"] for t in page] == ["hi"] * 3

    async def count() -> None:
        assert _body(await count_threads(svc, {"status": "idle"})) == total

    assert _calls(counting, count) == Counter({"count_sessions": 1})
    return calls


def test_search_and_count_read_only_the_page(counted: tuple[Service, CountingStore]) -> None:
    svc, counting = counted
    few = _search_and_count(svc, counting, 5)
    many = _search_and_count(svc, counting, 40)
    assert few == many, "searching 40 threads read more than searching 5"
    assert many["search_sessions"] == 1 and many["run_activity"] == 1
    assert many["list_messages"] == 3  # the page's conversations, nothing else


def test_state_and_history_build_only_what_is_asked(
    counted: tuple[Service, CountingStore],
) -> None:
    svc, counting = counted

    async def setup() -> str:
        session = await svc.create_session()
        for i in range(30):
            await svc.add_message(session.id, "user", f"m{i}")
        return session.id

    thread = asyncio.run(setup())
    states: list[Any] = []

    async def history() -> None:
        states.extend(_body(await get_history(svc, thread, {"limit": 2})))

    calls = _calls(counting, history)
    assert len(states) == 2
    assert [len(s["values"]["messages"]) for s in states] == [30, 29]
    assert (
        states[1]["checkpoint"]["checkpoint_id"] == states[0]["parent_checkpoint"]["checkpoint_id"]
    )
    assert calls["list_messages"] == 1 and calls["list_runs"] == 0

    async def state() -> None:
        current = _body(await get_state(svc, thread))
        assert current["checkpoint"] == states[0]["checkpoint"]

    assert _calls(counting, state)["list_messages"] == 1
