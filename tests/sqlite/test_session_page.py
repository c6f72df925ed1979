"""A page of sessions decodes only its own rows: the row read after them (to learn that there
is a next page) is not decoded, so a session Python cannot read spoils only its own page."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import tether


def test_the_row_after_a_page_is_not_decoded(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    with tether.open(path, owner="alice", worker=False) as tt:
        older = tt.sessions.create(title="older")
        tt.sessions.create(title="newer")
    with sqlite3.connect(path) as conn:  # metadata no tether writes: past int()'s digit limit
        conn.execute(
            "UPDATE sessions SET metadata = ? WHERE id = ?", ('{"n":1' + "0" * 5000 + "}", older.id)
        )
    with tether.open(path, owner="alice", worker=False) as tt:
        assert [s.title for s in tt.sessions.list(limit=1)] == ["newer"]
        with pytest.raises(ValueError, match="digits"):  # the row itself is unreadable
            tt.sessions.list(limit=2)
