"""Copy a whole tether database into another (SQLite → PostgreSQL, or any pair), verified.

Every table (API keys included) is copied by key order, ids and event ids preserved, inside
one target transaction (an interrupted copy leaves the target as it was); the event id sequence
then continues after every id either database handed out (copied, or deleted before), so a
stream cursor carried across never skips an event. Verification reads both sides again:
per-table row counts, and a SHA-256 over a canonical serialization of the rows (columns in a
fixed order, JSON values parsed and written back with sorted keys), so a byte-level difference
between backends (jsonb spacing) does not count, and any difference in content does. The
columns are those of the schema: before anything is written, each table's columns are read from
both databases (PRAGMA table_info, information_schema) and a column the copy would not carry is
refused, so none is ever dropped and every one is verified.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from tether.core.errors import Conflict, StoreError, UsageError
from tether.store.base import Store
from tether.store.factory import open_store
from tether.store.sql.database import Database, Row
from tether.store.sql.store import SqlStore


@dataclass(frozen=True, slots=True)
class Table:
    """A table as the copier sees it."""

    name: str
    key: tuple[str, ...]
    columns: tuple[str, ...]
    json: frozenset[str]
    #: A key before every row's (text keys start after "", integer ids after 0).
    before_first: tuple[Any, ...]


def _table(
    name: str, key: str, columns: str, json_columns: str, first: tuple[Any, ...] | None = None
) -> Table:
    keys = tuple(key.split())
    if first is None:
        first = (0,) if name == "events" else ("",) * len(keys)
    return Table(name, keys, tuple(columns.split()), frozenset(json_columns.split()), first)


#: Tables left out: which workers are running (their announcements) belongs to the source's
#: processes, not to its data.
NOT_COPIED = frozenset({"workers"})

#: Columns a database derives from the others by itself (SQLite's triggers keep the second of
#: a session's last activity): neither carried nor refused, since the target derives them again.
DERIVED = frozenset({("sessions", "activity_second")})

#: Every other table of the schema, in an order that keeps references pointing backwards.
TABLES: tuple[Table, ...] = (
    _table(
        "sessions",
        "id",
        "id owner title status metadata context ttl_seconds created_at updated_at "
        "last_activity_at closed_at run_count message_count input_tokens output_tokens "
        "model_requests deleted_runs external_key app cleared_seq temporary",
        "metadata context",
    ),
    _table(
        "runs",
        "id",
        "id session_id owner seq agent goal input status created_at updated_at started_at "
        "ended_at error output input_tokens output_tokens model_requests attempt max_attempts "
        "metadata timeout_seconds wait_timeout_seconds idempotency_key waiting_for context "
        "worker_id lease_expires_at deadline_at not_before step_count traceparent",
        "input error output metadata waiting_for context",
    ),
    _table(
        "steps",
        "id",
        "id run_id session_id seq position kind name status input output error started_at "
        "ended_at input_tokens output_tokens model_requests attempt",
        "input output error",
    ),
    _table(
        "messages",
        "id",
        "id session_id seq role content run_id metadata created_at item removed_at",
        "metadata item",
    ),
    _table(
        "memory",
        "scope scope_id namespace key",
        "scope scope_id namespace key value session_id source_run_id created_at updated_at",
        "value",
    ),
    _table("events", "id", "id type owner session_id run_id data created_at", "data"),
    _table("api_keys", "id", "id owner key_hash prefix name created_at revoked_at", ""),
    _table("ui_sessions", "token_hash", "token_hash key_id owner created_at expires_at", ""),
    _table(
        "schedules",
        "id",
        "id owner cron timezone agent goal input session_id metadata end_at enabled "
        "next_run_at last_run_id created_at updated_at",
        "input metadata",
    ),
    _table(
        "webhook_deliveries",
        "id",
        "id run_id owner url shape state attempts next_attempt_at created_at updated_at",
        "",
    ),
    _table("webhook_secrets", "owner", "owner secret created_at", ""),
    _table("checkpoint_threads", "id", "id session_id", "", (0,)),
    _table(
        "checkpoints",
        "thread checkpoint_ns checkpoint_id",
        "thread checkpoint_ns checkpoint_id parent_id run_id type checkpoint metadata_type "
        "metadata channels created_at",
        "channels",
        (0, "", ""),
    ),
    _table(
        "checkpoint_blobs",
        "thread checkpoint_ns channel version",
        "thread checkpoint_ns channel version type value",
        "",
        (0, "", "", ""),
    ),
    _table(
        "checkpoint_writes",
        "thread checkpoint_ns checkpoint_id task_id idx",
        "thread checkpoint_ns checkpoint_id task_id idx channel type value task_path",
        "",
        # (special writes have negative indexes)
        (0, "", "", "", -(2**31)),
    ),
    _table(
        "assistants",
        "id",
        "id owner graph_id name description config context metadata version created_at updated_at",
        "config context metadata",
    ),
    _table(
        "assistant_versions",
        "assistant_id version",
        "assistant_id version graph_id name description config context metadata created_at",
        "config context metadata",
        ("", 0),
    ),
)

#: (phase, table, rows done, rows in the table); phase is "copy" or "verify".
Progress = Callable[[str, str, int, int], None]


@dataclass(slots=True)
class TableReport:
    """One table on both sides."""

    name: str
    source_rows: int = 0
    target_rows: int = 0
    source_checksum: str = ""
    target_checksum: str = ""

    @property
    def ok(self) -> bool:
        return self.source_rows == self.target_rows and self.source_checksum == self.target_checksum


@dataclass(slots=True)
class CopyReport:
    """What a copy did and whether both sides hold the same rows."""

    source: str
    target: str
    tables: list[TableReport] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def verified(self) -> bool:
        return all(t.ok for t in self.tables)

    @property
    def rows(self) -> int:
        return sum(t.source_rows for t in self.tables)

    def to_data(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "verified": self.verified,
            "rows": self.rows,
            "seconds": round(self.seconds, 3),
            "tables": {
                t.name: {
                    "source_rows": t.source_rows,
                    "target_rows": t.target_rows,
                    "source_checksum": t.source_checksum,
                    "target_checksum": t.target_checksum,
                    "match": t.ok,
                }
                for t in self.tables
            },
        }


async def copy_url(
    source_url: str,
    target_url: str,
    *,
    replace: bool = False,
    batch: int = 1000,
    progress: Progress | None = None,
) -> CopyReport:
    """Open both databases (migrating them to this tether's schema), copy, verify, close."""
    if source_url == target_url:
        raise UsageError("the source and the target of a copy are the same database")
    source = open_store(source_url)
    try:
        target = open_store(target_url)
        try:
            return await copy_store(source, target, replace=replace, batch=batch, progress=progress)
        finally:
            await target.close()
    finally:
        await source.close()


async def copy_store(
    source: Store,
    target: Store,
    *,
    replace: bool = False,
    batch: int = 1000,
    progress: Progress | None = None,
) -> CopyReport:
    """Copy every row of source into target, then verify both sides match.

    A target that already holds data is refused (Conflict) unless replace, which empties it
    first, in the same transaction.
    """
    src, dst = _database(source), _database(target)
    for db, location in ((src, source.location), (dst, target.location)):
        await _check_columns(db, location)
    started = time.perf_counter()
    report = CopyReport(source.location, target.location)
    totals = {t.name: await _count(src, t) for t in TABLES}
    existing = {t.name: await _count(dst, t) for t in TABLES}
    if any(existing.values()) and not replace:
        held = ", ".join(f"{n} {name}" for name, n in existing.items() if n)
        raise Conflict(
            f"the target {target.location} is not empty ({held}): "
            "pass --force to replace its contents"
        )
    async with src.read() as rtx:
        floor = await rtx.one("copy_event_floor")
    async with dst.write() as tx:
        if replace:
            for table in reversed(TABLES):
                await tx.run(f"copy_clear_{table.name}")
        for table in TABLES:
            done = 0
            async for rows in _pages(src, table, batch):
                await tx.many(f"copy_insert_{table.name}", [dict(r) for r in rows])
                done += len(rows)
                if progress:
                    progress("copy", table.name, done, totals[table.name])
        await tx.one("copy_bump_sequences", floor=0 if floor is None else floor["floor"])
    for table in TABLES:
        part = TableReport(table.name)
        part.source_rows, part.source_checksum = await _digest(src, table, batch, progress, totals)
        part.target_rows, part.target_checksum = await _digest(dst, table, batch, None, totals)
        report.tables.append(part)
    report.seconds = time.perf_counter() - started
    return report


def _database(store: Store) -> Database:
    if not isinstance(store, SqlStore):
        raise UsageError(f"cannot copy {store.location}: not a SQL store")
    return store.database


async def columns(db: Database, table: str) -> tuple[str, ...]:
    """The columns table has in db, as its schema orders them."""
    async with db.read() as tx:
        rows = await tx.all("copy_columns", table=table)
    return tuple(str(r["name"]) for r in rows)


async def _check_columns(db: Database, location: str) -> None:
    """Refuse a database whose tables have columns other than those the copy carries."""
    for table in TABLES:
        found = await columns(db, table.name)
        unknown = ", ".join(
            c for c in found if c not in table.columns and (table.name, c) not in DERIVED
        )
        absent = ", ".join(c for c in table.columns if c not in found)
        problems = [
            *([f"has columns the copy would drop ({unknown})"] if unknown else []),
            *([f"lacks columns ({absent})"] if absent else []),
        ]
        if problems:
            raise StoreError(f"cannot copy {location}: table {table.name} {' and '.join(problems)}")


async def _count(db: Database, table: Table) -> int:
    async with db.read() as tx:
        row = await tx.one(f"copy_count_{table.name}")
    return int(row["n"]) if row else 0


async def _pages(db: Database, table: Table, batch: int) -> AsyncIterator[list[Row]]:
    """Every row of table, by key, batch rows at a time."""
    after = {f"after_{k}": v for k, v in zip(table.key, table.before_first, strict=True)}
    while True:
        async with db.read() as tx:
            rows = await tx.all(f"copy_page_{table.name}", limit=batch, **after)
        if not rows:
            return
        yield rows
        last = rows[-1]
        after = {f"after_{k}": last[k] for k in table.key}


async def _digest(
    db: Database, table: Table, batch: int, progress: Progress | None, totals: dict[str, int]
) -> tuple[int, str]:
    """(row count, SHA-256 of the canonical rows) of one table."""
    digest = hashlib.sha256()
    count = 0
    async for rows in _pages(db, table, batch):
        for row in rows:
            digest.update(canonical_row(db, table, row))
        count += len(rows)
        if progress:
            progress("verify", table.name, count, totals[table.name])
    return count, digest.hexdigest()


def canonical_row(db: Database, table: Table, row: Row) -> bytes:
    """One row as canonical JSON: columns in table order, JSON columns parsed."""
    values = [_canonical(db, row[c], c in table.json) for c in table.columns]
    text = json.dumps(values, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode() + b"\n"


def _canonical(db: Database, value: Any, is_json: bool) -> Any:
    """A column's value as canonical JSON takes it: JSON parsed, binary as hex."""
    if is_json:
        return db.load_json(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return {"hex": bytes(value).hex()}
    return value
