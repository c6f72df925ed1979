"""tether db copy: SQLite → PostgreSQL → SQLite, everything kept, verified both ways."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from tests.postgres.helpers import FAST, run, service, sql
from tests.sqlite.test_copy_event_ids import deleted_top, next_event_id
from tests.waiting import WAIT
from tether.core.api_key import ApiKey
from tether.core.errors import Conflict, StoreError
from tether.core.ids import new_id
from tether.core.memory import MemoryScope
from tether.core.message import NewMessage, Role
from tether.core.run import RunOptions
from tether.runtime import assistants, stateless
from tether.runtime.agent import default_registry
from tether.runtime.builtin import register
from tether.runtime.checkpoints import Checkpoints
from tether.runtime.service import Service
from tether.runtime.worker import Worker
from tether.store.base import Store
from tether.store.checkpoint import ChannelValue, Checkpoint, ConversationRanges, PendingWrite
from tether.store.copy import NOT_COPIED, TABLES, copy_url
from tether.store.factory import open_store

pytestmark = pytest.mark.postgres

#: A structured item whose exact text (key order, 1.0) must survive the trip. (Not -0.0 nor a
#: float such as 1e300: the copy of the message in its event is jsonb on PostgreSQL, which keeps
#: neither, and the copy's checksums compare events too.)
ITEM = {"type": "function_call", "z": 1.0, "call_id": "c1", "a": [2**70, 0.5, "ü"]}


async def _populate(url: str) -> None:
    """A database with something in every table and every kind of state."""
    store = open_store(url)
    worker = Worker(store, register(default_registry), settings=FAST, worker_id="w")
    worker.start()
    try:
        svc = service(store)
        for n in range(3):
            session = await svc.create_session(
                title=f"Projekt Nr. {n} — «ünïcode»",
                metadata={"n": n, "tags": ["a", "b"], "ratio": 0.5},
                project={"workspace": f"./w{n}"},
                external_key=f"app/user/{n} ✓",
                app="shop",
            )
            await svc.add_message(session.id, Role.USER, f"hello {n} ✓")
            await svc.add_messages(
                session.id, [{"item": ITEM}, {"content": "popped"}, {"content": "cleared"}]
            )
            await svc.pop_message(session.id)
            if n == 0:
                await svc.clear_messages(session.id)
                await svc.add_message(session.id, Role.USER, "after the clear")
            await svc.set_session_memory(session.id, "python", {"version": 3.11, "ok": True})
            done = await svc.create_run(
                session.id, "work", input={"text": "hi", "steps": 2}, timeout_seconds=30.5
            )
            await svc.wait_run(done.id, timeout=WAIT)
            failed = await svc.create_run(session.id, "break", input={"fail": "nope"})
            await svc.wait_run(failed.id, timeout=WAIT)
            waiting = await svc.create_run(  # a delivery that stays pending while the run waits
                session.id,
                "ask",
                input={"wait": "ok?"},
                webhook="http://93.184.216.34/hook" if n < 2 else None,  # the last one closes
            )
            await svc.create_schedule(
                "0 9 * * mon-fri", session_id=session.id, timezone="Europe/Paris", input={"n": n}
            )
            await svc.wait_run(waiting.id, timeout=WAIT)
            queued = await svc.create_run(session.id, "later", if_busy="enqueue")
            await svc.cancel_run(queued.id)
            await store.put_memory(
                scope=MemoryScope.RUN,
                scope_id=waiting.id,
                key="hypothesis",
                value="it is the cache",
                owner=None,
                now=svc.clock.now(),
            )
            await svc.promote_memory(waiting.id, "hypothesis")
        await _checkpoints(svc)
        helper = await assistants.create(
            svc, "echo", name="helper ✓", config={"tone": "dry"}, metadata={"n": 1}
        )
        await assistants.update(svc, helper.id, context={"lang": "fr"})
        await stateless.start(svc, "alone", options=RunOptions(input={"wait": "?"}))
        await svc.set_user_memory("tone", "brief", namespace=("prefs", "style"))
        await svc.set_app_memory("shop", "currency", {"code": "EUR", "rate": 1.0})
        await svc.webhook_secret()
        key = ApiKey(id=new_id(), owner="alice", prefix="tt_abc", created_at=svc.clock.now())
        await store.create_api_key(key, key_hash="0" * 64)
        await store.revoke_api_key(key.id, now=svc.clock.now())
        kept = ApiKey(id=new_id(), owner="bob", prefix="tt_def", created_at=svc.clock.now())
        await store.create_api_key(kept, key_hash="1" * 64)
        later = svc.clock.now() + timedelta(hours=1)
        await store.create_ui_session(
            "2" * 64, key=kept, created_at=svc.clock.now(), expires_at=later
        )
        await svc.close_session(session.id)
    finally:
        await worker.stop(grace=1.0)
        await store.close()


async def _checkpoints(svc: Service) -> None:
    """A graph's checkpoints: binary values, a conversation value, writes (one special)."""
    checkpoints = Checkpoints(svc)
    thread = "graph thread ✓"
    session_id = await checkpoints.session_of(thread, create=True)
    assert session_id is not None
    checkpoint = Checkpoint(
        thread=thread,
        session_id=session_id,
        checkpoint_ns="",
        checkpoint_id="1",
        parent_id=None,
        type="msgpack",
        body=b"\x00\xffbody",
        metadata_type="msgpack",
        metadata=b"\x81meta",
        channels={"messages": "1", "count": "1"},
        run_id="a run",
    )
    await checkpoints.put(
        checkpoint,
        [ChannelValue("count", "1", "msgpack", b"\x00\x01")],
        [ConversationRanges("messages", "1", (), (NewMessage(Role.USER, "hi"),))],
    )
    await checkpoints.put_writes(
        session_id,
        "",
        "1",
        [
            PendingWrite("task", 0, "count", "msgpack", b"\x02", "~path"),
            PendingWrite("task", -3, "__interrupt__", "msgpack", b"\x03"),
        ],
    )


