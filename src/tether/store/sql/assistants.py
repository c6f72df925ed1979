"""Assistants: named configurations of agents, every change a new version."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tether.core.errors import AlreadyExists, NotFound
from tether.store.sql.common import SqlBase
from tether.store.sql.database import ReadTx, Row, Tx
from tether.store.sql.rows import LoadJson, from_us, to_us

if TYPE_CHECKING:  # made where a row becomes one (a read of messages makes none)
    from tether.core.assistant import Assistant

#: The fields an update may change.
CHANGEABLE = ("graph_id", "name", "description", "config", "context", "metadata")


def _assistant(row: Row, load: LoadJson, owner: str, *, of_version: bool = False) -> Assistant:
    """An assistant row, or a version row (made when its version was)."""
    from tether.core.assistant import Assistant

    made = from_us(row["created_at"])
    return Assistant(
        id=row["assistant_id"] if of_version else row["id"],
        owner=owner,
        graph_id=row["graph_id"],
        name=row["name"],
        version=row["version"],
        created_at=made,
        updated_at=made if of_version else from_us(row["updated_at"]),
        description=row["description"],
        config=load(row["config"]) or {},
        context=load(row["context"]) or {},
        metadata=load(row["metadata"]) or {},
    )


class AssistantsPart(SqlBase):
    """Assistants and their versions."""

    def _fields(self, a: Assistant) -> dict[str, Any]:
        return {
            "id": a.id,
            "graph_id": a.graph_id,
            "name": a.name,
            "description": a.description,
            "config": self._j(a.config),
            "context": self._j(a.context),
            "metadata": self._j(a.metadata),
            "version": a.version,
        }

    async def create_assistant(self, assistant: Assistant) -> Assistant:
        async with self._db.write() as tx:
            # Ids are global: one another owner holds is taken too.
            if await tx.one("assistant_exists", id=assistant.id) is not None:
                raise AlreadyExists(f"assistant {assistant.id} already exists")
            fields = self._fields(assistant)
            await tx.run(
                "insert_assistant",
                owner=assistant.owner,
                created_at=to_us(assistant.created_at),
                updated_at=to_us(assistant.updated_at),
                **fields,
            )
            await tx.run(
                "insert_assistant_version", created_at=to_us(assistant.updated_at), **fields
            )
        return assistant

    async def _get(self, tx: ReadTx, assistant_id: str, owner: str) -> Assistant:
        row = await tx.one("get_assistant", id=assistant_id, owner=owner)
        if row is None:
            raise NotFound("assistant", assistant_id)
        return _assistant(row, self._db.load_json, owner)

    async def get_assistant(self, assistant_id: str, *, owner: str) -> Assistant | None:
        async with self._db.read() as tx:
            row = await tx.one("get_assistant", id=assistant_id, owner=owner)
        return None if row is None else _assistant(row, self._db.load_json, owner)

    async def list_assistants(self, *, owner: str, limit: int = 1000) -> list[Assistant]:
        async with self._db.read() as tx:
            rows = await tx.all("list_assistants", owner=owner, limit=limit)
        return [_assistant(r, self._db.load_json, owner) for r in rows]

    async def _make_current(self, tx: Tx, assistant: Assistant, now: datetime) -> Assistant:
        chosen = replace(assistant, updated_at=now)
        await tx.run("set_assistant_current", updated_at=to_us(now), **self._fields(chosen))
        return chosen

    async def update_assistant(
        self, assistant_id: str, *, owner: str, changes: Mapping[str, Any], now: datetime
    ) -> Assistant:
        unknown = set(changes) - set(CHANGEABLE)
        if unknown:
            raise ValueError(f"assistant fields that cannot change: {sorted(unknown)}")
        async with self._db.write() as tx:
            current = await self._get(tx, assistant_id, owner)
            last = await tx.one("last_assistant_version", id=assistant_id)
            version = int(last["version"] if last and last["version"] else 0) + 1
            made = replace(current, version=version, **changes)
            await tx.run("insert_assistant_version", created_at=to_us(now), **self._fields(made))
            return await self._make_current(tx, made, now)

    async def set_assistant_version(
        self, assistant_id: str, version: int, *, owner: str, now: datetime
    ) -> Assistant:
        async with self._db.write() as tx:
            current = await self._get(tx, assistant_id, owner)
            row = await tx.one("get_assistant_version", id=assistant_id, version=version)
            if row is None:
                raise NotFound("assistant version", f"{assistant_id} version {version}")
            chosen = _assistant(row, self._db.load_json, owner, of_version=True)
            chosen = replace(chosen, created_at=current.created_at)
            return await self._make_current(tx, chosen, now)

    async def list_assistant_versions(
        self, assistant_id: str, *, owner: str, limit: int, offset: int = 0
    ) -> list[Assistant]:
        async with self._db.read() as tx:
            await self._get(tx, assistant_id, owner)
            rows = await tx.all(
                "list_assistant_versions", id=assistant_id, limit=limit, offset=offset
            )
        return [_assistant(r, self._db.load_json, owner, of_version=True) for r in rows]

    async def delete_assistant(self, assistant_id: str, *, owner: str) -> None:
        async with self._db.write() as tx:
            await self._get(tx, assistant_id, owner)
            await tx.run("delete_assistant_versions", id=assistant_id)
            await tx.run("delete_assistant", id=assistant_id)
