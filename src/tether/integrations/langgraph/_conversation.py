"""A graph's message list as the session's conversation: each message stored once.

The ``messages`` channel of a graph (``add_messages``) only grows, yet a checkpoint holds the
whole list. Here a version of that list is stored as ranges of the session's conversation:
the messages it shares with the list last read or written (the same objects, in the same
places) keep their ranges, and only the rest are appended to the conversation. A message is
kept in the conversation as its role and text (what the UI and the APIs show) with the
message itself as the item: ``{"type": "langchain_message", "message": {"type", "data"}}``.

Reads rebuild the list from the ranges, reusing the objects of the list last seen for the
ranges it shares. A list this cannot store (a message of an unknown type, or one that is not
JSON) is left to the serializer, whole, as any other channel value.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from tether.core.message import Message, NewMessage, Role

#: The channel stored this way (in the graph's own namespace, not a subgraph's).
CHANNEL = "messages"
ITEM_TYPE = "langchain_message"
_ROLES = {"human": Role.USER, "ai": Role.ASSISTANT, "system": Role.SYSTEM, "tool": Role.TOOL}
_TYPES = frozenset(
    {
        "human",
        "ai",
        "system",
        "chat",
        "tool",
        "function",
        "remove",
        "HumanMessageChunk",
        "AIMessageChunk",
        "SystemMessageChunk",
        "ChatMessageChunk",
        "ToolMessageChunk",
        "FunctionMessageChunk",
    }
)
#: Lists remembered (per session and namespace), most recent last.
_REMEMBERED = 64

Ranges = tuple[tuple[int, int], ...]
Load = Callable[[Ranges], Awaitable[list[Message]]]


def new_message(message: BaseMessage) -> NewMessage | None:
    """The conversation message that stores message, or None if it cannot be stored so. The
    item leaves out the fields at their defaults, and a text content (the message's own)."""
    data = message_to_dict(message)
    if data.get("type") not in _TYPES:
        return None
    defaults = _defaults(type(message))
    fields = {
        k: v
        for k, v in data["data"].items()
        if not (k in defaults and defaults[k] == v) and not (k == "content" and isinstance(v, str))
    }
    item = {"type": ITEM_TYPE, "message": {"type": data["type"], "data": fields}}
    try:
        json.dumps(item, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return NewMessage(_ROLES.get(message.type, Role.ASSISTANT), _text(message.content), {}, item)


_DEFAULTS: dict[type[BaseMessage], dict[str, Any]] = {}


def _defaults(cls: type[BaseMessage]) -> dict[str, Any]:
    """The default of each field of a message class that has one."""
    found = _DEFAULTS.get(cls)
    if found is None:
        found = {}
        for name, info in cls.model_fields.items():
            if info.default_factory is not None:
                found[name] = info.default_factory()  # type: ignore[call-arg]
            elif not info.is_required():
                found[name] = info.default
        _DEFAULTS[cls] = found
    return found


def _stored(item: dict[str, Any] | None, content: str) -> dict[str, Any]:
    """The message dict an item holds (its content put back when it was left out)."""
    if item is None or item.get("type") != ITEM_TYPE:
        raise ValueError("a conversation message that does not hold a graph message")
    stored = item["message"]
    data = stored["data"]
    if "content" not in data:
        data = {**data, "content": content}
    return {"type": stored["type"], "data": data}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


def from_conversation(messages: Sequence[Message | NewMessage]) -> list[BaseMessage]:
    """The graph messages conversation messages hold (as new_message made them)."""
    return messages_from_dict([_stored(m.item, m.content) for m in messages])


def count(ranges: Ranges) -> int:
    return sum(last - first + 1 for first, last in ranges)


def head(ranges: Ranges, items: int) -> Ranges:
    """The ranges of the first items messages of ranges."""
    kept: list[tuple[int, int]] = []
    for first, last in ranges:
        if items <= 0:
            break
        take = min(items, last - first + 1)
        kept.append((first, first + take - 1))
        items -= take
    return tuple(kept)


def shared(a: Ranges, b: Ranges) -> int:
    """How many leading messages two range lists have in common."""
    seqs_a, seqs_b = _walk(a), _walk(b)
    same = 0
    for x, y in zip(seqs_a, seqs_b, strict=False):
        if x != y:
            break
        same += 1
    return same


def _walk(ranges: Ranges) -> Any:
    for first, last in ranges:
        yield from range(first, last + 1)


class Conversations:
    """The message list last read or written, per session and namespace, with its ranges.

    Each entry keeps two lists of the same messages: the graph's own objects, as last written
    (to recognise them in the next write), and tether's copies, which reads hand out. A graph's
    objects are never handed to another reader (a node's or a model's object stays its own),
    and a write recognises both. Messages are treated as values, as ``add_messages`` treats
    them: a change is a new message (a new id, or the same id to replace one), not an edit in
    place of an object read or written before.
    """

    def __init__(self) -> None:
        self._seen: OrderedDict[tuple[str, str], tuple[Ranges, list[Any], list[Any]]] = (
            OrderedDict()
        )

    def _remember(
        self, key: tuple[str, str], ranges: Ranges, written: list[Any], copies: list[Any]
    ) -> None:
        self._seen[key] = (ranges, written, copies)
        self._seen.move_to_end(key)
        while len(self._seen) > _REMEMBERED:
            self._seen.popitem(last=False)

    def forget(self, session_id: str) -> None:
        for key in [k for k in self._seen if k[0] == session_id]:
            del self._seen[key]

    def split(self, session_id: str, ns: str, value: Any) -> Split | None:
        """How to store value: the ranges it shares with the list last seen and the new
        messages after them; None when value is not a list of messages this can store."""
        if not isinstance(value, list) or not all(isinstance(m, BaseMessage) for m in value):
            return None
        ranges, written, copies = self._seen.get((session_id, ns), ((), [], []))
        same, limit = 0, min(len(value), len(copies))
        while same < limit and (value[same] is copies[same] or value[same] is written[same]):
            same += 1
        new = [new_message(m) for m in value[same:]]
        if any(m is None for m in new):
            return None
        return Split(head(ranges, same), [m for m in new if m is not None], same, copies[:same])

    def written(
        self, session_id: str, ns: str, ranges: Ranges, value: list[Any], split: Split
    ) -> None:
        """Remember value, just stored as ranges (as split said)."""
        copies = [*split.copies, *from_conversation(split.new)]
        self._remember((session_id, ns), ranges, list(value), copies)

    async def rebuild(self, session_id: str, ns: str, ranges: Ranges, load: Load) -> list[Any]:
        """The message list ranges hold: the copies last seen for what it shares, the rest
        loaded."""
        seen_ranges, _, seen = self._seen.get((session_id, ns), ((), [], []))
        same = shared(seen_ranges, ranges)
        rest = _tail(ranges, same)
        loaded = from_conversation(await load(rest)) if rest else []
        copies = [*seen[:same], *loaded]
        self._remember((session_id, ns), ranges, copies, copies)
        return list(copies)


@dataclass(frozen=True, slots=True)
class Split:
    """A message list to store: the ranges of its first `same` messages, then new ones."""

    ranges: Ranges
    new: list[NewMessage]
    same: int
    #: tether's copies of the first `same` messages.
    copies: list[Any]


def _tail(ranges: Ranges, skip: int) -> Ranges:
    """ranges without their first skip messages."""
    rest: list[tuple[int, int]] = []
    for first, last in ranges:
        size = last - first + 1
        if skip >= size:
            skip -= size
            continue
        rest.append((first + skip, last))
        skip = 0
    return tuple(rest)