async def _views(url: str) -> list[object]:
    """Everything the Store API shows, in order."""
    store = open_store(url)
    try:
        svc = service(store)
        out: list[object] = []
        for session in (await svc.list_sessions(limit=100)).data:
            out.append(session)
            out.extend((await svc.list_runs(session.id)).data)
            for r in (await svc.list_runs(session.id)).data:
                out.extend(await svc.list_steps(r.id))
                out.extend(await svc.list_run_memory(r.id))
            out.extend((await svc.list_messages(session.id)).data)
            everything = (await svc.list_messages(session.id, include_removed=True)).data
            out.extend(everything)
            out.extend(json.dumps(m.item) for m in everything)  # key order too
            out.extend(await svc.list_session_memory(session.id))
            out.extend(await svc.list_events(session_id=session.id, limit=1000))
        out.extend(await svc.list_user_memory(namespace=None))
        out.extend(await svc.list_app_memory("shop"))
        out.extend((await svc.list_schedules()).data)
        out.append(await svc.webhook_secret())
        out.extend(await store.list_api_keys())
        for helper in await assistants.list_all(svc):
            out.extend(await assistants.versions(svc, helper.id))
        out.append(await store.ui_session_owner("2" * 64, now=svc.clock.now()))
        return out
    finally:
        await store.close()


def test_sqlite_to_postgres_and_back_keeps_everything(tmp_path: Path, pg_url: str) -> None:
    source = f"sqlite:///{tmp_path / 'tether.db'}"
    back = str(tmp_path / "back.db")
    run(_populate(source))

    there = run(copy_url(source, pg_url))
    assert there.verified
    assert all(t.source_rows > 0 for t in there.tables), there.to_data()
    assert run(_views(pg_url)) == run(_views(source))

    home = run(copy_url(pg_url, back))
    assert home.verified
    assert [t.source_checksum for t in home.tables] == [t.source_checksum for t in there.tables]
    assert run(_views(back)) == run(_views(source))

    async def new_event_follows_the_copied_ones() -> None:
        store: Store = open_store(pg_url)
        try:
            session = (await service(store).list_sessions(status="active")).data[0]
            before = await store.list_events(session_id=session.id, limit=1000)
            await service(store).add_message(session.id, Role.USER, "after the move")
            latest = (await store.list_events(session_id=session.id, limit=1000))[-1]
            everything = sql(pg_url, "SELECT max(id) FROM events")[0][0]
            assert latest.id == everything > max(e.id for e in before)
        finally:
            await store.close()

    run(new_event_follows_the_copied_ones())


