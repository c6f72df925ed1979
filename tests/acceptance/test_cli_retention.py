"""``tether db prune`` and ``tether owners erase`` on a database file: counts, a dry run, the
typed confirmation, and one-line errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import tether
from tests.serving import TETHER, cli

pytestmark = pytest.mark.slow


def _db_with_sessions(tmp_path: Path) -> str:
    db = str(tmp_path / "t.db")
    with tether.open(db, owner="alice") as tt:
        closed = tt.sessions.create(title="done")
        closed.runs.create("hi").wait(30)
        closed.close()
        tt.sessions.create(title="open")
    return db


def test_prune_counts_then_deletes_closed_sessions(tmp_path: Path) -> None:
    db = _db_with_sessions(tmp_path)
    dry = cli("db", "prune", "--closed-older-than", "0s", "--dry-run", "--db", db, "--json")
    assert dry.returncode == 0, dry.stderr
    counted = json.loads(dry.stdout)
    assert (counted["sessions"], counted["dry_run"]) == (1, True)
    assert counted["before"] == counted["after"]
    done = cli("db", "prune", "--closed-older-than", "0s", "--db", db, "--json")
    report = json.loads(done.stdout)
    assert report["sessions"] == 1
    assert (report["before"]["sessions"], report["after"]["sessions"]) == (2, 1)
    assert (report["before"]["runs"], report["after"]["runs"]) == (1, 0)
    kept = cli("db", "prune", "--closed-older-than", "90d", "--db", db)
    assert kept.returncode == 0 and "deleted 0 session(s)" in kept.stdout
    for args, words in (
        ((), "say what to prune"),
        (("--closed-older-than", "soon"), "is no duration"),
    ):
        bad = cli("db", "prune", *args, "--db", db)
        assert bad.returncode == 2 and words in bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def test_erasing_an_owner_needs_the_name_typed(tmp_path: Path) -> None:
    db = _db_with_sessions(tmp_path)

    def erase(typed: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*TETHER, "owners", "erase", "alice", "--db", db],
            input=typed + "\n",
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    refused = erase("bob")
    assert refused.returncode == 1 and "nothing was erased" in refused.stderr
    listed = cli("sessions", "list", "--db", db, "--owner", "alice", "--json")
    assert len(json.loads(listed.stdout)["data"]) == 2
    done = erase("alice")
    assert done.returncode == 0, done.stderr
    assert "erased 2 session(s)" in done.stdout
    listed = cli("sessions", "list", "--db", db, "--owner", "alice", "--json")
    assert json.loads(listed.stdout)["data"] == []
    scripted = cli("owners", "erase", "alice", "--yes", "--db", db, "--json")
    assert json.loads(scripted.stdout)["sessions"] == 0
