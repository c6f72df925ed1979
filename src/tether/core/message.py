"""The Message record: one entry of a session's conversation."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


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
