"""The Session record: the long conversation that owns what its runs share."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, ClassVar

from tether.core.status import SessionStatus
from tether.core.usage import ZERO_USAGE, Usage

#: Sessions expire after 30 days without activity unless told otherwise.
DEFAULT_TTL_SECONDS = 30 * 24 * 3600


@dataclass(frozen=True, slots=True)
class Session:
    """A long conversation: messages, its project, memory and the tool history of its runs."""

    id: str
    owner: str
    title: str | None
    status: SessionStatus
    created_at: datetime
    updated_at: datetime
    #: Last message, run created, run event or memory write; expiry counts from here.
    last_activity_at: datetime
    #: Seconds without activity before the session expires; None = never.
    ttl_seconds: int | None = DEFAULT_TTL_SECONDS
    metadata: dict[str, Any] = field(default_factory=dict)
    #: What the session works on, which every run starts from (e.g. ``{"workspace": "./calc"}``).
    project: dict[str, Any] = field(default_factory=dict)
    closed_at: datetime | None = None
    run_count: int = 0
    usage: Usage = ZERO_USAGE
    #: The caller's own name for the session (e.g. a framework's session id), unique among
    #: the owner's sessions; looked up only where a key is asked for, never as an id.
    external_key: str | None = None
    #: The application the session belongs to: its runs see that app's memory.
    app: str | None = None

    #: Former field names (old → new): their plain-JSON forms carry both, and a form with only
    #: the old one (stored before the rename, or from an older server) still reads.
    RENAMED_FIELDS: ClassVar[Mapping[str, str]] = {"context": "project"}

    @property
    def context(self) -> dict[str, Any]:
        """Deprecated name of ``project`` ("context" is what a run starts from)."""
        warnings.warn(
            "Session.context is deprecated: use Session.project", DeprecationWarning, stacklevel=2
        )
        return self.project

    @property
    def expires_at(self) -> datetime | None:
        """When the session expires if nothing happens (or expired, once it has); None when it
        never does: no TTL, or closed by the user first."""
        if self.ttl_seconds is None or self.status is SessionStatus.CLOSED:
            return None
        return self.last_activity_at + timedelta(seconds=self.ttl_seconds)

    def is_expired_at(self, now: datetime) -> bool:
        """True when the session is (or by now would be) expired."""
        if self.status is SessionStatus.EXPIRED:
            return True
        expires = self.expires_at
        return expires is not None and now >= expires

    def as_of(self, now: datetime) -> Session:
        """The session as it stands at now: expiry is exact on every read."""
        ttl = self.ttl_seconds  # (is_expired_at, inlined: every session of a listing)
        if (
            self.status is SessionStatus.ACTIVE
            and ttl is not None
            and now >= self.last_activity_at + timedelta(0, ttl)
        ):
            return replace(self, status=SessionStatus.EXPIRED)
        return self
