"""``tether runs list`` without a session: the runs of every session, newest first, filtered
(--status, --agent, --since, --query, --stuck); bad filters are one line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import tether
from tests.serving import cli
from tether.core.status import RunStatus

pytestmark = pytest.mark.slow


def _ids(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, done.stderr
    return [r["id"] for r in json.loads(done.stdout)["data"]]


def test_runs_list_across_sessions_with_filters(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    with tether.open(db) as tt:
        first = tt.sessions.create(title="one")
        greet = first.runs.create("greet", agent="echo").wait(30)
        broke = first.runs.create("break", input={"fail": "it broke"}).wait(30)
        assert (greet.status, broke.status) == (RunStatus.COMPLETED, RunStatus.FAILED)
    with tether.open(db, worker=False) as tt:  # no worker runs: the coder run waits
        stuck = tt.sessions.create(title="two").runs.create("fix", agent="coder")
    every = cli("runs", "list", "--db", db, "--json")
    assert _ids(every) == [stuck.id, broke.id, greet.id]
    failed = cli("runs", "list", "--status", "failed", "--since", "1d", "--db", db, "--json")
    assert _ids(failed) == [broke.id]
    assert _ids(cli("runs", "list", "--agent", "coder", "--db", db, "--json")) == [stuck.id]
    assert _ids(cli("runs", "list", "--query", "it broke", "--db", db, "--json")) == [broke.id]
    assert _ids(cli("runs", "list", "--stuck", "--db", db, "--json")) == [stuck.id]
    assert _ids(cli("runs", "list", "--until", "1d", "--db", db, "--json")) == []
    table = cli("runs", "list", "--db", db, env={"COLUMNS": "300"})
    assert table.returncode == 0 and "stuck: no worker" in table.stdout


def test_bad_filters_are_one_line(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    tether.open(db).close()
    for args, words in (
        (("--since", "yesterday"), "--since"),
        (("--status", "lost"), "status must be one of"),
        (("SESSION", "--stuck"), "leave out SESSION"),
    ):
        done = cli("runs", "list", *args, "--db", db)
        assert done.returncode != 0
        assert words in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "Traceback" not in done.stderr
