"""The CLI's shared options are declared once (with_target) and its defaults come from the
settings: every command that reads sessions or runs takes the same target options, with their
environment variables, and ``serve``/``worker`` show the settings' own defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from tether.api.settings import ApiSettings
from tether.cli import durations
from tether.cli.app import DEFAULT_OWNER, Target, with_target
from tether.cli.main import app, main
from tether.runtime.settings import RuntimeSettings
from tether.store.factory import DEFAULT_DB

ROOT: Any = typer.main.get_command(app)
#: Commands that work on a database or, with --url, on a server.
TARGETED = [
    ("sessions", "list"),
    ("sessions", "show"),
    ("sessions", "close"),
    ("sessions", "create"),
    ("runs", "create"),
    ("messages", "add"),
    ("runs", "list"),
    ("runs", "show"),
    ("runs", "cancel"),
    ("runs", "resume"),
    ("tail",),
]
TARGET_OPTIONS = {
    "db": ("--db", "TETHER_DB", DEFAULT_DB),
    "url": ("--url", "TETHER_URL", None),
    "api_key": ("--api-key", "TETHER_API_KEY", None),
    "owner": ("--owner", "TETHER_OWNER", "local"),
}


def _command(*path: str) -> Any:
    command = ROOT
    for name in path:
        command = command.commands[name]
    return command


def _options(command: Any) -> dict[str, Any]:
    return {p.name: p for p in command.params}


@pytest.mark.parametrize("path", TARGETED, ids=" ".join)
def test_every_targeted_command_takes_the_same_target_options(path: tuple[str, ...]) -> None:
    options = _options(_command(*path))
    for name, (flag, envvar, default) in TARGET_OPTIONS.items():
        assert flag in options[name].opts
        assert options[name].envvar == envvar
        assert options[name].default == default
    assert "--json" in options["json"].opts


def test_serve_and_worker_show_the_settings_defaults() -> None:
    api, runtime = ApiSettings(), RuntimeSettings()
    serve = {n: p.default for n, p in _options(_command("serve")).items()}
    assert serve["db"] == api.db == DEFAULT_DB
    assert serve["workers"] == api.workers == runtime.concurrency
    assert serve["heartbeat_seconds"] == api.heartbeat_seconds
    assert serve["shutdown_grace"] == api.shutdown_grace == runtime.shutdown_grace
    assert serve["max_body_bytes"] == api.max_body_bytes
    worker = {n: p.default for n, p in _options(_command("worker")).items()}
    assert worker["concurrency"] == runtime.concurrency
    assert worker["lease_seconds"] == runtime.lease_seconds
    assert worker["grace_seconds"] == runtime.shutdown_grace
    flag = "--unroutable-after"
    assert durations.grace(serve["unroutable_after"], option=flag) == api.unroutable_after
    assert durations.grace(worker["unroutable_after"], option=flag) == runtime.unroutable_after
    assert runtime.owner == DEFAULT_OWNER


def test_a_new_command_gets_the_target_as_one_value(tmp_path: Path) -> None:
    seen: list[Target] = []
    probe = typer.Typer()

    @probe.command()
    @with_target
    def look(target: Target, thing: str, loud: bool = False) -> None:
        seen.append(target)
        print(thing, loud)

    env = {"TETHER_OWNER": "bob", "TETHER_API_KEY": "tk_env"}
    db = str(tmp_path / "t.db")
    done = CliRunner().invoke(probe, ["x", "--db", db, "--loud"], env=env)
    assert done.exit_code == 0, done.output
    assert done.output == "x True\n"
    [target] = seen
    assert (target.db, target.url, target.api_key, target.owner) == (db, None, "tk_env", "bob")
    source = target.ctx.get_parameter_source("db")
    assert source is not None and source.name == "COMMANDLINE"


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_the_commands_that_execute_runs_take_the_redaction_options(command: str) -> None:
    options = _options(_command(command))
    assert options["redact"].envvar == "TETHER_REDACT"
    assert options["redact"].default is True
    assert "--no-redact" in options["redact"].secondary_opts
    assert options["redact_pattern"].envvar == "TETHER_REDACT_PATTERNS"
    assert options["redact_pattern"].multiple


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_serve_and_worker_take_the_durability(command: str) -> None:
    durability = _options(_command(command))["durability"]
    assert durability.envvar == "TETHER_DURABILITY"
    assert durability.default == ApiSettings().durability == "normal"


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_a_bad_durability_is_one_line(command: str, tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    given = CliRunner().invoke(app, [command, "--db", db, "--durability", "fsync"])
    assert given.exit_code == 2
    assert given.output == "error: durability must be 'normal' or 'full', not 'fsync'\n"
    from_env = CliRunner().invoke(app, [command, "--db", db], env={"TETHER_DURABILITY": "x"})
    assert from_env.exit_code == 2 and "not 'x'" in from_env.output
    assert not (tmp_path / "t.db").exists()  # refused before anything was opened


@pytest.mark.parametrize("argv", [["sessions"], ["keys"], []])
def test_a_bare_group_prints_its_help_and_no_empty_error(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.argv", ["tether", *argv])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    out, err = capsys.readouterr()
    assert "Usage:" in out and "Commands" in out
    assert "error:" not in err


def test_a_usage_mistake_is_still_one_error_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.argv", ["tether", "sessions", "nope"])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: No such command 'nope'. (see `") and err.count("\n") == 1
