"""The token estimate counts a dict or a list of dicts from its parts: for every value it gives
exactly the length (and so the tokens) of the value's JSON, as encoding the whole would."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.runtime.context_assembly import _json_length, estimate_tokens

#: Any text, lone surrogates included, and text dense in what JSON escapes.
TEXT = st.one_of(
    st.text(st.characters(exclude_categories=())),
    st.text(st.sampled_from('"\\/\x00\x08\x0c\n\r\t\x1f\x7f\u2028\u00e9\U0001f600a '), max_size=30),
)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # nan and infinities included
    TEXT,
    st.datetimes(timezones=st.just(UTC)),  # not JSON: encoded as its str()
)
JSON = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
#: Keys the encoder turns into strings ("1", "true", "null", "1.5").
KEYS = st.one_of(TEXT, st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False))
ENTRIES = st.one_of(
    st.dictionaries(TEXT, TEXT, max_size=6),
    st.dictionaries(KEYS, JSON, max_size=6),
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "system", "tool"]), "content": TEXT},
        optional={
            "type": TEXT,
            "tool_calls": st.lists(st.dictionaries(TEXT, JSON, max_size=3), max_size=2),
            "tool_call_id": JSON,
            "name": JSON,
        },
    ),
)


def _encoded(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _tokens(value: Any) -> int:
    """The estimate as it was: the whole value encoded."""
    text = value if isinstance(value, str) else _encoded(value)
    return max(1, (len(text) + 3) // 4)


@settings(max_examples=500, deadline=None)
@given(st.one_of(ENTRIES, st.lists(ENTRIES, max_size=5), JSON))
def test_the_length_and_tokens_of_any_value_are_those_of_its_json(value: Any) -> None:
    assert _json_length(value) == len(_encoded(value))
    assert estimate_tokens(value) == _tokens(value)


def test_a_value_that_needs_escaping_or_is_not_json_is_counted_as_encoded() -> None:
    entry = {
        "role": "tool",
        "content": 'say "hi"\n\\ \x00 é 😀',
        "tool_call_id": 7,
        "name": datetime(2026, 1, 2, tzinfo=UTC),
        1: [None, 1.5, float("nan")],
    }
    for value in (entry, [entry, {}], {}, [], "plain text"):
        assert estimate_tokens(value) == _tokens(value)
    assert _json_length([entry, {}]) == len(_encoded([entry, {}]))
