"""Retention for the SQL stores: which sessions are old enough to prune, erasing an owner, and
one session with everything in it as a JSON archive (exported, imported elsewhere, ids kept)."""

from __future__ import annotations

from datetime import datetime
from itertools import groupby
from operator import itemgetter
from typing import Any

from tether.core.errors import AlreadyExists, NotFound, UsageError
from tether.store.sql.common import SqlBase
from tether.store.sql.database import Events, Row
from tether.store.sql.rows import NAMESPACE_SEP, opt_us, to_us

#: The archive's format name and version (raise the version when its shape changes).
ARCHIVE_FORMAT = "tether.session"
ARCHIVE_VERSION = 1


def _table(columns: str, json_columns: str) -> tuple[tuple[str, ...], frozenset[str]]:
    return tuple(columns.split()), frozenset(json_columns.split())


#: The tables of an archive, in insertion order, with their columns and JSON columns; events
#: get new ids where they are imported (a log position belongs to its database).
_ARCHIVED = {
    "runs": _table(
        "id session_id owner seq agent goal input status created_at updated_at started_at "
        "ended_at error output input_tokens output_tokens model_requests attempt max_attempts "
        "metadata timeout_seconds wait_timeout_seconds idempotency_key waiting_for context "
        "worker_id lease_expires_at deadline_at not_before step_count traceparent",
        "input error output metadata waiting_for context",
    ),
    "steps": _table(
        "id run_id session_id seq position kind name status input output error started_at "
        "ended_at input_tokens output_tokens model_requests attempt",
        "input output error",
    ),
    "messages": _table(
        "id session_id seq role content run_id metadata created_at item removed_at",
        "metadata item",
    ),
    "memory": _table(
        "scope scope_id namespace key value session_id source_run_id created_at updated_at",
        "value",
    ),
}
_SESSION = _table(
    "id owner title status metadata context ttl_seconds created_at updated_at "
    "last_activity_at closed_at run_count message_count input_tokens output_tokens "
    "model_requests deleted_runs external_key app cleared_seq",
    "metadata context",
)
_EVENT = _table("type owner session_id run_id data created_at", "data")
#: What consecutive events appended together share (see Events).
_shared = itemgetter("type", "owner", "session_id", "run_id", "created_at")
#: Tables counted before and after a prune or an erasure.
COUNTED = ("sessions", "runs", "steps", "messages", "memory", "events", "api_keys")


