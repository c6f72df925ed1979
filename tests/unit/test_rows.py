"""store/sql/rows.py: what the stores write and read for messages, checked against serde."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from tether.core.clock import to_iso
from tether.core.message import Message, Role
from tether.core.serde import to_data
from tether.store.sql.rows import message_event_json
from tether.store.sqlite.database import SqliteDatabase

_AT = datetime(2026, 12, 3, 18, 30, 6, 123456, tzinfo=UTC)


@pytest.mark.parametrize(
    "message",
    [
        Message("m1", "s1", 1, Role.USER, "hi", _AT),
        Message(
            "m2",
            's"2\\',
            12,
            Role.TOOL,
            'quotes " backslash \\ newline \n tab \t ü 日本 \u2028 emoji 🎉 \x01',
            _AT,
            run_id="r1",
            metadata={"tool_call_id": "c1", "nested": [1, 2.5, None, True, {"é": "x"}]},
            item={"type": "function_call_output", "output": "ok \u00e9", "n": 1e21},
        ),
    ],
)
def test_a_message_event_is_the_json_of_its_serde_form(message: Message) -> None:
    db = SqliteDatabase(":memory:", migrate=False)
    metadata, item = db.dump_json(message.metadata), db.dump_json(message.item)
    text = message_event_json(message, to_iso(message.created_at), metadata, item)
    assert text == db.dump_json({"message": to_data(message)})
    assert json.loads(text) == {"message": to_data(message)}
