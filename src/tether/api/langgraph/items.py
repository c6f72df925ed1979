"""The LangGraph store: the caller's user memory, namespaced."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Body
from starlette.responses import JSONResponse, Response

from tether.api.auth import Owned
from tether.api.langgraph.options import check_keys, obj, page, refuse
from tether.api.langgraph.shapes import item_dict
from tether.core.errors import NotFound, UsageError
from tether.core.memory import MemoryItem
from tether.runtime.service import Service

router = APIRouter(tags=["langgraph"], include_in_schema=False)

Json = Annotated[dict[str, Any] | None, Body()]
#: Namespaces read from the store at a time.
_SCAN = 1000
#: Items read from the store at a time by a filtered search (each up to a megabyte).
_ITEM_BATCH = 100


def _namespace(value: Any, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
        raise UsageError(f"{field} must be a list of non-empty strings")
    if any("." in label for label in value):
        raise UsageError(f"{field}: labels cannot contain '.' (GET joins them with dots)")
    return tuple(value)


def _key(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise UsageError("key must be a non-empty string")
    return value


@router.put("/store/items", status_code=204)
async def put_item(svc: Owned, body: Json = None) -> Response:
    """Store a value under a namespace and key."""
    request = obj(body)
    if request.get("index") not in (None, False):
        raise refuse("body.index", "tether's store has no semantic-search index")
    if request.get("ttl") is not None:
        raise refuse("body.ttl", "store items do not expire")
    check_keys("body", request, ("namespace", "key", "value", "index", "ttl"))
    if not isinstance(request.get("value"), dict):
        raise UsageError("body.value must be a JSON object (a store item's value is a document)")
    namespace = _namespace(request.get("namespace"), "body.namespace")
    await svc.set_user_memory(_key(request.get("key")), request["value"], namespace=namespace)
    return Response(status_code=204)


@router.get("/store/items")
async def get_item(
    svc: Owned,
    key: str,
    namespace: str = "",
    refresh_ttl: bool | None = None,
) -> Response:
    """The item, or null when there is none (as LangGraph answers)."""
    labels = tuple(part for part in namespace.split(".") if part) if namespace else ()
    try:
        item = await svc.get_user_memory(key, namespace=labels)
    except NotFound:
        return JSONResponse(None)
    return JSONResponse(item_dict(item))


@router.delete("/store/items", status_code=204)
async def delete_item(svc: Owned, body: Json = None) -> Response:
    """Remove an item (nothing to remove is fine)."""
    request = obj(body)
    check_keys("body", request, ("namespace", "key"))
    namespace = _namespace(request.get("namespace"), "body.namespace")
    with contextlib.suppress(NotFound):
        await svc.delete_user_memory(_key(request.get("key")), namespace=namespace)
    return Response(status_code=204)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, nor false 0."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _ordered(a: Any, b: Any) -> bool:
    """Whether a and b compare by order: two numbers or two strings (never booleans)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    numbers = (int, float)
    return (isinstance(a, numbers) and isinstance(b, numbers)) or (
        isinstance(a, str) and isinstance(b, str)
    )


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": _same,
    "$ne": lambda a, b: not _same(a, b),
    "$gt": lambda a, b: _ordered(a, b) and a > b,
    "$gte": lambda a, b: _ordered(a, b) and a >= b,
    "$lt": lambda a, b: _ordered(a, b) and a < b,
    "$lte": lambda a, b: _ordered(a, b) and a <= b,
}


def _check_filter(wanted: dict[str, Any]) -> None:
    """Refuse an operator tether does not evaluate, instead of matching nothing."""
    for field, condition in wanted.items():
        if isinstance(condition, dict):
            for op in condition:
                if op.startswith("$") and op not in _OPERATORS:
                    raise refuse(
                        "body.filter",
                        f"operator {op} (on {field}) is not supported; tether's store filters "
                        f"with {', '.join(_OPERATORS)} or a value to equal",
                    )


def _matches(value: Any, wanted: dict[str, Any]) -> bool:
    if not wanted:
        return True
    if not isinstance(value, dict):
        return False
    for field, condition in wanted.items():
        actual = value.get(field)
        if isinstance(condition, dict) and condition and set(condition) <= set(_OPERATORS):
            if not all(_OPERATORS[op](actual, arg) for op, arg in condition.items()):
                return False
        elif not _same(actual, condition):
            return False
    return True


async def _matching(
    svc: Service, prefix: tuple[str, ...], wanted: dict[str, Any], offset: int, limit: int
) -> list[MemoryItem]:
    """The items under prefix whose values match wanted, offset and limit applied: read a
    batch at a time until the page is full, holding one batch and the page (an owner's items
    of up to a megabyte each, all held at once, took memory without bound)."""
    chosen: list[MemoryItem] = []
    read = 0
    while len(chosen) < limit:
        batch = await svc.list_user_memory(namespace=prefix or None, limit=_ITEM_BATCH, offset=read)
        read += len(batch)
        for item in batch:
            if len(chosen) < limit and _matches(item.value, wanted):
                if offset:
                    offset -= 1
                else:
                    chosen.append(item)
        if len(batch) < _ITEM_BATCH:
            break
    return chosen


@router.post("/store/items/search")
async def search_items(svc: Owned, body: Json = None) -> Response:
    """Items under a namespace prefix whose values match filter, newest first."""
    request = obj(body)
    if request.get("query"):
        raise refuse(
            "body.query",
            "natural-language search needs a vector index, which tether's store does not "
            "have; match values with filter instead",
        )
    check_keys(
        "body", request, ("namespace_prefix", "filter", "limit", "offset", "query", "refresh_ttl")
    )
    limit, offset = page(request, default_limit=10)
    prefix = _namespace(request.get("namespace_prefix"), "body.namespace_prefix")
    wanted = request.get("filter") or {}
    if not isinstance(wanted, dict):
        raise UsageError("body.filter must be a JSON object")
    _check_filter(wanted)
    if wanted:
        chosen = await _matching(svc, prefix, wanted, offset, limit)
    else:
        chosen = await svc.list_user_memory(namespace=prefix or None, limit=limit, offset=offset)
    return JSONResponse({"items": [item_dict(i) for i in chosen]})


@router.post("/store/namespaces")
async def list_namespaces(svc: Owned, body: Json = None) -> Response:
    """The namespaces holding items: under prefix, ending with suffix, cut at max_depth."""
    request = obj(body)
    check_keys("body", request, ("prefix", "suffix", "max_depth", "limit", "offset"))
    limit, offset = page(request, default_limit=100)
    prefix = _namespace(request.get("prefix"), "body.prefix")
    suffix = _namespace(request.get("suffix"), "body.suffix")
    depth = request.get("max_depth")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise UsageError("body.max_depth must be a whole number, 1 or more")
    everything: list[tuple[str, ...]] = []
    while True:
        batch = await svc.list_user_namespaces(prefix=prefix, limit=_SCAN, offset=len(everything))
        everything.extend(batch)
        if len(batch) < _SCAN:
            break
    cuts = (
        namespace[:depth] if depth is not None else namespace
        for namespace in everything
        if not suffix or namespace[-len(suffix) :] == suffix
    )
    chosen = list(dict.fromkeys(cuts))  # in order, each once (a list's `in` was quadratic)
    return JSONResponse({"namespaces": [list(n) for n in chosen[offset : offset + limit]]})
