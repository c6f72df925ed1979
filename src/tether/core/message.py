"""The Message record: one entry of a session's conversation."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

#: A message as stored, for readers that decode only what they need (framework adapters):
#: (id, seq, role, content, metadata as JSON text, item as its exact JSON text or None); the
#: content is "" when there is an item (the item is what such readers hand out), and the item
#: None too when read without items.
StoredMessage = tuple[str, int, str, str, str, str | None]


class Role(StrEnum):
    """Who said it."""

    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    #: A tool result; metadata["tool_call_id"] ties it to the assistant message that asked.
    TOOL = "tool"


@dataclass(frozen=True, slots=True)
class Message:
    """A message of the conversation every run of the session shares."""

    id: str
    session_id: str
    #: 1, 2, 3 … within the session.
    seq: int
    role: Role
    content: str
    created_at: datetime
    #: The run that wrote it, if any.
    run_id: str | None = None
    #: e.g. {"tool_calls": [...]} on an assistant message, {"tool_call_id": …} on a tool result.
    metadata: dict[str, Any] = field(default_factory=dict)
    #: A structured conversation item (any JSON object, e.g. a Responses-API item), kept
    #: exactly as it was added; role and content are what it shows as (see core.items).
    item: dict[str, Any] | None = None
    #: When the message was taken out of the conversation (popped or cleared); None while it
    #: is in it. Removed messages are kept for the audit trail, and read only when asked for.
    removed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message to append: what the caller gives, checked (see runtime.limits)."""

    role: Role
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    item: dict[str, Any] | None = None
