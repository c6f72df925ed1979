"""Checkpoints of graphs run in the owner's threads: a thread is a session named by its
external key (created on the first checkpoint, with no TTL: a thread does not expire)."""

from __future__ import annotations

from collections.abc import Sequence

from tether.core.message import Message
from tether.runtime import limits
from tether.runtime.service import Service
from tether.store.checkpoint import (
    ChannelValue,
    Checkpoint,
    ConversationRanges,
    LoadedCheckpoint,
    PendingWrite,
)


class Checkpoints:
    """The checkpoints of one owner's threads, over a Service on a local database."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.store = service.store
        self.owner = service.owner

    async def session_of(self, thread: str, *, create: bool) -> str | None:
        """The id of the session named thread; made when create, else None if there is none."""
        key = limits.external_key(thread) or ""
        if create:
            session, _ = await self.service.get_or_create_session(
                key, ttl_seconds=None, metadata={"thread": "langgraph"}
            )
            return session.id
        found = await self.store.get_session_by_key(key, owner=self.owner)
        return None if found is None else found.id

    async def put(
        self,
        checkpoint: Checkpoint,
        values: Sequence[ChannelValue] = (),
        conversation: Sequence[ConversationRanges] = (),
    ) -> dict[str, tuple[tuple[int, int], ...]]:
        """Store a checkpoint, its new channel values and its new conversation messages."""
        checked = [
            ConversationRanges(
                value.channel,
                value.version,
                value.ranges,
                tuple(limits.new_message(m.role, m.content, m.metadata, m.item) for m in value.new),
            )
            for value in conversation
        ]
        return await self.store.put_checkpoint(
            checkpoint,
            owner=self.owner,
            now=self.service.clock.now(),
            values=values,
            conversation=checked,
        )

    async def put_writes(
        self, session_id: str, checkpoint_ns: str, checkpoint_id: str, writes: list[PendingWrite]
    ) -> None:
        await self.store.put_checkpoint_writes(
            session_id=session_id,
            checkpoint_ns=checkpoint_ns,
            checkpoint_id=checkpoint_id,
            writes=writes,
            owner=self.owner,
            now=self.service.clock.now(),
        )

    async def load(
        self,
        *,
        session_id: str | None = None,
        checkpoint_ns: str | None = None,
        checkpoint_id: str | None = None,
        before_id: str | None = None,
        limit: int = 1,
        with_values: bool = True,
    ) -> list[LoadedCheckpoint]:
        """The owner's checkpoints, newest first, narrowed by the arguments given."""
        return await self.store.load_checkpoints(
            owner=self.owner,
            session_id=session_id,
            checkpoint_ns=checkpoint_ns,
            checkpoint_id=checkpoint_id,
            before_id=before_id,
            limit=limit,
            with_values=with_values,
        )

    async def messages(self, session_id: str, ranges: Sequence[tuple[int, int]]) -> list[Message]:
        """The conversation messages in ranges (removed ones included), in order."""
        found: list[Message] = []
        for first, last in ranges:
            after = first - 1
            while after < last:
                page = await self.store.list_messages(
                    session_id,
                    owner=self.owner,
                    after_seq=after,
                    before_seq=last + 1,
                    limit=limits.MAX_PAGE,
                    include_removed=True,
                )
                if not page:
                    break
                found.extend(page)
                after = page[-1].seq
        return found

    async def delete_thread(self, thread: str) -> bool:
        """Delete the session named thread and everything under it; False if there is none."""
        session_id = await self.session_of(thread, create=False)
        if session_id is None:
            return False
        await self.store.delete_session(session_id, owner=self.owner)
        return True

    async def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self.store.delete_checkpoints_of_runs(list(run_ids), owner=self.owner)

    async def prune(self, threads: Sequence[str], *, keep_latest: bool) -> None:
        for thread in threads:
            session_id = await self.session_of(thread, create=False)
            if session_id is not None:
                await self.store.prune_checkpoints(
                    session_id,
                    owner=self.owner,
                    keep_latest=keep_latest,
                    now=self.service.clock.now(),
                )

    async def copy(self, source: str, target: str) -> None:
        """Copy the checkpoints of thread source into thread target (made if needed)."""
        source_id = await self.session_of(source, create=False)
        if source_id is None:
            return
        target_id = await self.session_of(target, create=True)
        assert target_id is not None
        await self.store.copy_checkpoints(
            source_id, target_id, owner=self.owner, now=self.service.clock.now()
        )
