"""Plain-JSON forms of the core records, for storage payloads and the wire.

``to_data`` turns a record into JSON-ready dicts (times as ISO 8601 UTC, enums as their values);
``from_data`` rebuilds a record from such a dict using the record's type hints. A record class may
name former fields in ``RENAMED_FIELDS`` (old → new): ``to_data`` writes them beside the new ones,
``from_data`` reads them when the new one is absent.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar

from tether.core.clock import from_iso, to_iso
from tether.core.usage import Usage

T = TypeVar("T")


#: Types whose values are already JSON-ready (exact types: subclasses such as StrEnum are not).
_PLAIN: frozenset[type] = frozenset({str, int, float, bool, type(None)})
#: How to convert a value, by its exact type (decided once per type, in to_data's order).
_CONVERTERS: dict[type, Callable[[Any], Any]] = {}


def to_data(value: Any) -> Any:
    """A JSON-ready form of a record, list, dict, enum or time."""
    cls = type(value)
    if cls in _PLAIN:
        return value
    if cls is dict:
        return {k if type(k) is str else str(k): to_data(v) for k, v in value.items()}
    if cls is list:
        return [to_data(v) for v in value]
    convert = _CONVERTERS.get(cls)
    if convert is None:
        convert = _CONVERTERS[cls] = _converter(cls)
    return convert(value)


def _converter(cls: type) -> Callable[[Any], Any]:
    """The conversion for values of type cls: records, times, enums, sequences, mappings."""
    if dataclasses.is_dataclass(cls) and not issubclass(cls, type):
        names = tuple(f.name for f in dataclasses.fields(cls))
        with_total = issubclass(cls, Usage)
        former = _renamed(cls)

        def record(value: Any) -> dict[str, Any]:
            out = {name: to_data(getattr(value, name)) for name in names}
            if with_total:
                out["total_tokens"] = value.total_tokens
            for old, new in former:
                out[old] = out[new]
            return out

        return record
    if issubclass(cls, datetime):
        return to_iso
    if issubclass(cls, Enum):
        return _enum_value
    if issubclass(cls, list | tuple):
        return _sequence
    if issubclass(cls, dict):
        return _mapping
    return _same


def _enum_value(value: Enum) -> Any:
    return value._value_  # the attribute behind .value, without its descriptor


def _sequence(value: list[Any] | tuple[Any, ...]) -> list[Any]:
    return [to_data(v) for v in value]


def _mapping(value: dict[Any, Any]) -> dict[str, Any]:
    return {str(k): to_data(v) for k, v in value.items()}


def _same(value: Any) -> Any:
    return value


_HINTS: dict[type, dict[str, Any]] = {}
_RENAMED: dict[type, tuple[tuple[str, str], ...]] = {}


def _renamed(cls: type) -> tuple[tuple[str, str], ...]:
    """The (old, new) field names of cls's RENAMED_FIELDS."""
    renamed = _RENAMED.get(cls)
    if renamed is None:
        renamed = _RENAMED[cls] = tuple(getattr(cls, "RENAMED_FIELDS", {}).items())
    return renamed


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def from_data(cls: type[T], data: dict[str, Any]) -> T:
    """Rebuild a record of type cls from what to_data produced (unknown keys are ignored)."""
    hints = _hints(cls)
    former = _renamed(cls)
    if former:
        data = {**{new: data[old] for old, new in former if old in data}, **data}
    kwargs = {
        f.name: _convert(hints[f.name], data[f.name])
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.name in data
    }
    return cls(**kwargs)


def _convert(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return _convert(args[0], value) if len(args) == 1 else value
    if origin is tuple:
        return tuple(value)
    if origin is list:
        (item,) = typing.get_args(hint)
        return [_convert(item, v) for v in value]
    if hint is datetime:
        return from_iso(value)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return from_data(hint, value)
    return value
