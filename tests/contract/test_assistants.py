"""Assistants and temporary sessions on both backends: versions numbered after the last, the
chosen one is what the assistant is, owners are apart; a temporary session is among the finished
ones only once its runs have ended and it has been idle long enough."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from tests.support import OWNER, WORKER, Factory
from tether.core.assistant import Assistant
from tether.core.clock import ManualClock
from tether.core.errors import AlreadyExists, NotFound
from tether.core.ids import new_id
from tether.core.session import Session
from tether.core.status import RunStatus, SessionStatus
from tether.runtime import stateless
from tether.store.base import Store


def _assistant(clock: ManualClock, owner: str = OWNER) -> Assistant:
    now = clock.now()
    return Assistant(
        id=new_id(),
        owner=owner,
        graph_id="echo",
        name="greeter",
        version=1,
        created_at=now,
        updated_at=now,
        config={"tone": "warm"},
        metadata={"team": "a"},
    )


async def test_versions_and_the_chosen_one(store: Store, clock: ManualClock) -> None:
    made = await store.create_assistant(_assistant(clock))
    with pytest.raises(AlreadyExists):
        await store.create_assistant(made)
    clock.advance(1)
    second = await store.update_assistant(
        made.id, owner=OWNER, changes={"config": {"tone": "dry"}}, now=clock.now()
    )
    assert (second.version, second.config, second.name) == (2, {"tone": "dry"}, "greeter")
    assert second.created_at == made.created_at
    assert second.updated_at == clock.now()
    assert await store.get_assistant(made.id, owner=OWNER) == second
    versions = await store.list_assistant_versions(made.id, owner=OWNER, limit=10)
    assert [(v.version, v.config) for v in versions] == [
        (2, {"tone": "dry"}),
        (1, {"tone": "warm"}),
    ]
    assert [
        v.version
        for v in await store.list_assistant_versions(made.id, owner=OWNER, limit=1, offset=1)
    ] == [1]
    clock.advance(1)
    first = await store.set_assistant_version(made.id, 1, owner=OWNER, now=clock.now())
    assert (first.version, first.config, first.created_at) == (1, {"tone": "warm"}, made.created_at)
    assert await store.get_assistant(made.id, owner=OWNER) == first
    third = await store.update_assistant(
        made.id, owner=OWNER, changes={"name": "third"}, now=clock.now()
    )
    assert (third.version, third.config) == (3, {"tone": "warm"})
    with pytest.raises(NotFound):
        await store.set_assistant_version(made.id, 9, owner=OWNER, now=clock.now())


async def test_owners_are_apart_and_delete_removes_versions(
    store: Store, clock: ManualClock
) -> None:
    mine = await store.create_assistant(_assistant(clock))
    theirs = await store.create_assistant(_assistant(clock, owner="other"))
    assert await store.get_assistant(theirs.id, owner=OWNER) is None
    assert [a.id for a in await store.list_assistants(owner=OWNER)] == [mine.id]
    for call in (
        store.update_assistant(theirs.id, owner=OWNER, changes={"name": "x"}, now=clock.now()),
        store.list_assistant_versions(theirs.id, owner=OWNER, limit=5),
        store.delete_assistant(theirs.id, owner=OWNER),
    ):
        with pytest.raises(NotFound):
            await call
    await store.delete_assistant(mine.id, owner=OWNER)
    assert await store.list_assistants(owner=OWNER) == []
    with pytest.raises(NotFound):
        await store.list_assistant_versions(mine.id, owner=OWNER, limit=5)
    erased = await store.erase_owner_data("other")
    assert (erased["assistants"], erased["assistant_versions"]) == (1, 1)


async def test_an_id_another_owner_holds_is_already_taken(store: Store, clock: ManualClock) -> None:
    theirs = await store.create_assistant(_assistant(clock, owner="other"))
    with pytest.raises(AlreadyExists):
        await store.create_assistant(replace(_assistant(clock), id=theirs.id))
    assert await store.get_assistant(theirs.id, owner=OWNER) is None
    assert (await store.get_assistant(theirs.id, owner="other")) == theirs


async def test_temporary_sessions_are_finished_once_their_runs_end(
    store: Store, clock: ManualClock, make: Factory
) -> None:
    now = clock.now()
    temporary = await store.create_session(
        Session(
            id=new_id(),
            owner=OWNER,
            title="stateless run",
            status=SessionStatus.ACTIVE,
            created_at=now,
            updated_at=now,
            last_activity_at=now,
        ),
        temporary=True,
    )
    ordinary = await make.session()
    run = await make.held(temporary.id)
    await make.held(ordinary.id)
    later = clock.now() + timedelta(seconds=60)  # (after the run's end, too)
    assert await store.finished_temporary_sessions(idle_before=later) == []  # a run goes on
    clock.advance(5)  # (a session's activity is recorded to the second)
    await store.finish_run(run.id, worker_id=WORKER, status=RunStatus.COMPLETED, now=clock.now())
    assert await store.finished_temporary_sessions(idle_before=clock.now()) == []  # not idle
    assert await store.finished_temporary_sessions(idle_before=later) == [temporary.id]
    swept = await stateless.sweep(store, replace_clock(clock, 120), idle_seconds=30)
    assert swept == 1
    assert await store.get_session(temporary.id) is None
    assert await store.get_session(ordinary.id) is not None


def replace_clock(clock: ManualClock, seconds: float) -> ManualClock:
    """A clock seconds ahead of clock."""
    return ManualClock(clock.now() + timedelta(seconds=seconds))
