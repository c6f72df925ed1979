"""store/sql/rows.py: what the stores write and read for messages, checked against serde."""

from __future__ import annotations

import dataclasses
import json
import pickle
from datetime import UTC, datetime, timedelta
from random import Random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.core.clock import to_iso
from tether.core.ids import new_ids
from tether.core.message import Message, Role
from tether.core.serde import to_data
from tether.store.sql.queries import Backend, load_queries
from tether.store.sql.rows import (
    CONVERSATION_COLUMNS,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    MessageRow,
    from_json,
    from_us,
    message_event_texts,
    message_from_values,
    messages_from_values,
)
from tether.store.sqlite.database import SqliteDatabase

_AT = datetime(2026, 12, 3, 18, 30, 6, 123456, tzinfo=UTC)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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
    assert metadata is not None
    row = (message.id, message.seq, message.role.value, message.content, metadata, item)
    [text] = message_event_texts([row], message.session_id, message.run_id, to_iso(_AT))
    assert text == db.dump_json({"message": to_data(message)})
    assert json.loads(text) == {"message": to_data(message)}
    db.close_now()


_TEXT = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"))
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=6,
)
_FIELDS = st.tuples(
    st.sampled_from(list(Role)),
    _TEXT,
    st.dictionaries(_TEXT, _JSON, max_size=3),
    st.none() | st.dictionaries(_TEXT, _JSON, max_size=3),
)


@given(
    session_id=_TEXT,
    run_id=st.none() | _TEXT,
    fields=st.lists(_FIELDS, min_size=1, max_size=5),
)
def test_the_event_texts_of_messages_are_their_serde_forms_byte_for_byte(
    session_id: str, run_id: str | None, fields: list[tuple[Role, str, dict[str, Any], Any]]
) -> None:
    """One text per row, with what the rows share (session, run, time) encoded once: each the
    bytes the stores' generic encoding gives the event (the payload before the batch path)."""
    db = SqliteDatabase(":memory:", migrate=False)
    messages = [
        Message(id_, session_id, seq, role, content, _AT, run_id, metadata, item)
        for seq, (id_, (role, content, metadata, item)) in enumerate(
            zip(new_ids(len(fields)), fields, strict=True), start=1
        )
    ]
    rows: list[MessageRow] = []
    for m in messages:
        metadata = db.dump_json(m.metadata)
        assert metadata is not None
        rows.append((m.id, m.seq, m.role.value, m.content, metadata, db.dump_json(m.item)))
    texts = message_event_texts(rows, session_id, run_id, to_iso(_AT))
    assert texts == [db.dump_json({"message": to_data(m)}) for m in messages]
    db.close_now()


@pytest.mark.parametrize(
    "micros",
    [0, 1, 999_999, 1_764_786_000_123_456, 2**52 - 1, 2**52, 2**52 + 1, 253_402_300_799_999_999],
)
def test_a_stored_time_comes_back_to_the_microsecond(micros: int) -> None:
    moment = from_us(micros)
    assert moment == _EPOCH + timedelta(microseconds=micros)
    assert moment.tzinfo is UTC


def test_stored_times_of_this_century_and_the_next_come_back_exactly() -> None:
    rng = Random(13)
    for _ in range(100_000):
        micros = rng.randrange(0, 2**52)
        assert from_us(micros) == _EPOCH + timedelta(microseconds=micros), micros


def test_a_decoded_message_is_a_message_like_any_other() -> None:
    made = Message("m1", "s1", 7, Role.TOOL, "hi", _AT, "r1", {"k": [1]}, {"type": "x"}, _AT)
    values = ("m1", "s1", 7, "tool", "hi", "r1", '{"k": [1]}', 1_796_322_606_123_456)
    decoded = message_from_values((*values, '{"type":"x"}', 1_796_322_606_123_456))
    assert type(decoded) is Message and decoded == made
    assert decoded == pickle.loads(pickle.dumps(decoded))
    assert dataclasses.replace(decoded, seq=8).seq == 8
    with pytest.raises(dataclasses.FrozenInstanceError):
        decoded.seq = 8  # type: ignore[misc]
    plain = message_from_values(("m2", "s1", 8, "user", "x", None, "{}", 0, None, None))
    assert plain == Message("m2", "s1", 8, Role.USER, "x", _EPOCH)


