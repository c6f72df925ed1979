"""Shared CLI plumbing: the --db/--json options, the target options (--db, --url, --api-key,
--owner) declared once, opening the store, one-line errors."""

from __future__ import annotations

import functools
import inspect
import json
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from tether.core.errors import TetherError, UsageError
from tether.runtime.settings import RuntimeSettings
from tether.store.factory import DEFAULT_DB, check_url, is_postgres, sqlite_path

if TYPE_CHECKING:  # the runtime and the store load when a command opens them, not at start-up
    from tether.runtime.facade import Tether
    from tether.runtime.handles import SessionHandle

F = TypeVar("F", bound=Callable[..., Any])

#: Piped output (a file, a pager, another program) is not cut to 80 columns: ids, commands and
#: table cells stay whole. COLUMNS still sets the width.
_PIPED_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160
console = Console(width=_PIPED_WIDTH)
err_console = Console(stderr=True)

DbOption = Annotated[
    str,
    typer.Option(
        "--db",
        envvar="TETHER_DB",
        help="Database: a SQLite file path or a postgresql:// URL.",
        show_default=True,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url", envvar="TETHER_URL", help="A tether server to ask instead of the database."
    ),
]
ApiKeyOption = Annotated[
    str | None,
    typer.Option("--api-key", envvar="TETHER_API_KEY", help="API key for --url."),
]
OwnerOption = Annotated[
    str,
    typer.Option(
        "--owner",
        envvar="TETHER_OWNER",
        help="Whose sessions to see in the database (with --url, the API key decides).",
    ),
]
KeyOption = Annotated[
    bool,
    typer.Option(
        "--key",
        help="SESSION is the session's external key (your own name for it), not its id.",
    ),
]
DurabilityOption = Annotated[
    str,
    typer.Option(
        envvar="TETHER_DURABILITY",
        help="SQLite durability: normal (survives a crash of the process) or full (a power "
        "loss too: every write waits for a flush, shared by the writes of that moment). "
        "PostgreSQL ignores it (its synchronous_commit decides).",
    ),
]
UnroutableAfterOption = Annotated[
    str,
    typer.Option(
        envvar="TETHER_UNROUTABLE_AFTER",
        help="How long a ready run whose agent no running worker has waits before it fails "
        "with agent_not_found (90s, 15m, 1h, 1d …, or never).",
    ),
]
DEFAULT_OWNER = RuntimeSettings().owner


def fail(message: str, code: int = 1) -> None:
    """Print one clear line to stderr and exit non-zero (message is plain text: brackets in it,
    as in ``tether[otel]``, are not markup)."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def finite(value: float) -> float:
    """An option callback refusing nan (which every range check lets through)."""
    if not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a number of seconds")
    return value


def handles_errors(fn: F) -> F:
    """Turn tether's errors (and interrupted commands) into one line and an exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except UsageError as exc:
            fail(str(exc), 2)
        except TetherError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            fail("interrupted", 130)
        except OSError as exc:
            fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
        return None

    return wrapper  # type: ignore[return-value]


def open_db(
    db: str,
    *,
    create: bool = False,
    worker: bool = False,
    owner: str = DEFAULT_OWNER,
    settings: RuntimeSettings | None = None,
) -> Tether:
    """Open the database as owner; refuse a missing SQLite file unless create."""
    from tether.runtime.facade import open as open_tether

    check_url(db)
    if not is_postgres(db):
        path = sqlite_path(db)
        if path != ":memory:" and not create and not Path(path).exists():
            fail(f"no tether database at {path} (run `tether demo`, or pass --db / TETHER_DB)")
    return open_tether(db, worker=worker, owner=owner, settings=settings)


def open_target(
    ctx: typer.Context, db: str, url: str | None, api_key: str | None, owner: str = DEFAULT_OWNER
) -> Tether:
    """The server at url when given (--url / TETHER_URL), else the database (as owner). A flag
    given on the command line wins over the other one's environment variable; both flags
    together are a usage mistake."""
    if url:
        given = _from_command_line(ctx, "db"), _from_command_line(ctx, "url")
        if all(given):
            raise UsageError("give --db or --url, not both")
        if given[0]:
            url = None  # --db on the command line beats TETHER_URL
    if url:
        from tether.client import connect

        return connect(url, api_key=api_key)
    return open_db(db, owner=owner)


@dataclass(frozen=True, slots=True)
class Target:
    """What a command works on: the database as one owner, or the server at --url."""

    ctx: typer.Context
    db: str
    url: str | None
    api_key: str | None
    owner: str

    def open(self) -> Tether:
        return open_target(self.ctx, self.db, self.url, self.api_key, self.owner)


#: The options with_target gives a command, in place of its target parameter.
_TARGET_OPTIONS = (
    inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context),
    inspect.Parameter(
        "db", inspect.Parameter.KEYWORD_ONLY, annotation=DbOption, default=DEFAULT_DB
    ),
    inspect.Parameter("url", inspect.Parameter.KEYWORD_ONLY, annotation=UrlOption, default=None),
    inspect.Parameter(
        "api_key", inspect.Parameter.KEYWORD_ONLY, annotation=ApiKeyOption, default=None
    ),
    inspect.Parameter(
        "owner", inspect.Parameter.KEYWORD_ONLY, annotation=OwnerOption, default=DEFAULT_OWNER
    ),
)


def with_target(command: F) -> F:
    """Give command the --db, --url, --api-key and --owner options (and their variables), and
    call it with them as one ``target: Target``. A command that works on a database or a server
    declares ``target: Target`` instead of the four options. (Typer passes every parameter by
    name, so all are keyword-only here: the options stand where target stood.)"""
    signature = inspect.signature(command, eval_str=True)
    params: list[inspect.Parameter] = []
    for param in signature.parameters.values():
        if param.name == "target":
            params += _TARGET_OPTIONS
        else:
            params.append(param.replace(kind=inspect.Parameter.KEYWORD_ONLY))

    @functools.wraps(command)
    def run(
        *, ctx: typer.Context, db: str, url: str | None, api_key: str | None, owner: str, **own: Any
    ) -> Any:
        return command(target=Target(ctx, db, url, api_key, owner), **own)

    run.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    return run  # type: ignore[return-value]


def _from_command_line(ctx: typer.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def data_of(value: Any) -> Any:
    """A record (or a list of them) as --json prints it: as the HTTP API does, a session
    carries its ``expires_at``."""
    from tether.core.serde import to_data
    from tether.core.session import Session

    if isinstance(value, Session):
        out: dict[str, Any] = to_data(value)
        out["expires_at"] = to_data(value.expires_at)
        return out
    if isinstance(value, list):
        return [data_of(v) for v in value]
    return to_data(value)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def find_session(tt: Tether, session: str, by_key: bool) -> SessionHandle:
    """The session named on the command line: by its id, or by its external key with --key
    (never one for the other)."""
    return tt.sessions.get(key=session) if by_key else tt.sessions.get(session)
