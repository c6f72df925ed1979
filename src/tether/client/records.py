"""Messages from the server's JSON, built directly: a conversation is read by the thousand, and
``from_data`` looks up each field's type for each record (two thirds of the client's time in
reading 10,000 messages)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from tether.core.clock import from_iso
from tether.core.message import Message, Role
from tether.core.serde import from_data
from tether.store.sql.rows import new_message

_FIELDS = frozenset(f.name for f in dataclasses.fields(Message))
_ROLES = {role.value: role for role in Role}


def messages_from_data(page: list[dict[str, Any]]) -> list[Message]:
    """What ``from_data(Message, d)`` gives for each d of page, made as the stores make
    messages; messages appended together (one timestamp) share its datetime, as the store's
    read gives them. A message lacking a field (a server older than the record), or one
    from_data would refuse or leave half-made, goes through from_data."""
    made: list[Message] = []
    last: str | None = None
    created_at: datetime | None = None
    for data in page:
        if not data.keys() >= _FIELDS or data["role"] not in _ROLES or data["created_at"] is None:
            made.append(from_data(Message, data))
            continue
        if data["created_at"] != last:
            last = data["created_at"]
            created_at = from_iso(last)
        removed_at = data["removed_at"]
        made.append(
            new_message(
                data["id"],
                data["session_id"],
                data["seq"],
                _ROLES[data["role"]],
                data["content"],
                created_at,  # type: ignore[arg-type]  # (set above: never None here)
                data["run_id"],
                data["metadata"],
                data["item"],
                None if removed_at is None else from_iso(removed_at),
            )
        )
    return made


def message_from_data(data: dict[str, Any]) -> Message:
    """What ``from_data(Message, data)`` gives."""
    return messages_from_data([data])[0]
