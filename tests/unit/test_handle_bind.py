"""runtime/handles.bind: a handle holds every field of its record, and its runtime."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tether.core.run import ErrorInfo, Run
from tether.core.session import Session
from tether.core.status import RunStatus, SessionStatus
from tether.core.usage import Usage
from tether.runtime.async_facade import AsyncRunHandle, AsyncSessionHandle
from tether.runtime.handles import RunHandle, SessionHandle, bind

_AT = datetime(2026, 12, 5, 1, 2, 3, 456789, tzinfo=UTC)
_SESSION = Session(
    "s1", "alice", "a title", SessionStatus.CLOSED, _AT, _AT + timedelta(1), _AT, 60,
    {"k": [1]}, {"repo": "x"}, _AT, 3, Usage(1, 2, 3), "key", "app",
)  # fmt: skip
_RUN = Run(
    "r1", "s1", "alice", 2, "echo", "a goal", RunStatus.FAILED, _AT, _AT, {"in": 1}, _AT, _AT,
    ErrorInfo("E", "m", "st1"), {"out": 2}, Usage(4, 5, 6), 2, 3, {"m": 1}, 1.5, 2.5, "idem",
    {"kind": "input"}, {"messages": []}, "w1", _AT, _AT, "00-trace",
)  # fmt: skip


@pytest.mark.parametrize(
    ("cls", "record"),
    [
        (SessionHandle, _SESSION),
        (AsyncSessionHandle, _SESSION),
        (RunHandle, _RUN),
        (AsyncRunHandle, _RUN),
    ],
)
def test_a_handle_holds_every_field_of_its_record(cls: type[Any], record: Any) -> None:
    runtime = object()
    handle = bind(cls, record, runtime)
    assert type(handle) is cls and handle._tt is runtime
    names = [f.name for f in dataclasses.fields(record)]
    assert all(getattr(handle, n) is getattr(record, n) for n in names)
    assert handle == cls(*(getattr(record, n) for n in names))
    again = bind(cls, handle, object())  # a handle's fields, bound anew
    assert again == handle and again._tt is not runtime
    with pytest.raises(dataclasses.FrozenInstanceError):
        handle.id = "other"
