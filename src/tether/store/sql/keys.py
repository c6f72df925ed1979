"""API keys of the HTTP service and the web UI's sessions, for the SQL stores (hashes only:
neither keys nor UI session tokens reach the database)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from tether.core.errors import AlreadyExists
from tether.store.sql.common import SqlBase
from tether.store.sql.database import Row
from tether.store.sql.rows import from_us, opt_dt, to_us

if TYPE_CHECKING:  # made where a row becomes one (a read of messages makes none)
    from tether.core.api_key import ApiKey


def _key(row: Row) -> ApiKey:
    from tether.core.api_key import ApiKey

    return ApiKey(
        id=row["id"],
        owner=row["owner"],
        prefix=row["prefix"],
        created_at=from_us(row["created_at"]),
        name=row["name"],
        revoked_at=opt_dt(row["revoked_at"]),
    )


class KeysPart(SqlBase):
    """Create, find, list and revoke API keys."""

    async def create_api_key(self, key: ApiKey, *, key_hash: str) -> ApiKey:
        try:
            async with self._db.write() as tx:
                row = await tx.one(
                    "insert_api_key",
                    id=key.id,
                    owner=key.owner,
                    key_hash=key_hash,
                    prefix=key.prefix,
                    name=key.name,
                    created_at=to_us(key.created_at),
                )
        except Exception as exc:
            if self._db.is_unique_violation(exc):
                raise AlreadyExists("an API key with this id or hash already exists") from exc
            raise
        assert row is not None
        return _key(row)

    async def get_api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        async with self._db.read() as tx:
            row = await tx.one("api_key_by_hash", key_hash=key_hash)
        return None if row is None else _key(row)

    async def list_api_keys(self, *, owner: str | None = None) -> list[ApiKey]:
        async with self._db.read() as tx:
            rows = await tx.all("list_api_keys", owner=owner)
        return [_key(r) for r in rows]

    async def revoke_api_key(self, key_id: str, *, now: datetime) -> ApiKey | None:
        async with self._db.write() as tx:
            row = await tx.one("revoke_api_key", id=key_id, now=to_us(now))
            await tx.run("delete_ui_sessions_of_key", key_id=key_id)
        return None if row is None else _key(row)

    async def create_ui_session(
        self, token_hash: str, *, key: ApiKey, created_at: datetime, expires_at: datetime
    ) -> None:
        async with self._db.write() as tx:
            await tx.run("delete_expired_ui_sessions", now=to_us(created_at))
            await tx.run(
                "insert_ui_session",
                token_hash=token_hash,
                key_id=key.id,
                owner=key.owner,
                created_at=to_us(created_at),
                expires_at=to_us(expires_at),
            )

    async def ui_session_owner(self, token_hash: str, *, now: datetime) -> str | None:
        async with self._db.read() as tx:
            row = await tx.one("ui_session_owner", token_hash=token_hash, now=to_us(now))
        return None if row is None else str(row["owner"])

    async def end_ui_session(self, token_hash: str) -> None:
        async with self._db.write() as tx:
            await tx.run("delete_ui_session", token_hash=token_hash)