def test_a_conversation_read_decodes_what_each_row_holds() -> None:
    extras = json.dumps(['{"k":[1]}', '{"type":"x"}', 2**52 + 1])
    rows = [
        ("m1", 1, "user", "hi", 0, None, None),
        ("m2", 2, "tool", "ü 日本", 2**52, "r1", extras),
        ("m3", 3, "assistant", "", 1_796_322_606_123_456, None, '["null", "null", null]'),
        ("m4", 4, "assistant", "", 0, "r2", '{"tool_calls":[{"id":"c1"}]}'),
        ("m5", 5, "user", "", 0, None, '["{}", null, 7]'),
    ]
    decoded = messages_from_values("s1", iter(rows))
    assert decoded == [
        Message("m1", "s1", 1, Role.USER, "hi", _EPOCH),
        Message(
            "m2",
            "s1",
            2,
            Role.TOOL,
            "ü 日本",
            from_us(2**52),
            run_id="r1",
            metadata={"k": [1]},
            item={"type": "x"},
            removed_at=from_us(2**52 + 1),
        ),
        Message("m3", "s1", 3, Role.ASSISTANT, "", _AT),
        Message("m4", "s1", 4, Role.ASSISTANT, "", _EPOCH, "r2", {"tool_calls": [{"id": "c1"}]}),
        Message("m5", "s1", 5, Role.USER, "", _EPOCH, removed_at=from_us(7)),
    ]
    assert [type(m) for m in decoded] == [Message] * 5
    assert decoded[0].metadata is not decoded[2].metadata  # each its own dict
    assert decoded[2].metadata is not decoded[4].metadata


@pytest.mark.parametrize(
    "text",
    ['{"a":[1,2.5,null,true,"\\u00e9"]}', "null", " {} ", "{}\n", "[1] x", "", "\ufeff{}", "NaN"],
)
def test_json_is_read_as_json_loads_reads_it(text: str) -> None:
    try:
        expected = json.loads(text)
    except ValueError as exc:
        with pytest.raises(type(exc)):
            from_json(text)
    else:
        assert repr(from_json(text)) == repr(expected)  # (NaN is not equal to itself)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_each_decoded_read_selects_the_columns_its_decoder_takes(backend: Backend) -> None:
    queries = {name: " ".join(sql.split()) for name, sql in load_queries(backend).items()}
    conversation = CONVERSATION_COLUMNS
    if backend == "postgres":  # the same values: JSON as text, the extras by json_build_array
        conversation = (
            conversation.replace("NULLIF(metadata, '{}')", "NULLIF(metadata, '{}')::text")
            .replace("substr(metadata, 1, 1) = '{'", "jsonb_typeof(metadata) = 'object'")
            .replace(
                "json_array(metadata, item, removed_at)",
                "json_build_array(metadata::text, item::text, removed_at)::text",
            )
        )
    for name in ("messages_forward", "messages_backward"):
        assert queries[name].startswith(f"SELECT {conversation} FROM messages "), name
    assert queries["remove_message"].endswith(f" RETURNING {MESSAGE_COLUMNS}")
    for name in ("list_sessions_first", "list_sessions_after", "search_sessions"):
        assert queries[name].startswith(f"SELECT {SESSION_COLUMNS} FROM sessions "), name


def test_runs_of_equal_times_decode_each_to_its_time() -> None:
    times = [5, 5, 2**52, 2**52 + 1, 2**52 + 1, 5, 0, 0]
    rows = [(f"m{n}", n, "user", "x", at, None, None) for n, at in enumerate(times)]
    decoded = messages_from_values("s1", rows)
    assert [m.created_at for m in decoded] == [from_us(at) for at in times]
    assert all(m.created_at.tzinfo is UTC for m in decoded)
