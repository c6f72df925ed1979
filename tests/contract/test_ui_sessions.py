"""Web UI sessions at the store and runtime: a random token stored hashed, acting for its key's
owner until it expires, is ended, or its key is revoked; never the key itself."""

from __future__ import annotations

from tether.core.clock import ManualClock
from tether.runtime.api_keys import ApiKeys, hash_key
from tether.runtime.ui_sessions import UiSessions
from tether.store.base import Store
from tether.store.sql.store import SqlStore


async def test_a_session_acts_for_its_keys_owner_until_it_expires(
    store: Store, clock: ManualClock
) -> None:
    keys = ApiKeys(store, clock=clock)
    _, secret = await keys.create("alice")
    sessions = UiSessions(store, clock=clock, lifetime=3600)
    token = await sessions.start(secret)
    assert token is not None and token != secret and secret not in token
    assert await sessions.owner_of(token) == "alice"
    assert await sessions.owner_of(token + "x") is None
    clock.advance(3599)
    assert await sessions.owner_of(token) == "alice"
    clock.advance(1)
    assert await sessions.owner_of(token) is None


async def test_only_the_tokens_hash_is_stored(store: Store, clock: ManualClock) -> None:
    assert isinstance(store, SqlStore)
    keys = ApiKeys(store, clock=clock)
    _, secret = await keys.create("alice")
    token = await UiSessions(store, clock=clock).start(secret)
    assert token is not None
    async with store.database.read() as tx:
        rows = await tx.all("copy_page_ui_sessions", after_token_hash="", limit=10)
    assert [row["token_hash"] for row in rows] == [hash_key(token)]
    assert all(token not in str(value) for row in rows for value in dict(row).values())


async def test_logout_and_revocation_end_sessions(store: Store, clock: ManualClock) -> None:
    keys = ApiKeys(store, clock=clock)
    key, secret = await keys.create("alice")
    other, other_secret = await keys.create("alice")
    sessions = UiSessions(store, clock=clock)
    first, second, kept = [await sessions.start(s) for s in (secret, secret, other_secret)]
    assert first and second and kept

    await sessions.end(first)
    await sessions.end(first)  # idempotent
    assert await sessions.owner_of(first) is None
    assert await sessions.owner_of(second) == "alice"

    await keys.revoke(key.id)
    assert await sessions.owner_of(second) is None
    assert await sessions.owner_of(kept) == "alice"  # another key's session goes on
    assert await sessions.start(secret) is None  # a revoked key starts none
    assert await sessions.start("tk_unknown") is None
    await keys.revoke(other.id)
    assert await sessions.owner_of(kept) is None


async def test_expired_sessions_are_dropped_at_the_next_login(
    store: Store, clock: ManualClock
) -> None:
    assert isinstance(store, SqlStore)
    keys = ApiKeys(store, clock=clock)
    _, secret = await keys.create("alice")
    sessions = UiSessions(store, clock=clock, lifetime=60)
    old = await sessions.start(secret)
    clock.advance(61)
    new = await sessions.start(secret)
    async with store.database.read() as tx:
        rows = await tx.all("copy_page_ui_sessions", after_token_hash="", limit=10)
    assert old and new and [row["token_hash"] for row in rows] == [hash_key(new)]
