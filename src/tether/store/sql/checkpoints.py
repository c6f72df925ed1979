"""Checkpoints of graphs (store.checkpoint), for the SQL stores."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tether.core.message import Message, NewMessage
from tether.store.sql.database import ReadTx, Row
from tether.store.sql.rows import MAX_SEQ, messages_from_values, to_us
from tether.store.sql.sessions import SessionsPart

if TYPE_CHECKING:  # a graph's records: loaded by the operations that make them
    from tether.store.checkpoint import (
        ChannelValue,
        Checkpoint,
        ConversationRanges,
        LoadedCheckpoint,
        PendingWrite,
    )

#: Messages read at a time when a conversation is copied.
_PAGE = 1000


class CheckpointsPart(SessionsPart):
    """Checkpoints, their channel values and pending writes; a message list channel kept as
    ranges of the session's conversation."""

    async def put_checkpoint(
        self,
        checkpoint: Checkpoint,
        *,
        owner: str | None,
        now: datetime,
        values: Sequence[ChannelValue] = (),
        conversation: Sequence[ConversationRanges] = (),
    ) -> dict[str, tuple[tuple[int, int], ...]]:
        """Store a checkpoint (replacing one with its ids) with the channel values it brings,
        appending the new messages of its conversation values to the session's conversation,
        in one transaction; the ranges each conversation value ends up with, by channel."""
        from tether.store.checkpoint import CONVERSATION_TYPE, ChannelValue, merge_ranges

        new = [m for value in conversation for m in value.new]
        session_id = checkpoint.session_id
        async with self._db.write() as tx:
            touched = await self._touch_active(
                tx, session_id, owner=owner, now=now, add_messages=len(new)
            )
            seq = touched["message_count"] - len(new) + 1
            await tx.run("ensure_checkpoint_thread", session_id=session_id)
            if new:
                await self._append_messages(tx, touched, session_id, new, now)
            ranges: dict[str, tuple[tuple[int, int], ...]] = {}
            rows = [self._value_row(checkpoint, value) for value in values]
            for value in conversation:
                added = (seq, seq + len(value.new) - 1)
                seq += len(value.new)
                ranges[value.channel] = merge_ranges([*value.ranges, added])
                stored = ChannelValue(
                    value.channel,
                    value.version,
                    CONVERSATION_TYPE,
                    json.dumps(ranges[value.channel], separators=(",", ":")).encode(),
                )
                rows.append(self._value_row(checkpoint, stored))
            if rows:
                await tx.many("upsert_checkpoint_blob", rows)
            await tx.run(
                "upsert_checkpoint",
                session_id=session_id,
                checkpoint_ns=checkpoint.checkpoint_ns,
                checkpoint_id=checkpoint.checkpoint_id,
                parent_id=checkpoint.parent_id,
                run_id=checkpoint.run_id,
                type=checkpoint.type,
                checkpoint=checkpoint.body,
                metadata_type=checkpoint.metadata_type,
                metadata=checkpoint.metadata,
                channels=self._j(checkpoint.channels),
                created_at=to_us(now),
            )
        return ranges

    @staticmethod
    def _value_row(checkpoint: Checkpoint, value: ChannelValue) -> dict[str, Any]:
        return {
            "session_id": checkpoint.session_id,
            "checkpoint_ns": checkpoint.checkpoint_ns,
            "channel": value.channel,
            "version": value.version,
            "type": value.type,
            "value": value.value,
        }

    async def put_checkpoint_writes(
        self,
        *,
        session_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        writes: Sequence[PendingWrite],
        owner: str | None,
        now: datetime,
    ) -> None:
        """Store the pending writes of a task: a write already stored is kept, unless it is a
        special one (idx < 0), which is replaced."""
        if not writes:
            return
        async with self._db.write() as tx:
            await self._touch_active(tx, session_id, owner=owner, now=now)
            await tx.run("ensure_checkpoint_thread", session_id=session_id)
            await tx.many(
                "insert_checkpoint_write",
                [
                    {
                        "session_id": session_id,
                        "checkpoint_ns": checkpoint_ns,
                        "checkpoint_id": checkpoint_id,
                        "task_id": w.task_id,
                        "idx": w.idx,
                        "channel": w.channel,
                        "type": w.type,
                        "value": w.value,
                        "task_path": w.task_path,
                    }
                    for w in writes
                ],
            )

    async def load_checkpoints(
        self,
        *,
        owner: str,
        session_id: str | None = None,
        checkpoint_ns: str | None = None,
        checkpoint_id: str | None = None,
        before_id: str | None = None,
        limit: int = 1,
        with_values: bool = True,
    ) -> list[LoadedCheckpoint]:
        """The owner's checkpoints, newest first (of one session, namespace, id, or before an
        id, when given), each with its channel values and pending writes."""
        from tether.store.checkpoint import LoadedCheckpoint, PendingWrite

        async with self._db.read() as tx:
            rows = await tx.all(
                "list_checkpoints",
                owner=owner,
                session_id=session_id,
                checkpoint_ns=checkpoint_ns,
                checkpoint_id=checkpoint_id,
                before_id=before_id,
                limit=limit,
            )
            found = []
            for row in rows:
                checkpoint = self._checkpoint(row)
                if not with_values:
                    found.append(LoadedCheckpoint(checkpoint))
                    continue
                values = await self._values(tx, checkpoint)
                writes = [
                    PendingWrite(
                        r["task_id"], r["idx"], r["channel"], r["type"], r["value"], r["task_path"]
                    )
                    for r in await tx.all(
                        "checkpoint_writes",
                        session_id=checkpoint.session_id,
                        checkpoint_ns=checkpoint.checkpoint_ns,
                        checkpoint_id=checkpoint.checkpoint_id,
                    )
                ]
                found.append(LoadedCheckpoint(checkpoint, values, writes))
        return found

    def _checkpoint(self, row: Row) -> Checkpoint:
        from tether.store.checkpoint import Checkpoint

        return Checkpoint(
            thread=row["external_key"],
            session_id=row["session_id"],
            checkpoint_ns=row["checkpoint_ns"],
            checkpoint_id=row["checkpoint_id"],
            parent_id=row["parent_id"],
            type=row["type"],
            body=bytes(row["checkpoint"]),
            metadata_type=row["metadata_type"],
            metadata=bytes(row["metadata"]),
            channels=self._db.load_json(row["channels"]),
        )

    async def _values(self, tx: ReadTx, checkpoint: Checkpoint) -> list[ChannelValue]:
        from tether.store.checkpoint import ChannelValue

        values = []
        for channel, version in checkpoint.channels.items():
            row = await tx.one(
                "get_checkpoint_blob",
                session_id=checkpoint.session_id,
                checkpoint_ns=checkpoint.checkpoint_ns,
                channel=channel,
                version=str(version),
            )
            if row is not None:
                value = None if row["value"] is None else bytes(row["value"])
                values.append(ChannelValue(channel, str(version), row["type"], value))
        return values

    async def delete_checkpoints_of_runs(self, run_ids: Sequence[str], *, owner: str) -> None:
        """Delete the owner's checkpoints (and their writes) made by the runs run_ids."""
        async with self._db.write() as tx:
            for run_id in run_ids:
                await tx.run("delete_run_checkpoint_writes", run_id=run_id, owner=owner)
                await tx.run("delete_run_checkpoints", run_id=run_id, owner=owner)

    async def prune_checkpoints(
        self, session_id: str, *, owner: str, keep_latest: bool, now: datetime
    ) -> None:
        """Delete every checkpoint of a session (keep_latest: but the newest of each
        namespace), their writes, and the values no checkpoint left holds."""
        async with self._db.write() as tx:
            await self._session_in(tx, session_id, owner)
            if keep_latest:
                await tx.run("delete_older_checkpoint_writes", session_id=session_id)
                await tx.run("delete_older_checkpoints", session_id=session_id)
                await tx.run("delete_unused_checkpoint_blobs", session_id=session_id)
                return
            for name in (
                "delete_session_checkpoint_writes",
                "delete_session_checkpoint_blobs",
                "delete_session_checkpoints",
            ):
                await tx.run(name, id=session_id)

    async def copy_checkpoints(
        self, source_id: str, target_id: str, *, owner: str, now: datetime
    ) -> None:
        """Copy a session's checkpoints, values and writes into another session of the owner,
        with the conversation messages they hold (appended to the target's conversation)."""
        from tether.store.checkpoint import CONVERSATION_TYPE

        async with self._db.write() as tx:
            await self._session_in(tx, source_id, owner)
            blobs = await tx.all("session_checkpoint_blobs", session_id=source_id)
            messages = await self._messages_in(tx, source_id)
            touched = await self._touch_active(
                tx, target_id, owner=owner, now=now, add_messages=len(messages)
            )
            offset = touched["message_count"] - len(messages)
            await tx.run("ensure_checkpoint_thread", session_id=target_id)
            if messages:
                await self._append_messages(tx, touched, target_id, messages, now)
            rows = []
            for blob in blobs:
                value = blob["value"]
                if blob["type"] == CONVERSATION_TYPE:
                    ranges = [(a + offset, b + offset) for a, b in json.loads(bytes(value))]
                    value = json.dumps(ranges, separators=(",", ":")).encode()
                rows.append({**dict(blob), "session_id": target_id, "value": value})
            if rows:
                await tx.many("upsert_checkpoint_blob", rows)
            await tx.run("copy_session_checkpoints", source=source_id, target=target_id)
            await tx.run("copy_session_checkpoint_writes", source=source_id, target=target_id)

    async def _messages_in(self, tx: ReadTx, session_id: str) -> list[NewMessage]:
        """Every message of a session's conversation, removed ones included, to copy."""
        found: list[NewMessage] = []
        after = 0
        while True:
            page = await self._page_in(tx, session_id, after)
            found.extend(NewMessage(m.role, m.content, m.metadata, m.item) for m in page)
            if len(page) < _PAGE:
                return found
            after = page[-1].seq

    async def _page_in(self, tx: ReadTx, session_id: str, after: int) -> list[Message]:
        return await tx.records(
            "messages_forward",
            lambda rows: messages_from_values(session_id, rows),
            session_id=session_id,
            owner=None,
            after_seq=after,
            before_seq=MAX_SEQ,
            removed=True,
            limit=_PAGE,
        )
