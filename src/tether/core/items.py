"""Structured conversation items: what a message that carries one shows as.

A message may carry any JSON object as its ``item`` (for example an OpenAI Responses-API item:
a message with list content, a ``function_call``, a ``function_call_output``, ``reasoning``).
tether keeps the item exactly as given. When the caller gives no role or content, they come
from the item, so the message still reads as a turn of the conversation (in the UI, in the
context a run starts from, in the LangGraph view):

* role: the item's ``role`` (``developer`` reads as ``system``); else ``tool`` for an item whose
  ``type`` ends in ``_output`` (a tool's result); else ``assistant`` (calls, reasoning, …).
* text: a string ``content`` (or ``output``, ``text``); else the text of its content blocks (or
  of a reasoning ``summary``), one block per line; else empty.

A ``function_call`` (or ``custom_tool_call``) item stands for a tool call, and an item with a
``call_id`` whose type ends in ``_output`` for its result: context assembly keeps the two together.
"""

from __future__ import annotations

from typing import Any

from tether.core.message import Role

_ROLES = {
    "user": Role.USER,
    "assistant": Role.ASSISTANT,
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "tool": Role.TOOL,
}
_CALLS = frozenset({"function_call", "custom_tool_call"})


def item_role(item: dict[str, Any]) -> Role:
    """The role a message carrying item has when none is given."""
    role = item.get("role")
    if isinstance(role, str) and role in _ROLES:
        return _ROLES[role]
    kind = item.get("type")
    if isinstance(kind, str) and kind.endswith("_output"):
        return Role.TOOL
    return Role.ASSISTANT


def item_text(item: dict[str, Any]) -> str:
    """The text a message carrying item shows when no content is given ("" if it has none)."""
    for key in ("content", "output", "text"):
        value = item.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            return _blocks_text(value)
    summary = item.get("summary")
    return _blocks_text(summary) if isinstance(summary, list) else ""


def _blocks_text(blocks: list[Any]) -> str:
    parts = []
    for block in blocks:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


def item_tool_call(item: dict[str, Any]) -> dict[str, Any] | None:
    """The tool call item stands for (``{"id", "name", "arguments"}``), or None."""
    if item.get("type") not in _CALLS:
        return None
    arguments = item.get("arguments", item.get("input"))
    return {"id": item.get("call_id"), "name": item.get("name"), "arguments": arguments}


def item_tool_call_id(item: dict[str, Any]) -> str | None:
    """The id of the tool call item is the result of, or None."""
    kind, call_id = item.get("type"), item.get("call_id")
    if isinstance(kind, str) and kind.endswith("_output") and isinstance(call_id, str):
        return call_id
    return None