def test_a_non_empty_target_is_refused_unless_told(tmp_path: Path, pg_url: str) -> None:
    source = str(tmp_path / "tether.db")
    run(_populate(source))
    run(copy_url(source, pg_url))
    with pytest.raises(Conflict, match="not empty"):
        run(copy_url(source, pg_url))
    seen: list[tuple[str, str, int, int]] = []
    report = run(
        copy_url(source, pg_url, replace=True, batch=7, progress=lambda *p: seen.append(p))
    )
    assert report.verified
    events = [p for p in seen if p[1] == "events"]
    assert [p[0] for p in events] == sorted(p[0] for p in events)  # copy, then verify
    total = next(t.source_rows for t in report.tables if t.name == "events")
    assert events[-1] == ("verify", "events", total, total)
    assert ("copy", "events", total, total) in events and len(events) > 2


def test_the_cli_copies_and_prints_a_verdict(tmp_path: Path, pg_url: str) -> None:
    source = tmp_path / "tether.db"
    run(_populate(str(source)))
    cli = [sys.executable, "-m", "tether.cli", "db", "copy", "--from", f"sqlite:///{source}"]

    done = subprocess.run([*cli, "--to", pg_url, "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["verified"] is True
    assert data["tables"]["events"]["source_rows"] == data["tables"]["events"]["target_rows"] > 0
    assert {name for name in data["tables"]} == {t.name for t in TABLES}

    again = subprocess.run([*cli, "--to", pg_url], capture_output=True, text=True)
    assert again.returncode == 1
    assert "not empty" in again.stderr and "--force" in again.stderr

    forced = subprocess.run([*cli, "--to", pg_url, "--force"], capture_output=True, text=True)
    assert forced.returncode == 0, forced.stderr
    assert "verified" in forced.stdout


def test_a_difference_is_reported_not_hidden(tmp_path: Path, pg_url: str) -> None:
    source = str(tmp_path / "tether.db")
    run(_populate(source))
    sql(
        pg_url,
        "CREATE FUNCTION shout() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        " NEW.content = upper(NEW.content); RETURN NEW; END $$",
    )
    sql(
        pg_url,
        "CREATE TRIGGER shout BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION shout()",
    )
    report = run(copy_url(source, pg_url))
    assert not report.verified
    assert [t.name for t in report.tables if not t.ok] == ["messages"]


def test_every_table_of_both_schemas_is_copied(tmp_path: Path, pg_url: str) -> None:
    copied = {t.name for t in TABLES} | {"schema_version"} | NOT_COPIED
    on_postgres = sql(
        pg_url,
        "SELECT table_name FROM information_schema.tables"
        " WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
    )
    assert {r[0] for r in on_postgres} == copied
    store = open_store(str(tmp_path / "t.db"))
    rows = store.database._conn.execute(  # type: ignore[attr-defined]
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    asyncio.run(store.close())
    assert {r[0] for r in rows} == copied


def test_every_column_of_every_table_on_postgres_is_copied(pg_url: str) -> None:
    for table in TABLES:
        rows = sql(
            pg_url,
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_schema = 'public' AND table_name = %s",
            table.name,
        )
        assert sorted(r[0] for r in rows) == sorted(table.columns), table.name


def test_a_postgres_column_the_copy_does_not_know_is_refused(tmp_path: Path, pg_url: str) -> None:
    source = str(tmp_path / "t.db")
    run(_populate(source))
    sql(pg_url, "ALTER TABLE steps ADD COLUMN cost numeric")
    with pytest.raises(StoreError, match=r"table steps has columns the copy would drop \(cost\)"):
        run(copy_url(source, pg_url))
    assert sql(pg_url, "SELECT count(*) FROM sessions") == [(0,)]


def test_new_events_follow_every_id_either_database_handed_out(tmp_path: Path, pg_url: str) -> None:
    source, back = str(tmp_path / "source.db"), str(tmp_path / "back.db")
    kept, top = run(deleted_top(source))
    assert run(copy_url(source, pg_url)).verified
    assert run(next_event_id(pg_url, kept)) > top  # the ids SQLite deleted
    _, pg_top = run(deleted_top(pg_url))
    assert run(copy_url(pg_url, back)).verified
    assert run(next_event_id(back, kept)) > pg_top  # the ids PostgreSQL deleted
    for _ in range(3):  # PostgreSQL's own ids climb above the source's
        _, pg_top = run(deleted_top(pg_url))
    assert run(copy_url(source, pg_url, replace=True)).verified
    assert run(next_event_id(pg_url, kept)) > pg_top  # its own, though the copy replaced them
