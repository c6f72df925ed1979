"""core/ids.py: UUIDv7 ids, time-ordered, in one canonical spelling."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

import pytest

from tether.core.ids import is_id, made_at, new_id, new_ids


def test_ids_made_in_one_process_strictly_increase() -> None:
    ids = [new_id() for _ in range(20_000)]  # many share a millisecond: the counter orders them
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


def test_ids_made_many_at_once_increase_with_those_made_one_by_one() -> None:
    ids = [new_id(), *new_ids(5000), new_id(), *new_ids(1), new_id()]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    parsed = [uuid.UUID(made) for made in ids]
    assert all(p.version == 7 and p.variant == uuid.RFC_4122 for p in parsed)
    assert all(is_id(made) for made in ids)
    assert new_ids(0) == []


def test_an_id_is_a_canonical_uuid_version_7() -> None:
    made = new_id()
    parsed = uuid.UUID(made)
    assert str(parsed) == made and parsed.version == 7 and parsed.variant == uuid.RFC_4122
    assert is_id(made)


def test_an_id_says_when_it_was_made() -> None:
    before = time.time_ns() // 1_000_000
    made = made_at(new_id())
    after = time.time_ns() // 1_000_000
    assert made is not None and made.tzinfo is UTC
    assert before <= made.timestamp() * 1000 <= after


#: A UUIDv7 written as new_id writes it.
SOME_ID = "01890a5d-ac96-774b-bcce-b302099a8057"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not an id",
        SOME_ID.upper(),  # one UUID, one spelling
        "{" + SOME_ID + "}",
        SOME_ID.replace("-", ""),
        SOME_ID + " ",
        None,
        42,
    ],
)
def test_anything_but_the_canonical_form_is_not_an_id(text: object) -> None:
    assert not is_id(text)  # type: ignore[arg-type]


def test_only_a_version_7_id_has_a_time() -> None:
    assert made_at(str(uuid.uuid4())) is None
    assert made_at("garbage") is None
    assert is_id(SOME_ID)
    assert made_at(SOME_ID) == datetime(2023, 6, 30, 3, 34, 18, 518000, tzinfo=UTC)
