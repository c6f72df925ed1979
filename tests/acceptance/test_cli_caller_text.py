"""Text a caller wrote (goals, titles, prompts) reaches the operator's terminal as text: its
control characters shown escaped (\\x1b), its [markup] shown as written."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import tether
from tests.waiting import WAIT
from tether.cli.main import app

#: Turns the terminal's text red and clears the screen, rich markup, a bell, a C1 CSI and a
#: right-to-left override (what follows it shows reversed).
HOSTILE = "\x1b[31m\x1b[2J[bold]loud[/bold]\x07\x9b\u202e"


@pytest.fixture
def stored(tmp_path: Path) -> tuple[str, str, str]:
    """A database, and a session and a waiting run of it whose texts are all HOSTILE."""
    db = str(tmp_path / "t.db")
    with tether.open(db) as tt:
        session = tt.sessions.create(title=HOSTILE)
        run = session.runs.create(HOSTILE, agent="echo", input={"wait": HOSTILE})
        run.wait(WAIT)
        return db, session.id, run.id


@pytest.mark.parametrize(
    ("command", "whole"),
    [
        (("runs", "show", "{run}"), True),
        (("sessions", "show", "{session}"), True),
        (("runs", "list", "{session}"), False),
        (("sessions", "list"), False),
    ],
)
def test_caller_text_is_shown_not_acted_on(
    stored: tuple[str, str, str], command: tuple[str, ...], whole: bool
) -> None:
    db, session, run = stored
    args = [part.format(run=run, session=session) for part in command]
    shown = CliRunner().invoke(app, [*args, "--db", db], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    for acted_on in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert acted_on not in shown.stdout
    if whole:  # a table cuts the text to the terminal's width
        assert "\\x1b[31m\\x1b[2J[bold]loud[/bold]\\x07\\x9b\\u202e" in shown.stdout
