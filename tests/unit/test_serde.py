"""core/serde.py: every record of tether.core survives ``to_data`` → JSON → ``from_data``
unchanged, whatever its field values (Hypothesis builds them from the records' own type hints,
so a field added to a record is covered without touching this file)."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import pkgutil
import types
import typing
from datetime import UTC, datetime
from enum import Enum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tether.core
from tether.core.serde import from_data, to_data
from tether.core.usage import Usage

#: Any JSON value (what a record's Any and dict[str, Any] fields hold).
JSON: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
#: Aware UTC times, as the clock makes them (microsecond precision).
TIMES = st.datetimes(timezones=st.just(UTC))


def records() -> list[type]:
    """Every non-generic dataclass defined in a module of tether.core."""
    found: list[type] = []
    for module_info in pkgutil.iter_modules(tether.core.__path__, "tether.core."):
        module = importlib.import_module(module_info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and dataclasses.is_dataclass(value)
                and value.__module__ == module.__name__
                and not getattr(value, "__parameters__", ())
            ):
                found.append(value)
    return sorted(found, key=lambda cls: cls.__qualname__)


def strategy(hint: Any) -> st.SearchStrategy[Any]:
    """Values of a field typed hint, as the record may hold them."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return JSON
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(strategy(arg) for arg in args))
    if origin is dict:
        return st.dictionaries(st.text(), strategy(args[1]), max_size=4)
    if origin is list:
        return st.lists(strategy(args[0]), max_size=4)
    if origin is tuple:
        return st.lists(strategy(args[0]), max_size=4).map(tuple)
    if origin is typing.Literal:
        return st.sampled_from(args)
    if hint is datetime:
        return TIMES
    if hint is type(None):
        return st.none()
    if hint is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return st.sampled_from(list(hint))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return record(hint)
    return st.from_type(hint)


@functools.cache
def record(cls: type) -> st.SearchStrategy[Any]:
    """Instances of cls with every field drawn from its type hint (built once per class)."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: strategy(hints[f.name]) for f in dataclasses.fields(cls) if f.init}
    return st.builds(cls, **fields)


RECORDS = records()


def test_the_records_are_found() -> None:
    names = {cls.__name__ for cls in RECORDS}
    assert {"Session", "Run", "Step", "Message", "MemoryItem", "Event", "Usage"} <= names


@pytest.mark.parametrize("cls", RECORDS, ids=lambda cls: cls.__name__)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_record_round_trips_through_json(cls: type, data: st.DataObject) -> None:
    value = data.draw(record(cls))
    wire = json.loads(json.dumps(to_data(value)))
    assert from_data(cls, wire) == value


@given(usage=record(Usage))
def test_usage_carries_its_total(usage: Usage) -> None:
    assert to_data(usage)["total_tokens"] == usage.input_tokens + usage.output_tokens


def test_unknown_keys_are_ignored_and_missing_ones_take_the_default() -> None:
    assert from_data(Usage, {"input_tokens": 3, "total_tokens": 3, "extra": 1}) == Usage(3)
