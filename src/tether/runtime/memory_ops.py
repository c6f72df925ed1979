"""Memory: the Service's operations on memory at session, run, user and app scope."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tether.core.clock import Clock
from tether.core.errors import NotFound
from tether.core.memory import MemoryItem, MemoryScope
from tether.core.run import Run
from tether.core.session import Session
from tether.runtime import limits
from tether.store.base import Store


class MemoryOps:
    """The memory operations of Service (which provides these attributes)."""

    store: Store
    clock: Clock
    owner: str
    get_session: Callable[[str], Awaitable[Session]]
    _run_without_context: Callable[[str], Awaitable[Run]]

    async def list_session_memory(self, session_id: str) -> list[MemoryItem]:
        await self.get_session(session_id)
        return await self.store.list_memory(scope=MemoryScope.SESSION, scope_id=session_id)

    async def get_session_memory(self, session_id: str, key: str) -> MemoryItem:
        await self.get_session(session_id)
        return _found(
            await self.store.get_memory(scope=MemoryScope.SESSION, scope_id=session_id, key=key),
            key,
        )

    async def set_session_memory(self, session_id: str, key: str, value: Any) -> MemoryItem:
        return await self.store.put_memory(
            scope=MemoryScope.SESSION,
            scope_id=session_id,
            key=limits.key("key", key) or "",
            value=limits.json_value(value),
            owner=self.owner,
            now=self.clock.now(),
        )

    async def delete_session_memory(self, session_id: str, key: str) -> None:
        deleted = await self.store.delete_memory(
            scope=MemoryScope.SESSION,
            scope_id=session_id,
            key=key,
            owner=self.owner,
            now=self.clock.now(),
        )
        if not deleted:
            raise NotFound("memory item", key)

    async def list_run_memory(self, run_id: str) -> list[MemoryItem]:
        await self._run_without_context(run_id)
        return await self.store.list_memory(scope=MemoryScope.RUN, scope_id=run_id)

    async def promote_memory(
        self, run_id: str, key: str, *, as_key: str | None = None
    ) -> MemoryItem:
        """Copy a run's working-memory item into its session's memory (recorded with the run)."""
        return await self.store.promote_memory(
            run_id=run_id,
            key=key,
            owner=self.owner,
            now=self.clock.now(),
            as_key=limits.key("as_key", as_key),
        )

    async def list_user_memory(
        self, *, namespace: tuple[str, ...] | None = (), limit: int = 1000, offset: int = 0
    ) -> list[MemoryItem]:
        return await self.store.list_memory(
            scope=MemoryScope.USER,
            scope_id=self.owner,
            namespace_prefix=None if namespace is None else limits.namespace(namespace),
            limit=limit,
            offset=offset,
        )

    async def get_user_memory(self, key: str, *, namespace: tuple[str, ...] = ()) -> MemoryItem:
        return _found(
            await self.store.get_memory(
                scope=MemoryScope.USER,
                scope_id=self.owner,
                key=key,
                namespace=limits.namespace(namespace),
            ),
            key,
        )

    async def set_user_memory(
        self, key: str, value: Any, *, namespace: tuple[str, ...] = ()
    ) -> MemoryItem:
        return await self.store.put_memory(
            scope=MemoryScope.USER,
            scope_id=self.owner,
            key=limits.key("key", key) or "",
            value=limits.json_value(value),
            owner=self.owner,
            now=self.clock.now(),
            namespace=limits.namespace(namespace),
        )

    async def delete_user_memory(self, key: str, *, namespace: tuple[str, ...] = ()) -> None:
        deleted = await self.store.delete_memory(
            scope=MemoryScope.USER,
            scope_id=self.owner,
            key=key,
            owner=self.owner,
            now=self.clock.now(),
            namespace=limits.namespace(namespace),
        )
        if not deleted:
            raise NotFound("memory item", key)

    async def list_app_memory(self, app: str) -> list[MemoryItem]:
        """Memory every session of the owner's app shares, newest first."""
        return await self.store.list_memory(
            scope=MemoryScope.APP, scope_id=limits.app(app) or "", owner=self.owner
        )

    async def get_app_memory(self, app: str, key: str) -> MemoryItem:
        return _found(
            await self.store.get_memory(
                scope=MemoryScope.APP, scope_id=limits.app(app) or "", key=key, owner=self.owner
            ),
            key,
        )

    async def set_app_memory(self, app: str, key: str, value: Any) -> MemoryItem:
        return await self.store.put_memory(
            scope=MemoryScope.APP,
            scope_id=limits.app(app) or "",
            key=limits.key("key", key) or "",
            value=limits.json_value(value),
            owner=self.owner,
            now=self.clock.now(),
        )

    async def delete_app_memory(self, app: str, key: str) -> None:
        deleted = await self.store.delete_memory(
            scope=MemoryScope.APP,
            scope_id=limits.app(app) or "",
            key=key,
            owner=self.owner,
            now=self.clock.now(),
        )
        if not deleted:
            raise NotFound("memory item", key)

    async def list_user_namespaces(
        self, *, prefix: tuple[str, ...] = (), limit: int = 100, offset: int = 0
    ) -> list[tuple[str, ...]]:
        return await self.store.list_namespaces(
            owner=self.owner, prefix=prefix, limit=limit, offset=offset
        )


def _found(item: MemoryItem | None, key: str) -> MemoryItem:
    if item is None:
        raise NotFound("memory item", key)
    return item
