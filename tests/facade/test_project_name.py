"""A session's project in the library: ``project=`` and ``Session.project``; the former name
``context`` still works everywhere with a DeprecationWarning pointing at the caller's line, and
both names disagreeing is a UsageError. Data written before the rename still reads."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path

import pytest

import tether
from tether.core.event import Event, EventType
from tether.core.serde import from_data, to_data

DEPRECATED = "context= .*is deprecated: use project="


def test_project_names_what_a_session_works_on(tmp_path: Path) -> None:
    with tether.open(tmp_path / "t.db", worker=False) as tt, warnings.catch_warnings():
        warnings.simplefilter("error")  # the new name warns about nothing
        s = tt.sessions.create(project={"workspace": "./calc"})
        assert s.project == {"workspace": "./calc"}
        assert s.update(project={"workspace": "./b"}).project == {"workspace": "./b"}
        got = tt.sessions.get_or_create("k", project={"x": 1})
        assert got.project == {"x": 1}
        assert tt.sessions.get(s.id).assembled_context()["project"] == {"workspace": "./b"}


def test_the_former_name_works_with_a_warning_at_the_callers_line(tmp_path: Path) -> None:
    with tether.open(tmp_path / "t.db", worker=False) as tt:
        with pytest.warns(DeprecationWarning, match=DEPRECATED) as caught:
            s = tt.sessions.create(context={"workspace": "./calc"})
        assert caught[0].filename == __file__
        assert s.project == {"workspace": "./calc"}
        with pytest.warns(DeprecationWarning, match="use Session.project") as caught:
            assert s.context == {"workspace": "./calc"}
        assert caught[0].filename == __file__
        with pytest.warns(DeprecationWarning, match=DEPRECATED) as caught:
            updated = s.update(context={"workspace": "./b"})
        assert caught[0].filename == __file__ and updated.project == {"workspace": "./b"}
        with pytest.warns(DeprecationWarning, match=DEPRECATED):
            assert tt.sessions.get_or_create("k", context={"x": 1}).project == {"x": 1}
        with pytest.warns(DeprecationWarning, match=DEPRECATED):
            same = tt.sessions.create(project={"a": 1}, context={"a": 1})
        assert same.project == {"a": 1}


def test_both_names_disagreeing_is_refused(tmp_path: Path) -> None:
    with tether.open(tmp_path / "t.db", worker=False) as tt:
        with pytest.warns(DeprecationWarning), pytest.raises(tether.UsageError, match="disagree"):
            tt.sessions.create(project={"a": 1}, context={"a": 2})
        s = tt.sessions.create(project={"a": 1})
        with pytest.warns(DeprecationWarning), pytest.raises(tether.UsageError, match="disagree"):
            s.update(project={"a": 2}, context={"a": 3})
        assert s.refresh().project == {"a": 1}


def test_the_async_twin_and_the_service_take_both_names(tmp_path: Path) -> None:
    async def main() -> None:
        async with await tether.open_async(tmp_path / "t.db", worker=False) as tt:
            s = await tt.sessions.create(project={"a": 1})
            with pytest.warns(DeprecationWarning, match=DEPRECATED) as caught:
                s = await s.update(context={"a": 2})
            assert caught[0].filename == __file__ and s.project == {"a": 2}
            with pytest.warns(DeprecationWarning, match=DEPRECATED) as caught:
                made = await tt.backend.create_session(context={"b": 1})
            assert caught[0].filename == __file__ and made.project == {"b": 1}

    asyncio.run(main())


def test_records_written_before_the_rename_still_read() -> None:
    data = to_data(from_data(tether.Session, _OLD_SESSION))
    assert data["project"] == data["context"] == {"workspace": "./calc"}
    event = Event(
        id=1,
        type=EventType.SESSION_CREATED,
        owner="alice",
        created_at=from_data(tether.Session, _OLD_SESSION).created_at,
        data={"session": _OLD_SESSION},
    )
    assert event.session.project == {"workspace": "./calc"}


#: A session as a session.created event stored it before the rename: "context", no "project".
_OLD_SESSION = {
    "id": "019a0000-0000-7000-8000-000000000001",
    "owner": "alice",
    "title": None,
    "status": "active",
    "created_at": "2026-01-01T00:00:00Z",
    "updated_at": "2026-01-01T00:00:00Z",
    "last_activity_at": "2026-01-01T00:00:00Z",
    "context": {"workspace": "./calc"},
}
