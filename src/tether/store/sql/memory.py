"""Memory in four scopes (run, session, user, app) and promotion, for the SQL stores."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tether.core.errors import Conflict, NotFound, UsageError
from tether.core.event import EventType
from tether.core.memory import MemoryItem, MemoryScope
from tether.core.message import StoredMessage
from tether.core.run import Run
from tether.core.status import RUN_TERMINAL, RunStatus
from tether.store.sql.common import SqlBase
from tether.store.sql.database import ReadTx, Row, Tx
from tether.store.sql.rows import (
    join_namespace,
    memory_by_scope,
    memory_from_row,
    split_namespace,
    stored_scope_id,
    to_us,
)
from tether.store.sql.sessions import stored_rows


class MemoryPart(SqlBase):
    """Layered memory: working memory of a run, session memory, user memory, app memory."""

    def _item(self, row: Any) -> MemoryItem:
        return memory_from_row(row, self._db.load_json)

    async def _memory_home(
        self, tx: Tx, scope: MemoryScope, scope_id: str, owner: str | None, now: datetime
    ) -> tuple[str, str | None, str | None]:
        """Check a write is allowed; (owner, session id, run id) the item belongs under."""
        if scope is MemoryScope.USER:
            if owner is not None and owner != scope_id:
                raise NotFound("user", scope_id)
            return scope_id, None, None
        if scope is MemoryScope.APP:
            if owner is None:
                raise UsageError("app memory is written for an owner")
            return owner, None, None
        if scope is MemoryScope.SESSION:
            touched = await self._touch_active(tx, scope_id, owner=owner, now=now)
            return touched["owner"], scope_id, None
        row = await tx.one("get_run", id=scope_id, owner=owner)
        if row is None:
            raise NotFound("run", scope_id)
        if RunStatus(row["status"]) in RUN_TERMINAL:
            raise Conflict(
                f"run {scope_id} is {row['status']}: its working memory is kept read-only",
                run_id=scope_id,
            )
        await self._touch_active(tx, row["session_id"], owner=owner, now=now)
        return row["owner"], row["session_id"], scope_id

    async def _check_held(self, tx: Tx, run_id: str | None, worker_id: str | None) -> None:
        """A write made by a run's agent: LeaseLost unless worker_id still holds the run."""
        if worker_id is None:
            return
        row = await tx.one("get_run_without_context", id=run_id or "", owner=None)
        if row is None or row["status"] != RunStatus.RUNNING.value or row["worker_id"] != worker_id:
            await self._lost(tx, run_id or "", worker_id)

    async def put_memory(
        self,
        *,
        scope: MemoryScope,
        scope_id: str,
        key: str,
        value: Any,
        owner: str | None,
        now: datetime,
        namespace: tuple[str, ...] = (),
        source_run_id: str | None = None,
        worker_id: str | None = None,
    ) -> MemoryItem:
        async with self._db.write() as tx:
            await self._check_held(tx, source_run_id, worker_id)
            item_owner, session_id, run_id = await self._memory_home(
                tx, scope, scope_id, owner, now
            )
            row = await tx.one(
                "upsert_memory",
                scope=scope.value,
                scope_id=stored_scope_id(scope, scope_id, item_owner),
                namespace=join_namespace(namespace),
                key=key,
                value=self._j(value),
                session_id=session_id,
                source_run_id=source_run_id or run_id,
                now=to_us(now),
            )
            item = self._item(row)
            await self._event(
                tx,
                EventType.MEMORY_SET,
                owner=item_owner,
                now=now,
                session_id=session_id,
                run_id=run_id,
                data={"item": item},
            )
        return item

    async def get_memory(
        self,
        *,
        scope: MemoryScope,
        scope_id: str,
        key: str,
        namespace: tuple[str, ...] = (),
        owner: str | None = None,
    ) -> MemoryItem | None:
        async with self._db.read() as tx:
            row = await tx.one(
                "get_memory",
                scope=scope.value,
                scope_id=stored_scope_id(scope, scope_id, owner),
                namespace=join_namespace(namespace),
                key=key,
            )
        return None if row is None else self._item(row)

    async def list_memory(
        self,
        *,
        scope: MemoryScope,
        scope_id: str,
        namespace_prefix: tuple[str, ...] | None = (),
        limit: int = 1000,
        offset: int = 0,
        owner: str | None = None,
    ) -> list[MemoryItem]:
        async with self._db.read() as tx:
            rows = await tx.all(
                "list_memory_in_namespace",
                scope=scope.value,
                scope_id=stored_scope_id(scope, scope_id, owner),
                namespace=join_namespace(namespace_prefix or ()),
                recursive=namespace_prefix is None or len(namespace_prefix) > 0,
                limit=limit,
                offset=offset,
            )
        return [self._item(r) for r in rows]

    async def memory_of_run(
        self, run: Run, *, app: str | None = None, limit: int = 1000
    ) -> dict[MemoryScope, list[MemoryItem]]:
        async with self._db.read() as tx:
            rows = await tx.all(
                "memory_of_run",
                run_id=run.id,
                session_id=run.session_id,
                owner=run.owner,
                app=None if app is None else stored_scope_id(MemoryScope.APP, app, run.owner),
                limit=limit,
            )
        return memory_by_scope(rows, self._db.load_json, app=app is not None)

    async def memory_of_sessions(
        self, session_ids: Sequence[str], *, owner: str
    ) -> dict[str, list[MemoryItem]]:
        if not session_ids:
            return {}
        async with self._db.read() as tx:
            rows = await tx.all("memory_of_sessions", ids=self._j(list(session_ids)), owner=owner)
        found: dict[str, list[MemoryItem]] = {}
        for row in rows:
            item = self._item(row)
            found.setdefault(item.scope_id, []).append(item)
        return found

    async def layered_memory(
        self, session_id: str, *, owner: str, app: str, user_namespace: tuple[str, ...]
    ) -> list[MemoryItem]:
        async with self._db.read() as tx:
            rows = await self._layered(tx, session_id, owner, app, user_namespace)
        return [self._item(r) for r in rows]

    async def session_tail(
        self,
        session_id: str,
        *,
        owner: str,
        limit: int,
        items: bool,
        app: str,
        user_namespace: tuple[str, ...],
    ) -> tuple[list[StoredMessage], list[MemoryItem]]:
        async with self._db.read() as tx:
            messages = await stored_rows(tx, session_id, owner, limit, None, items)
            rows = await self._layered(tx, session_id, owner, app, user_namespace)
        return messages, [self._item(r) for r in rows]

    @staticmethod
    async def _layered(
        tx: ReadTx, session_id: str, owner: str, app: str, user_namespace: tuple[str, ...]
    ) -> list[Row]:
        return await tx.all(
            "layered_memory",
            session_id=session_id,
            app=stored_scope_id(MemoryScope.APP, app, owner),
            owner=owner,
            namespace=join_namespace(user_namespace),
        )

    async def delete_memory(
        self,
        *,
        scope: MemoryScope,
        scope_id: str,
        key: str,
        owner: str | None,
        now: datetime,
        namespace: tuple[str, ...] = (),
        source_run_id: str | None = None,
        worker_id: str | None = None,
    ) -> bool:
        async with self._db.write() as tx:
            await self._check_held(tx, source_run_id, worker_id)
            item_owner, session_id, run_id = await self._memory_home(
                tx, scope, scope_id, owner, now
            )
            row = await tx.one(
                "delete_memory",
                scope=scope.value,
                scope_id=stored_scope_id(scope, scope_id, item_owner),
                namespace=join_namespace(namespace),
                key=key,
            )
            if row is None:
                return False
            await self._event(
                tx,
                EventType.MEMORY_DELETED,
                owner=item_owner,
                now=now,
                session_id=session_id,
                run_id=run_id,
                data={
                    "scope": scope.value,
                    "scope_id": scope_id,
                    "key": key,
                    "namespace": list(namespace),
                },
            )
        return True

    async def promote_memory(
        self,
        *,
        run_id: str,
        key: str,
        owner: str | None,
        now: datetime,
        as_key: str | None = None,
        worker_id: str | None = None,
    ) -> MemoryItem:
        async with self._db.write() as tx:
            await self._check_held(tx, run_id, worker_id)
            run_row = await tx.one("get_run", id=run_id, owner=owner)
            if run_row is None:
                raise NotFound("run", run_id)
            source = await tx.one(
                "get_memory", scope=MemoryScope.RUN.value, scope_id=run_id, namespace="", key=key
            )
            if source is None:
                raise NotFound("memory item", f"{key!r} of run {run_id}")
            session_id = run_row["session_id"]
            await self._touch_active(tx, session_id, owner=owner, now=now)
            row = await tx.one(
                "upsert_memory",
                scope=MemoryScope.SESSION.value,
                scope_id=session_id,
                namespace="",
                key=as_key or key,
                value=source["value"],
                session_id=session_id,
                source_run_id=run_id,
                now=to_us(now),
            )
            item = self._item(row)
            await self._event(
                tx,
                EventType.MEMORY_PROMOTED,
                owner=run_row["owner"],
                now=now,
                session_id=session_id,
                run_id=run_id,
                data={"item": item, "from_key": key, "source_run_id": run_id},
            )
        return item

    async def list_namespaces(
        self, *, owner: str, prefix: tuple[str, ...] = (), limit: int = 100, offset: int = 0
    ) -> list[tuple[str, ...]]:
        async with self._db.read() as tx:
            rows = await tx.all(
                "list_namespaces",
                owner=owner,
                prefix=join_namespace(prefix),
                limit=limit,
                offset=offset,
            )
        return [split_namespace(r["namespace"]) for r in rows]
