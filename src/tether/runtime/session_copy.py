"""Copying a session: a new session with the same title, metadata, project, TTL, app,
conversation, session memory and graph checkpoints, recording the one it came from
(``metadata["copied_from"]``). Runs stay with the original: they are its history."""

from __future__ import annotations

from typing import Any

from tether.core.message import NewMessage
from tether.core.session import Session
from tether.runtime import limits
from tether.runtime.service import Service

#: The key of a copy's metadata naming the session it was copied from.
COPIED_FROM = "copied_from"


async def copy_session(
    svc: Service, session_id: str, *, metadata: dict[str, Any] | None = None
) -> Session:
    """A copy of the session (which may be closed or expired: the copy is active), with
    metadata over the original's. If the copy cannot be completed, nothing of it is left."""
    source = await svc.get_session(session_id)
    copy = await svc.create_session(
        title=source.title,
        metadata={**source.metadata, **(metadata or {}), COPIED_FROM: source.id},
        project=source.project,
        ttl_seconds=source.ttl_seconds,
        app=source.app,
    )
    try:
        await _copy_contents(svc, source.id, copy.id)
    except BaseException:
        await svc.delete_session(copy.id)
        raise
    return await svc.get_session(copy.id)


async def _copy_contents(svc: Service, source_id: str, target_id: str) -> None:
    graph = await svc.store.load_checkpoints(
        owner=svc.owner, session_id=source_id, limit=1, with_values=False
    )
    if graph:  # the checkpoints hold ranges of the conversation: copied with it
        await svc.store.copy_checkpoints(source_id, target_id, owner=svc.owner, now=svc.clock.now())
    else:
        messages = [
            NewMessage(m.role, m.content, m.metadata, m.item)
            for m in await svc.conversation(source_id)
        ]
        for start in range(0, len(messages), limits.MAX_BATCH):
            await svc.add_messages(target_id, messages[start : start + limits.MAX_BATCH])
    for item in await svc.list_session_memory(source_id):
        await svc.set_session_memory(target_id, item.key, item.value)
