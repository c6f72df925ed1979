"""Open a store from a URL or path: SQLite by default, PostgreSQL for ``postgresql://`` URLs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from tether.core.errors import MissingExtra, UsageError

if TYPE_CHECKING:
    from tether.store.base import Store
    from tether.store.postgres.store import PostgresStore

DEFAULT_DB = "tether.db"
#: What SQLite's durability may be: ``normal`` (survives a crash of the process) or ``full``
#: (survives a power loss too).
DURABILITIES = ("normal", "full")


def sqlite_path(url: str) -> str:
    """The file a SQLite URL or bare path names; UsageError when a URL names none."""
    for prefix in ("sqlite:///", "sqlite://"):
        if url.startswith(prefix):
            path = url.removeprefix(prefix)
            if not path.strip():
                raise UsageError(
                    f"{url} names no database file: give sqlite:///PATH "
                    "(or :memory: for a database that is gone when the process ends)"
                )
            return path
    return url


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


def redact_url(url: str) -> str:
    """A database URL fit to print: no password, no query."""
    if not is_postgres(url):
        return url
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
    except ValueError:  # malformed: nothing of it is shown
        return url.split("://", 1)[0] + "://…"
    if parts.username:
        host = f"{parts.username}@{host}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def check_url(url: str | Path) -> str:
    """url as text, or UsageError when it names no database tether can open."""
    text = str(url)
    if not text.strip():
        raise UsageError("the database is empty: give a file path or a postgresql:// URL")
    if "://" in text and not is_postgres(text) and not text.startswith("sqlite:"):
        scheme = text.split("://", 1)[0]
        raise UsageError(
            f"unsupported database URL scheme {scheme!r}: use a file path, sqlite:///PATH "
            "or postgresql://"
        )
    if not is_postgres(text):
        sqlite_path(text)
    return text


def check_durability(durability: str) -> str:
    """durability when it is one tether knows; UsageError otherwise."""
    if durability not in DURABILITIES:
        raise UsageError(f"durability must be 'normal' or 'full', not {durability!r}")
    return durability


def open_store(
    url: str | Path = DEFAULT_DB, *, durability: str = "normal", group_commit: bool = False
) -> Store:
    """A migrated, ready store for url (a path, ``sqlite:///path``, ``:memory:`` or a
    ``postgresql://`` URL). durability and group_commit (at ``full``: concurrent writers share
    flushes, off the event loop; for servers) apply to SQLite; PostgreSQL's durability is the
    server's own (``synchronous_commit``), whichever is given."""
    check_durability(durability)
    text = check_url(url)
    if is_postgres(text):
        return _postgres_store(text)
    from tether.store.sqlite.store import SqliteStore

    return SqliteStore(
        sqlite_path(text),
        durability=durability,  # type: ignore[arg-type]
        group_commit=group_commit,
    )


def migrate_store(url: str | Path = DEFAULT_DB) -> tuple[int, int]:
    """Create or migrate the database at url; (schema version before, after)."""
    text = check_url(url)
    if is_postgres(text):
        return _postgres_store(text, migrate=False).database.migrate()
    from tether.store.sqlite.database import SqliteDatabase

    database = SqliteDatabase(sqlite_path(text), migrate=False)
    try:
        return database.migrate()
    finally:
        database.close_now()


def _postgres_store(url: str, *, migrate: bool = True) -> PostgresStore:
    try:
        from tether.store.postgres.store import PostgresStore
    except ModuleNotFoundError as exc:  # psycopg is an optional extra
        raise MissingExtra("PostgreSQL", "postgres", exc.name) from exc
    return PostgresStore(url, migrate=migrate)
