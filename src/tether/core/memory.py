"""Memory items in four scopes: a run's working memory, the session's, the user's and the app's."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class MemoryScope(StrEnum):
    """Whose memory an item belongs to."""

    RUN = "run"  #: working memory of one run; visible to that run only
    SESSION = "session"  #: facts every run of the session sees
    USER = "user"  #: facts about the owner, across all of the owner's sessions
    APP = "app"  #: shared by every session of one app of the owner (Session.app)


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One remembered fact."""

    scope: MemoryScope
    #: The run id, session id, owner or app name the item belongs to (an app's items also
    #: belong to one owner: two owners' apps of the same name share nothing).
    scope_id: str
    key: str
    value: Any
    created_at: datetime
    updated_at: datetime
    #: The run that wrote (or promoted) it.
    source_run_id: str | None = None
    #: Extra path for user memory (the LangGraph store's namespaces); () elsewhere.
    namespace: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MemoryWrite:
    """A memory item to set in the same transaction as other writes (see Store.add_messages)."""

    scope: MemoryScope
    #: The session id, owner or app name (as MemoryItem.scope_id); the run scope is not written
    #: this way.
    scope_id: str
    key: str
    value: Any
    namespace: tuple[str, ...] = ()
