"""store/cursors.py: page cursors round-trip, and a forged one never reaches the database."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.core.errors import UsageError
from tether.store.cursors import decode_cursor, encode_cursor

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@given(number=INT64, text=st.text())
def test_a_cursor_gives_back_its_parts(number: int, text: str) -> None:
    cursor = encode_cursor(number, text)
    assert decode_cursor(cursor, int, str) == [number, text]
    assert "=" not in cursor and "/" not in cursor and "+" not in cursor  # URL-safe, unpadded


def forged(parts: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(parts).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "!!!",
        "not base64 at all",
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),  # not JSON
        forged({"id": 1}),  # not a list
        forged([1]),  # too few parts
        forged([1, "a", 2]),  # too many
        forged(["1", "a"]),  # a string where an int belongs
        forged([True, "a"]),  # a bool is not an int
        forged([1.5, "a"]),
        forged([2**63, "a"]),  # out of int64
        forged([-(2**63) - 1, "a"]),
        forged([1, None]),
        base64.urlsafe_b64encode(b"[" * 100_000).decode(),  # deeper than json.loads goes
    ],
)
def test_a_forged_cursor_is_a_usage_error(cursor: str) -> None:
    with pytest.raises(UsageError, match="invalid cursor"):
        decode_cursor(cursor, int, str)
