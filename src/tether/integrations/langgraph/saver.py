"""TetherCheckpointSaver: LangGraph checkpoints in tether, one session per thread."""

from __future__ import annotations

import builtins
import json
import random
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.base import Checkpoint as GraphCheckpoint
from langgraph.checkpoint.serde.base import SerializerProtocol

from tether.core.errors import NotFound, UsageError
from tether.core.message import Message
from tether.integrations.langgraph import _conversation
from tether.integrations.langgraph._bridge import Bridge, Target
from tether.runtime.checkpoints import Checkpoints
from tether.runtime.facade import Tether
from tether.store.checkpoint import (
    CONVERSATION_TYPE,
    ChannelValue,
    Checkpoint,
    ConversationRanges,
    LoadedCheckpoint,
    PendingWrite,
)

#: How many checkpoints list() reads at once when it must filter them by metadata.
_ALL = 2**62


class TetherCheckpointSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer on tether: a thread is the session whose external key is the
    thread id (made on its first checkpoint, with no TTL); a checkpoint's ``run_id`` (from its
    metadata) is kept with it; the graph's ``messages`` channel is the session's conversation,
    each message stored once (see _conversation); every other value is the serializer's bytes.

    ``TetherCheckpointSaver("tether.db")`` (or a ``postgresql://`` URL) opens tether and closes
    it with ``close()``; ``TetherCheckpointSaver(tether.open(...))`` uses an open handle (its
    owner's threads) and leaves it open. Both sync and async methods are served.
    """

    def __init__(
        self,
        target: Target | Bridge,
        *,
        owner: str | None = None,
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde)
        self._bridge = target if isinstance(target, Bridge) else Bridge(target, owner=owner)
        #: The handle this saver works on (None for a graph run by tether itself).
        self.tether: Tether | None = getattr(self._bridge, "tether", None)
        #: Thread ids are session ids (a graph run by tether in the run's session).
        self._threads_are_sessions = isinstance(target, Bridge)
        self._checkpoints = Checkpoints(self._bridge.service)
        self._sessions: dict[str, str] = {}
        self._conversations = _conversation.Conversations()

    def close(self) -> None:
        """Close tether if this saver opened it."""
        self._bridge.close()

    def __enter__(self) -> TetherCheckpointSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sync --------------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._bridge.call(self._get_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        yield from self._bridge.call(self._list(config, filter, before, limit))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: GraphCheckpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self._bridge.call(self._put(config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._bridge.call(self._put_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        self._bridge.call(self._delete_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._bridge.call(self._checkpoints.delete_for_runs([str(r) for r in run_ids]))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._bridge.call(self._copy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._bridge.call(self._prune(thread_ids, strategy))

    # -- async -------------------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._bridge.acall(self._get_tuple(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for found in await self._bridge.acall(self._list(config, filter, before, limit)):
            yield found

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: GraphCheckpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self._bridge.acall(self._put(config, checkpoint, metadata, new_versions))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self._bridge.acall(self._put_writes(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        await self._bridge.acall(self._delete_thread(thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._bridge.acall(self._checkpoints.delete_for_runs([str(r) for r in run_ids]))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._bridge.acall(self._copy_thread(source_thread_id, target_thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._bridge.acall(self._prune(thread_ids, strategy))

    def get_next_version(self, current: str | int | float | None, channel: None) -> str:
        """A counter, then a random tie-break (two forks of one version differ), as LangGraph's
        own savers make versions, in 15 characters rather than 49 (versions are in every
        checkpoint, several times): 8 base-36 digits (2.8 trillion), then 6 random ones."""
        if current is None:
            number = 0
        elif isinstance(current, int | float):
            number = int(current)
        else:
            number = int(str(current).split(".")[0], 36)
        return f"{_base36(number + 1):0>8}.{_base36(random.getrandbits(31)):0>6}"

    # -- the work ----------------------------------------------------------------------------

    async def _session(self, thread: Any, *, create: bool) -> str | None:
        key = str(thread)
        if self._threads_are_sessions:
            return key
        found = self._sessions.get(key)
        if found is None:
            found = await self._checkpoints.session_of(key, create=create)
            if found is not None:
                self._sessions[key] = found
        return found

    def _forget(self, thread: Any) -> None:
        session_id = self._sessions.pop(str(thread), None)
        if session_id is not None:
            self._conversations.forget(session_id)

    async def _get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        conf = config["configurable"]
        session_id = await self._session(conf["thread_id"], create=False)
        if session_id is None:
            return None
        checkpoint_id = get_checkpoint_id(config)
        loaded = await self._checkpoints.load(
            session_id=session_id,
            checkpoint_ns=conf.get("checkpoint_ns", ""),
            checkpoint_id=checkpoint_id,
        )
        if not loaded:
            return None
        return await self._tuple(loaded[0], config if checkpoint_id else None)

    async def _list(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> builtins.list[CheckpointTuple]:
        session_id = None
        conf = (config or {}).get("configurable", {})
        if config is not None:
            session_id = await self._session(conf["thread_id"], create=False)
            if session_id is None:
                return []
        wanted = _ALL if filter or limit is None else max(limit, 0)
        found = await self._checkpoints.load(
            session_id=session_id,
            checkpoint_ns=conf.get("checkpoint_ns"),
            checkpoint_id=get_checkpoint_id(config) if config else None,
            before_id=get_checkpoint_id(before) if before else None,
            limit=wanted,
            with_values=False,
        )
        chosen = [c for c in found if self._matches(c.checkpoint, filter)]
        if limit is not None:
            chosen = chosen[: max(limit, 0)]
        tuples = []
        for item in chosen:
            cp = item.checkpoint
            full = await self._checkpoints.load(
                session_id=cp.session_id,
                checkpoint_ns=cp.checkpoint_ns,
                checkpoint_id=cp.checkpoint_id,
            )
            if full:
                tuples.append(await self._tuple(full[0], None))
        return tuples

    def _matches(self, checkpoint: Checkpoint, filter: dict[str, Any] | None) -> bool:
        if not filter:
            return True
        metadata = self.serde.loads_typed((checkpoint.metadata_type, checkpoint.metadata))
        return all(metadata.get(key) == value for key, value in filter.items())

    async def _tuple(
        self, loaded: LoadedCheckpoint, config: RunnableConfig | None
    ) -> CheckpointTuple:
        cp = loaded.checkpoint
        body = self.serde.loads_typed((cp.type, cp.body))
        body = {**body, "id": cp.checkpoint_id, "channel_versions": dict(cp.channels)}
        values: dict[str, Any] = {}
        for value in loaded.values:
            if value.type == CONVERSATION_TYPE:
                values[value.channel] = await self._conversation(cp, value)
            else:
                values[value.channel] = self.serde.loads_typed((value.type, value.value or b""))
        writes = sorted(loaded.writes, key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx))
        thread = cp.session_id if self._threads_are_sessions else cp.thread
        ids = {"thread_id": thread, "checkpoint_ns": cp.checkpoint_ns}
        return CheckpointTuple(
            config=config or {"configurable": {**ids, "checkpoint_id": cp.checkpoint_id}},
            checkpoint=cast(GraphCheckpoint, {**body, "channel_values": values}),
            metadata=self.serde.loads_typed((cp.metadata_type, cp.metadata)),
            parent_config=(
                {"configurable": {**ids, "checkpoint_id": cp.parent_id}} if cp.parent_id else None
            ),
            pending_writes=[
                (w.task_id, w.channel, self.serde.loads_typed((w.type, w.value or b"")))
                for w in writes
            ],
        )

    async def _conversation(self, cp: Checkpoint, value: ChannelValue) -> builtins.list[Any]:
        ranges = tuple((int(a), int(b)) for a, b in json.loads(value.value or b"[]"))

        async def load(wanted: _conversation.Ranges) -> builtins.list[Message]:
            return await self._checkpoints.messages(cp.session_id, wanted)

        return await self._conversations.rebuild(cp.session_id, cp.checkpoint_ns, ranges, load)

    async def _put(
        self,
        config: RunnableConfig,
        checkpoint: GraphCheckpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        conf = config["configurable"]
        thread, ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        for attempt in (1, 2):
            session_id = await self._session(thread, create=True)
            assert session_id is not None
            try:
                await self._store(session_id, config, checkpoint, metadata, new_versions)
                break
            except NotFound:
                self._forget(thread)  # the thread was deleted meanwhile: make it again
                if attempt == 2:
                    raise
        return {
            "configurable": {
                "thread_id": thread,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    async def _store(
        self,
        session_id: str,
        config: RunnableConfig,
        checkpoint: GraphCheckpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> None:
        conf = config["configurable"]
        ns = conf.get("checkpoint_ns", "")
        body: dict[str, Any] = dict(checkpoint)
        channel_values: dict[str, Any] = body.pop("channel_values")
        # kept in their own columns (and put back by _tuple), not twice
        del body["id"]
        versions = body.pop("channel_versions")
        values: builtins.list[ChannelValue] = []
        conversation: builtins.list[ConversationRanges] = []
        flat: tuple[builtins.list[Any], _conversation.Split] | None = None
        for channel, version in new_versions.items():
            if channel not in channel_values:
                continue  # (a version without a stored value reads as empty)
            value = channel_values[channel]
            split = (
                self._conversations.split(session_id, ns, value)
                if channel == _conversation.CHANNEL and ns == ""
                else None
            )
            if split is None:
                kind, data = self.serde.dumps_typed(value)
                values.append(ChannelValue(channel, str(version), kind, data))
            else:
                conversation.append(
                    ConversationRanges(channel, str(version), split.ranges, tuple(split.new))
                )
                flat = (value, split)
        full_metadata = get_checkpoint_metadata(config, metadata)
        body_type, body_bytes = self.serde.dumps_typed(body)
        metadata_type, metadata_bytes = self.serde.dumps_typed(full_metadata)
        run_id = full_metadata.get("run_id")
        ranges = await self._checkpoints.put(
            Checkpoint(
                thread=str(conf["thread_id"]),
                session_id=session_id,
                checkpoint_ns=ns,
                checkpoint_id=checkpoint["id"],
                parent_id=conf.get("checkpoint_id"),
                type=body_type,
                body=body_bytes,
                metadata_type=metadata_type,
                metadata=metadata_bytes,
                channels=dict(versions),
                run_id=None if run_id is None else str(run_id),
            ),
            values,
            conversation,
        )
        if flat is not None:
            stored = ranges[_conversation.CHANNEL]
            self._conversations.written(session_id, ns, stored, flat[0], flat[1])

    async def _put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> None:
        conf = config["configurable"]
        session_id = await self._session(conf["thread_id"], create=True)
        assert session_id is not None
        pending = []
        for idx, (channel, value) in enumerate(writes):
            kind, data = self.serde.dumps_typed(value)
            index = WRITES_IDX_MAP.get(channel, idx)
            pending.append(PendingWrite(task_id, index, channel, kind, data, task_path))
        await self._checkpoints.put_writes(
            session_id, conf.get("checkpoint_ns", ""), conf["checkpoint_id"], pending
        )

    async def _delete_thread(self, thread_id: str) -> None:
        self._forget(thread_id)
        await self._checkpoints.delete_thread(str(thread_id))

    async def _copy_thread(self, source: str, target: str) -> None:
        self._forget(target)
        await self._checkpoints.copy(str(source), str(target))

    async def _prune(self, thread_ids: Sequence[str], strategy: str) -> None:
        if strategy not in ("keep_latest", "delete"):
            raise UsageError(f"prune strategy must be 'keep_latest' or 'delete', not {strategy!r}")
        threads = [str(t) for t in thread_ids]
        for thread in threads:
            self._forget(thread)
        await self._checkpoints.prune(threads, keep_latest=strategy == "keep_latest")


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        number, digit = divmod(number, 36)
        text = digits[digit] + text
        if number == 0:
            return text
