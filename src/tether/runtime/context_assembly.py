"""Assemble the context a run starts from, within a token budget, at a cost that does not grow
with the length of the session.

Parts, in order of priority: the session's project, session memory, user memory, the memory of the
session's app, summaries of earlier runs, recent tool calls, and the newest conversation messages
that still fit (a tool call and its results are kept or dropped together; a message carrying a
structured item reads as its role and text, a ``function_call`` item as a tool call and its
``*_output`` as the result). Every read is bounded by an index and a limit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from json.encoder import encode_basestring as _encode_str
from typing import Any

from tether.core.clock import to_iso
from tether.core.items import item_tool_call, item_tool_call_id
from tether.core.memory import MemoryItem, MemoryScope
from tether.core.message import Message, Role
from tether.core.run import Run, RunSummary
from tether.core.session import Session
from tether.core.step import Step
from tether.runtime.settings import DEFAULT_BUDGET_TOKENS
from tether.store.base import Store
from tether.store.cursors import encode_cursor
from tether.store.run_start import ContextSources, SourceLimits

#: Share of the budget each bounded part may take at most; messages get what is left.
_SHARES = {"memory": 0.25, "runs": 0.15, "tools": 0.15}
_MAX_MEMORY_ITEMS = 200
_MAX_RUNS = 10
_MAX_TOOL_CALLS = 20
_MESSAGE_PAGE = 64
_MAX_MESSAGE_PAGES = 16
_SNIPPET_CHARS = 400
#: What a run's start reads of its context's sources (Store.run_start), as the reads here do.
SOURCES = SourceLimits(runs=_MAX_RUNS, tool_calls=_MAX_TOOL_CALLS, messages=_MESSAGE_PAGE)
#: json.dumps(value, ensure_ascii=False, default=str), without a new encoder per call.
_json = json.JSONEncoder(ensure_ascii=False, default=str).encode


def estimate_tokens(value: Any) -> int:
    """A model-independent estimate: about four characters of JSON per token."""
    length = len(value) if isinstance(value, str) else _json_length(value)
    return max(1, (length + 3) // 4)


def _json_length(value: Any) -> int:
    """len(_json(value)), added up from the parts of a list of dicts or a dict (the shape of
    every entry and message unit) instead of encoding the whole; any other value is encoded."""
    if type(value) is list:
        # "[item, …]": each item adds itself and ", " (or the brackets); "[]" when empty.
        length = 0
        for item in value:
            length += (_dict_length(item) if type(item) is dict else _leaf_length(item)) + 2
        return length or 2
    if type(value) is dict:
        return _dict_length(value)
    return len(_json(value))


def _dict_length(value: dict[Any, Any]) -> int:
    # '{"key": "text", …}': each pair adds its key and text as JSON, ": " and ", " (or the
    # braces). A dict holding anything but text is encoded whole (one call is cheapest then).
    length = 0
    for key, item in value.items():
        if not (isinstance(key, str) and isinstance(item, str)):
            return len(_json(value))
        length += len(_encode_str(key)) + len(_encode_str(item)) + 4
    return length or 2


def _leaf_length(value: Any) -> int:
    return len(_encode_str(value)) if isinstance(value, str) else len(_json(value))


def _snip(value: Any, limit: int = _SNIPPET_CHARS) -> Any:
    text = value if isinstance(value, str) else _json(value)
    if len(text) <= limit:
        return value
    return text[:limit] + f"… [{len(text) - limit} more characters]"


class _Budget:
    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0

    def take(self, value: Any, cap: int | None = None) -> bool:
        cost = estimate_tokens(value)
        limit = self.total if cap is None else min(self.total, cap)
        if self.used + cost > limit:
            return False
        self.used += cost
        return True


async def assemble_context(
    store: Store,
    session: Session,
    *,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
    before_seq: int | None = None,
    now: datetime | None = None,
    memory: Mapping[MemoryScope, list[MemoryItem]] | None = None,
    sources: ContextSources | None = None,
) -> dict[str, Any]:
    """The context the next run of session starts from (a JSON-ready dict). memory: the
    session's and the owner's memory when the caller has read them already (newest first);
    sources: the earlier runs, tool calls and first page of messages, read already (SOURCES)."""
    budget = _Budget(budget_tokens)
    # The project may take at most a quarter of the budget (about 4 characters a token).
    project = _snip(session.project, budget_tokens) if session.project else {}
    budget.take(project)

    part_cap = budget.used
    session_memory: list[dict[str, Any]] = []
    user_memory: list[dict[str, Any]] = []
    app_memory: list[dict[str, Any]] = []
    memory_cap = part_cap + int(budget_tokens * _SHARES["memory"])
    scopes = [
        (MemoryScope.SESSION, session.id, session_memory),
        (MemoryScope.USER, session.owner, user_memory),
    ]
    if session.app is not None:
        scopes.append((MemoryScope.APP, session.app, app_memory))
    for scope, scope_id, bucket in scopes:
        if memory is not None and scope in memory:
            items = memory[scope][:_MAX_MEMORY_ITEMS]
        else:
            items = await store.list_memory(
                scope=scope, scope_id=scope_id, limit=_MAX_MEMORY_ITEMS, owner=session.owner
            )
        for item in items:
            entry = {"key": item.key, "value": _snip(item.value)}
            if item.namespace:
                entry["namespace"] = list(item.namespace)
            if item.source_run_id:
                entry["source_run_id"] = item.source_run_id
            if budget.take(entry, memory_cap):
                bucket.append(entry)

    runs_cap = budget.used + int(budget_tokens * _SHARES["runs"])
    runs: list[Run] | list[RunSummary]
    if sources is not None:
        runs = sources.runs
    else:
        runs = (
            await store.list_runs(
                session_id=session.id,
                limit=_MAX_RUNS,
                newest_first=True,
                # A run starts from the runs before it, not from those queued after it.
                cursor=None if before_seq is None else encode_cursor(before_seq),
                with_context=False,
            )
        ).data
    earlier = []
    for run in runs:
        summary = _run_summary(run)
        if not budget.take(summary, runs_cap):
            break
        earlier.append(summary)
        if len(earlier) == _MAX_RUNS:
            break
    earlier.reverse()

    tools_cap = budget.used + int(budget_tokens * _SHARES["tools"])
    if sources is not None:
        calls = sources.tool_calls
    else:
        calls = (
            await store.list_tool_calls(
                session_id=session.id, limit=_MAX_TOOL_CALLS, newest_first=True
            )
        ).data
    recent_tools = []
    for step in calls:
        entry = _tool_summary(step)
        if not budget.take(entry, tools_cap):
            break
        recent_tools.append(entry)
    recent_tools.reverse()

    first = None if sources is None else sources.messages
    messages, older = await _newest_messages(store, session.id, budget, first)
    return {
        "session_id": session.id,
        "assembled_at": to_iso(now),
        "budget_tokens": budget_tokens,
        "used_tokens": budget.used,
        "project": project,
        "session_memory": session_memory,
        "user_memory": user_memory,
        "app_memory": app_memory,
        "earlier_runs": earlier,
        "recent_tool_calls": recent_tools,
        "messages": messages,
        "older_messages_omitted": older,
    }


def _run_summary(run: Run | RunSummary) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "run_id": run.id,
        "seq": run.seq,
        "goal": _snip(run.goal, 200),
        "agent": run.agent,
        "status": run.status.value,
    }
    if run.error is not None:
        summary["error"] = f"{run.error.type}: {_snip(run.error.message, 200)}"
    elif run.output is not None:
        summary["output"] = _snip(run.output)
    return summary


def _tool_summary(step: Step) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "run_id": step.run_id,
        "tool": step.name,
        "status": step.status.value,
        "input": _snip((step.input or {}).get("arguments", step.input), 200),
    }
    if step.error is not None:
        entry["error"] = _snip(step.error.message, 200)
    else:
        entry["output"] = _snip(step.output, 200)
    return entry


def _message_entry(message: Message) -> dict[str, Any]:
    entry: dict[str, Any] = {"role": message.role.value, "content": message.content}
    item = message.item
    if item is not None:
        if isinstance(item.get("type"), str):
            entry["type"] = item["type"]
        call = item_tool_call(item)
        if call is not None:
            entry["tool_calls"] = [call]
        call_id = item_tool_call_id(item)
        if call_id is not None:
            entry["tool_call_id"] = call_id
    for key in ("tool_calls", "tool_call_id", "name"):
        if key in message.metadata:
            entry[key] = message.metadata[key]
    return entry


async def _newest_messages(
    store: Store, session_id: str, budget: _Budget, first: list[Message] | None
) -> tuple[list[dict[str, Any]], bool]:
    """Newest messages that fit, oldest first; True if older ones were left out. first: the
    newest page, read already."""
    kept: list[dict[str, Any]] = []
    group: list[dict[str, Any]] = []  # tool results waiting for the call that asked for them
    before: int | None = None
    for _ in range(_MAX_MESSAGE_PAGES):
        if first is not None:
            page, first = first, None
        else:
            page = await store.list_messages(
                session_id, limit=_MESSAGE_PAGE, before_seq=before, newest_first=True
            )
        if not page:
            return list(reversed(kept)), False
        for message in page:
            entry = _message_entry(message)
            if message.role is Role.TOOL:
                group.append(entry)
                continue
            unit = [*group, entry] if group else [entry]
            group = []
            if not budget.take(unit):
                return list(reversed(kept)), True
            kept.extend(unit)
        if len(page) < _MESSAGE_PAGE:  # the oldest message was on this page
            return list(reversed(kept)), False
        before = page[-1].seq
    return list(reversed(kept)), True
