"""Graph values as JSON, as a LangGraph server sends them: messages and other pydantic models
as their fields, dataclasses (an ``Interrupt``, a ``Send``) as theirs, tuples as lists."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import Any

from langgraph.types import StateSnapshot
from pydantic import BaseModel


def wire(value: Any) -> Any:
    """value as JSON data (anything else as its text)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [wire(v) for v in value]
    if isinstance(value, BaseModel):
        return wire(value.model_dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: wire(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return wire(value.value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def interrupt(found: Any) -> dict[str, Any]:
    """An Interrupt (or its dict) as ``{"value", "id"}``."""
    if isinstance(found, Mapping):
        return {"value": wire(found.get("value")), "id": found.get("id")}
    return {"value": wire(getattr(found, "value", None)), "id": getattr(found, "id", None)}


def _checkpoint(config: Any) -> dict[str, Any] | None:
    if not config:
        return None
    conf = dict(config.get("configurable") or {})
    return {
        "thread_id": conf.get("thread_id"),
        "checkpoint_ns": conf.get("checkpoint_ns", ""),
        "checkpoint_id": conf.get("checkpoint_id"),
        "checkpoint_map": conf.get("checkpoint_map"),
    }


def thread_state(snapshot: StateSnapshot) -> dict[str, Any]:
    """A StateSnapshot as LangGraph's ThreadState."""
    tasks = []
    for task in snapshot.tasks:
        state = task.state
        tasks.append(
            {
                "id": task.id,
                "name": task.name,
                "error": None if task.error is None else repr(task.error),
                "interrupts": [interrupt(i) for i in task.interrupts],
                "checkpoint": _checkpoint(state) if isinstance(state, Mapping) else None,
                "state": thread_state(state) if isinstance(state, StateSnapshot) else None,
                "result": wire(task.result),
            }
        )
    return {
        "values": wire(snapshot.values),
        "next": list(snapshot.next),
        "checkpoint": _checkpoint(snapshot.config),
        "metadata": wire(snapshot.metadata or {}),
        "created_at": snapshot.created_at,
        "parent_checkpoint": _checkpoint(snapshot.parent_config),
        "tasks": tasks,
        "interrupts": [interrupt(i) for i in snapshot.interrupts],
    }
