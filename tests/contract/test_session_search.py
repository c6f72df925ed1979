"""Searching sessions in the database (filters, sort, page, count) and reading what the runs of
many sessions are doing in one call: the same answers on both backends."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import WORKER, Factory
from tether.core.clock import ManualClock
from tether.core.errors import NotFound, UsageError
from tether.core.run import Activity, ErrorInfo
from tether.core.status import RunStatus
from tether.runtime.service import Service
from tether.store.base import Store


async def _sessions(make: Factory, clock: ManualClock, count: int, **kwargs: Any) -> list[str]:
    ids = []
    for _ in range(count):
        clock.advance(1)
        ids.append((await make.session(**kwargs)).id)
    return ids


async def test_search_sorts_and_pages_in_the_database(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    ids = await _sessions(make, clock, 7)
    await make.session(owner="bob")  # never in alice's results
    newest_first = await store.search_sessions(owner="alice", limit=100)
    assert [s.id for s in newest_first] == ids[::-1]
    page = await store.search_sessions(owner="alice", descending=False, limit=3, offset=2)
    assert [s.id for s in page] == ids[2:5]
    by_id = await store.search_sessions(owner="alice", sort="id", descending=False, limit=100)
    assert [s.id for s in by_id] == sorted(ids)
    clock.advance(1)
    await make.message(ids[0])  # activity: the oldest session is now the most recently active
    active = await store.search_sessions(owner="alice", sort="activity_at", limit=2)
    assert [s.id for s in active] == [ids[0], ids[-1]]
    updated = await store.search_sessions(owner="alice", sort="updated_at", limit=1)
    assert [s.id for s in updated] == [ids[0]]
    assert await store.count_sessions(owner="alice") == 7
    assert await store.search_sessions(owner="alice", limit=5, offset=100) == []


async def test_search_filters_by_metadata_project_and_ids(
    store: Store, make: Factory, clock: ManualClock, service: Service
) -> None:
    plain = await _sessions(make, clock, 2)
    shop = await _sessions(make, clock, 2, project={"name": "shop", "size": 3})
    tagged = await service.create_session(metadata={"team": "red"}, project={"name": "shop"})
    assert {s.id for s in await store.search_sessions(owner="alice", project={"name": "shop"})} == {
        *shop,
        tagged.id,
    }
    both = await store.search_sessions(
        owner="alice", project={"name": "shop"}, metadata={"team": "red"}
    )
    assert [s.id for s in both] == [tagged.id]
    assert await store.count_sessions(owner="alice", project={"name": "shop", "size": 3}) == 2
    among = await store.search_sessions(owner="alice", ids=[plain[0], shop[1], "not-an-id"])
    assert {s.id for s in among} == {plain[0], shop[1]}
    assert await store.count_sessions(owner="bob", ids=[plain[0]]) == 0


@pytest.mark.parametrize("key", ['x"]', 'a"."b', "$", "a.b", "[0]", "", 'q"'])
async def test_a_filter_key_is_one_key_whatever_its_characters(
    store: Store, service: Service, clock: ManualClock, key: str
) -> None:
    """A key of a metadata or project filter names one top-level key, never a JSON path: a
    quote or bracket in it is an ordinary character (it was a store error on SQLite), and a
    dot does not reach into a nested object."""
    named = await service.create_session(metadata={key: 1}, project={key: 1})
    await service.create_session(metadata={"a": {"b": 1}, "x": [1]}, project={"a": {"b": 1}})
    wanted = {key: 1}
    assert [s.id for s in await store.search_sessions(owner="alice", metadata=wanted)] == [named.id]
    assert [s.id for s in await store.search_sessions(owner="alice", project=wanted)] == [named.id]
    assert await store.count_sessions(owner="alice", metadata=wanted, project=wanted) == 1
    listed = await store.list_sessions(owner="alice", now=clock.now(), metadata=wanted)
    assert [s.id for s in listed.data] == [named.id]


async def test_search_text_is_found_anywhere_ignoring_ascii_case_never_as_a_pattern(
    store: Store, service: Service, make: Factory, clock: ManualClock
) -> None:
    """The sessions' query and the runs' q: text found anywhere in the fields they search,
    ASCII letters in either case, % and _ and \\ as themselves."""
    titled = await service.create_session(title="Fix the Parser")
    tagged = await service.create_session(metadata={"ticket": "50%_OFF\\now"})
    keyed = await service.create_session(external_key="Shop/Alice")
    await service.create_session(title="fix the lexer")

    async def sessions(text: str) -> set[str]:
        page = await store.list_sessions(owner="alice", now=clock.now(), query=text)
        return {s.id for s in page.data}

    assert await sessions("THE PARSER") == {titled.id}
    assert await sessions("50%_off\\") == {tagged.id}
    assert await sessions("5_%") == set()  # not a pattern
    assert await sessions("%") == {tagged.id}
    assert await sessions("shop/al") == {keyed.id}
    first = await make.run(titled.id, goal="Rename the MODULE", input={"path": "a_b%c"})
    second = await make.run(keyed.id, goal="other", agent="Coder")

    async def runs(text: str) -> set[str]:
        page = await store.list_owner_runs(owner="alice", now=clock.now(), query=text)
        return {r.id for r in page.data}

    assert await runs("the module") == {first.id}
    assert await runs("a_b%") == {first.id}
    assert await runs("a%b") == set()
    assert await runs("coder") == {second.id}


async def test_activity_says_what_the_runs_of_many_sessions_are_doing(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    idle, busy, queued, waiting, failed, done = await _sessions(make, clock, 6)
    held = await make.held(busy)
    await make.waiting(waiting)
    bad = await make.held(failed)
    await store.finish_run(
        bad.id,
        worker_id=WORKER,
        now=clock.now(),
        status=RunStatus.FAILED,
        error=ErrorInfo("ValueError", "boom"),
    )
    good = await make.held(done)
    await store.finish_run(
        good.id, worker_id=WORKER, now=clock.now(), status=RunStatus.COMPLETED, output={}
    )
    await make.run(queued)  # ready: claimed by nobody here
    everyone = [idle, busy, queued, waiting, failed, done]
    found = await store.run_activity(everyone, owner="alice")
    assert idle not in found  # no runs
    running = found[busy].running
    assert running is not None and running.id == held.id
    assert running.context is None  # read without contexts
    assert found[queued].ready is not None and found[queued].activity is Activity.BUSY
    assert found[waiting].waiting is not None and found[waiting].activity is Activity.WAITING
    assert found[failed].last is not None and found[failed].activity is Activity.ERROR
    assert found[done].activity is Activity.IDLE
    assert await store.run_activity(everyone, owner="bob") == {}

    by_activity = {
        activity: {s.id for s in await store.search_sessions(owner="alice", activity=activity)}
        for activity in Activity
    }
    assert by_activity == {
        Activity.IDLE: {idle, done},
        Activity.BUSY: {busy, queued},
        Activity.WAITING: {waiting},
        Activity.ERROR: {failed},
    }
    assert await store.count_sessions(owner="alice", activity=Activity.BUSY) == 2
    ordered = await store.search_sessions(owner="alice", sort="activity", descending=False)
    assert [s.id for s in ordered][:2] == sorted([busy, queued])  # busy < error < idle < waiting
    assert ordered[-1].id == waiting


async def test_the_service_scopes_search_and_activity_to_its_owner(
    service: Service, make: Factory
) -> None:
    mine = await service.create_session(title="mine")
    theirs = await make.session(owner="bob")
    await make.held(theirs.id, owner="bob")
    assert [s.id for s in await service.search_sessions(ids=[mine.id, theirs.id])] == [mine.id]
    activity = await service.run_activity([mine.id, theirs.id])
    assert activity[theirs.id].activity is Activity.IDLE  # nothing of bob's shows
    assert await service.count_sessions() == 1
    with pytest.raises(UsageError):
        await service.search_sessions(sort="title")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        await service.search_sessions(offset=-1)
    with pytest.raises(UsageError):
        await service.search_sessions(activity="asleep")


async def test_the_conversation_is_read_whole_for_its_owner(
    service: Service, make: Factory
) -> None:
    session = await service.create_session()
    for i in range(5):
        await service.add_message(session.id, "user", f"m{i}")
    assert [m.content for m in await service.conversation(session.id)] == [
        f"m{i}" for i in range(5)
    ]
    assert [m.seq for m in await service.conversation(session.id, after_seq=3)] == [4, 5]
    other = await make.session(owner="bob")
    with pytest.raises(NotFound):
        await service.conversation(other.id)
