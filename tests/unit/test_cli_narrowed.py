"""`tether <command> …` builds only that command (or group, and of the group only the command
named next): what it prints for its help, its usage mistakes and its work is what the whole
command line prints."""

from __future__ import annotations

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from tether.cli.main import _command_name, _narrowed, app

NAMES = sorted(
    {g.name for g in app.registered_groups if g.name}
    | {name for c in app.registered_commands if (name := _command_name(c))}
)


def test_every_command_and_group_is_reachable_narrowed() -> None:
    whole = get_command(app)
    assert set(NAMES) == set(whole.commands)  # type: ignore[attr-defined]
    for name in NAMES:
        narrow = get_command(_narrowed(app, [name]))
        assert list(narrow.commands) == [name]  # type: ignore[attr-defined]
    for other in ([], ["--help"], ["--version"], ["nope"], ["Sessions"]):
        assert _narrowed(app, other) is app
    assert len(app.registered_groups) + len(app.registered_commands) == len(NAMES)


def test_a_group_is_narrowed_to_the_command_named_next() -> None:
    whole = get_command(app)
    for group in app.registered_groups:
        assert group.name is not None
        names = list(whole.commands[group.name].commands)  # type: ignore[attr-defined]
        assert names, group.name
        for name in names:
            narrow = get_command(_narrowed(app, [group.name, name]))
            sub = narrow.commands[group.name]  # type: ignore[attr-defined]
            assert list(sub.commands) == [name]
        for other in ([group.name], [group.name, "--help"], [group.name, "nope"]):
            narrow = get_command(_narrowed(app, other))
            sub = narrow.commands[group.name]  # type: ignore[attr-defined]
            assert list(sub.commands) == names


@pytest.mark.parametrize(
    "args",
    [
        ["sessions", "--help"],
        ["sessions"],
        ["sessions", "messages", "--help"],
        ["sessions", "messages"],
        ["sessions", "messages", "s", "--tail", "0"],
        ["sessions", "nope"],
        ["sessions", "messages", "s", "--all", "--before", "3"],
        ["runs", "list", "--help"],
        ["runs", "show"],
        ["keys", "create", "--help"],
        ["demo", "--help"],
        ["serve", "--help"],
        ["sweep", "--db", "/nonexistent/t.db"],
        ["keys", "--help"],
    ],
)
def test_a_narrowed_command_prints_what_the_whole_one_prints(args: list[str]) -> None:
    runner = CliRunner()
    whole = runner.invoke(app, args, env={"COLUMNS": "100"})
    narrow = runner.invoke(_narrowed(app, args[:2]), args, env={"COLUMNS": "100"})
    assert (narrow.exit_code, narrow.output) == (whole.exit_code, whole.output)
    assert whole.output
