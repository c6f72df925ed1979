"""Open a store from a URL or path: SQLite by default, PostgreSQL for ``postgresql://`` URLs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from tether.core.errors import UsageError
from tether.store.base import Store

if TYPE_CHECKING:
    from tether.store.postgres.store import PostgresStore

DEFAULT_DB = "tether.db"


def sqlite_path(url: str) -> str:
    """The file a SQLite URL or bare path names."""
    if url.startswith("sqlite:///"):
        return url.removeprefix("sqlite:///") or ":memory:"
    if url.startswith("sqlite://"):
        return url.removeprefix("sqlite://") or ":memory:"
    return url


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


def redact_url(url: str) -> str:
    """A database URL fit to print: no password, no query."""
    if not is_postgres(url):
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    if parts.username:
        host = f"{parts.username}@{host}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def open_store(url: str | Path = DEFAULT_DB, *, durability: str = "normal") -> Store:
    """A migrated, ready store for url (a path, ``sqlite:///path``, ``:memory:`` or a
    ``postgresql://`` URL)."""
    text = str(url)
    if is_postgres(text):
        return _postgres_store(text)
    if "://" in text and not text.startswith("sqlite:"):
        raise UsageError(f"unsupported database URL {text!r}: use a file path or postgresql://")
    from tether.store.sqlite.store import SqliteStore

    if durability not in ("normal", "full"):
        raise UsageError(f"durability must be 'normal' or 'full', not {durability!r}")
    return SqliteStore(sqlite_path(text), durability=durability)  # type: ignore[arg-type]


def migrate_store(url: str | Path = DEFAULT_DB) -> tuple[int, int]:
    """Create or migrate the database at url; (schema version before, after)."""
    text = str(url)
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
    except ImportError as exc:  # psycopg is an optional extra
        raise UsageError(
            f"PostgreSQL needs psycopg: pip install 'tether[postgres]' ({exc})"
        ) from exc
    return PostgresStore(url, migrate=migrate)