class RetentionPart(SqlBase):
    """Pruning, erasure, archives."""

    async def prunable_sessions(
        self,
        *,
        closed_before: datetime | None,
        expired_before: datetime | None,
        after_id: str = "",
        limit: int = 100,
    ) -> list[str]:
        async with self._db.read() as tx:
            rows = await tx.all(
                "prunable_sessions",
                after_id=after_id,
                closed_before=opt_us(closed_before),
                expired_before=opt_us(expired_before),
                limit=limit,
            )
        return [r["id"] for r in rows]

    async def finished_temporary_sessions(
        self, *, idle_before: datetime, limit: int = 100
    ) -> list[str]:
        async with self._db.read() as tx:
            rows = await tx.all(
                "finished_temporary_sessions", before=to_us(idle_before), limit=limit
            )
        return [r["id"] for r in rows]

    async def owner_session_ids(self, owner: str, *, limit: int = 100) -> list[str]:
        async with self._db.read() as tx:
            rows = await tx.all("owner_session_ids", owner=owner, limit=limit)
        return [r["id"] for r in rows]

    async def erase_owner_data(self, owner: str) -> dict[str, int]:
        async with self._db.write() as tx:
            return {
                "memory": await tx.run(
                    "erase_owner_memory", owner=owner, app_prefix=owner + NAMESPACE_SEP
                ),
                "events": await tx.run("erase_owner_events", owner=owner),
                "schedules": await tx.run("erase_owner_schedules", owner=owner),
                "webhook_deliveries": await tx.run("erase_owner_webhook_deliveries", owner=owner),
                "webhook_secrets": await tx.run("erase_owner_webhook_secrets", owner=owner),
                "ui_sessions": await tx.run("erase_owner_ui_sessions", owner=owner),
                "api_keys": await tx.run("erase_owner_api_keys", owner=owner),
                "assistant_versions": await tx.run("erase_owner_assistant_versions", owner=owner),
                "assistants": await tx.run("erase_owner_assistants", owner=owner),
            }

    async def count_rows(self) -> dict[str, int]:
        counts = {}
        async with self._db.read() as tx:
            for table in COUNTED:
                row = await tx.one(f"copy_count_{table}")
                counts[table] = 0 if row is None else int(row["n"])
        return counts

    async def export_session(self, session_id: str, *, owner: str | None) -> dict[str, Any]:
        async with self._db.read() as tx:
            row = await tx.one("archive_session", id=session_id, owner=owner)
            if row is None:
                raise NotFound("session", session_id)
            archive: dict[str, Any] = {
                "format": ARCHIVE_FORMAT,
                "version": ARCHIVE_VERSION,
                "session": self._plain(row, *_SESSION),
            }
            for table, (columns, json_columns) in _ARCHIVED.items():
                rows = await tx.all(f"archive_{table}", id=session_id)
                archive[table] = [self._plain(r, columns, json_columns) for r in rows]
            events = await tx.all("archive_events", id=session_id)
            archive["events"] = [self._plain(r, *_EVENT) for r in events]
        return archive

    async def import_session(self, archive: dict[str, Any], *, owner: str | None) -> str:
        if not isinstance(archive, dict) or archive.get("format") != ARCHIVE_FORMAT:
            raise UsageError(f'not a tether session export (no "format": {ARCHIVE_FORMAT!r})')
        if archive.get("version") != ARCHIVE_VERSION:
            raise UsageError(
                f"session export version {archive.get('version')!r} is not the "
                f"{ARCHIVE_VERSION} this tether reads"
            )
        try:
            return await self._import(archive, owner)
        except (KeyError, TypeError, AttributeError) as exc:
            raise UsageError(f"a session export with a missing or malformed part: {exc}") from exc

    async def _import(self, archive: dict[str, Any], owner: str | None) -> str:
        session = dict(archive["session"])
        session_id = str(session["id"])
        owned = {} if owner is None else {"owner": owner}
        async with self._db.write() as tx:
            if await tx.one("session_exists", id=session_id) is not None:
                raise AlreadyExists(f"session {session_id} already exists in this database")
            stored = self._stored({**session, **owned}, *_SESSION)
            # (an imported session is an ordinary one, even if it was a stateless run's)
            await tx.run("copy_insert_sessions", **stored, temporary=0)
            for table, (columns, json_columns) in _ARCHIVED.items():
                rows = [
                    self._stored({**r, **(owned if table == "runs" else {})}, columns, json_columns)
                    for r in archive[table]
                ]
                if rows:
                    await tx.many(f"copy_insert_{table}", rows)
            events = [self._stored({**e, **owned}, *_EVENT) for e in archive["events"]]
            for (type_, owner_, session, run, at), group in groupby(events, key=_shared):
                data = [e["data"] for e in group]
                await tx.append_events(Events(type_, owner_, session, run, at, data))
        return session_id

    def _plain(self, row: Row, columns: tuple[str, ...], json_columns: frozenset[str]) -> Any:
        """A row as JSON values: its JSON columns parsed."""
        return {c: self._db.load_json(row[c]) if c in json_columns else row[c] for c in columns}

    def _stored(
        self, values: dict[str, Any], columns: tuple[str, ...], json_columns: frozenset[str]
    ) -> dict[str, Any]:
        """Archive values as query parameters: exactly the columns, JSON ones serialized."""
        return {c: self._j(values[c]) if c in json_columns else values[c] for c in columns}
