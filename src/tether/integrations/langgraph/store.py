"""TetherStore: a LangGraph BaseStore over the owner's user memory.

An item is a user-memory item (its namespace, key and JSON value), so what a graph remembers
is what the UI, the ``/v1/users/me/memory`` API and the LangGraph ``/store`` routes show.
Search filters values by field (``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``) and
pages with limit and offset, newest first; there is no vector index: a ``query`` is ignored
(every match has score None) and ``index`` arguments are not used. Items do not expire (no TTL).
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Callable, Iterable
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from tether.core.errors import NotFound
from tether.core.memory import MemoryItem
from tether.integrations.langgraph._bridge import Bridge, Target
from tether.runtime.facade import Tether

#: Items read at a time when searching.
_PAGE = 1000
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


class TetherStore(BaseStore):
    """LangGraph's long-term memory in tether's user memory (see the module docstring).

    ``TetherStore("tether.db")`` opens tether (closed by ``close()``); ``TetherStore(handle)``
    uses an open ``tether.open(...)`` handle, acting for its owner (or ``owner``).
    """

    supports_ttl = False

    def __init__(self, target: Target | Bridge, *, owner: str | None = None) -> None:
        self._bridge = target if isinstance(target, Bridge) else Bridge(target, owner=owner)
        #: The handle this store works on (None for a graph run by tether itself).
        self.tether: Tether | None = getattr(self._bridge, "tether", None)
        self._service = self._bridge.service

    def close(self) -> None:
        """Close tether if this store opened it."""
        self._bridge.close()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._bridge.call(self._batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self._bridge.acall(self._batch(list(ops)))

    async def _batch(self, ops: list[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op))
            elif isinstance(op, PutOp):
                await self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._namespaces(op))
            else:
                raise ValueError(f"unknown store operation: {op!r}")
        return results

    async def _get(self, op: GetOp) -> Item | None:
        try:
            found = await self._service.get_user_memory(op.key, namespace=op.namespace)
        except NotFound:
            return None
        return _item(found)

    async def _put(self, op: PutOp) -> None:
        if op.value is None:
            with contextlib.suppress(NotFound):
                await self._service.delete_user_memory(op.key, namespace=op.namespace)
            return
        await self._service.set_user_memory(op.key, op.value, namespace=op.namespace)

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        matches: list[SearchItem] = []
        wanted = op.offset + op.limit
        offset = 0
        while len(matches) < wanted:
            page = await self._service.list_user_memory(
                namespace=op.namespace_prefix or None, limit=_PAGE, offset=offset
            )
            for found in page:
                if _matches(found.value, op.filter):
                    matches.append(SearchItem(**_fields(found), score=None))
            if len(page) < _PAGE:
                break
            offset += _PAGE
        return matches[op.offset : wanted]

    async def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        every: list[tuple[str, ...]] = []
        offset = 0
        while True:
            page = await self._service.list_user_namespaces(limit=_PAGE, offset=offset)
            every.extend(page)
            if len(page) < _PAGE:
                break
            offset += _PAGE
        chosen = [ns for ns in every if all(_match(ns, c) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            chosen = sorted({ns[: op.max_depth] for ns in chosen})
        else:
            chosen = sorted(set(chosen))
        return chosen[op.offset : op.offset + op.limit]


def _fields(found: MemoryItem) -> dict[str, Any]:
    return {
        "namespace": found.namespace,
        "key": found.key,
        "value": found.value,
        "created_at": found.created_at,
        "updated_at": found.updated_at,
    }


def _item(found: MemoryItem) -> Item:
    return Item(**_fields(found))


def _matches(value: Any, filter: dict[str, Any] | None) -> bool:
    if not filter:
        return True
    if not isinstance(value, dict):
        return False
    for field, wanted in filter.items():
        actual = value.get(field)
        if isinstance(wanted, dict) and wanted and all(k in _COMPARE for k in wanted):
            try:
                if not all(_COMPARE[k](actual, v) for k, v in wanted.items()):
                    return False
            except TypeError:
                return False
        elif actual != wanted:
            return False
    return True


def _match(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    if not path:
        return True
    return all(want in ("*", have) for want, have in zip(path, part, strict=True))
