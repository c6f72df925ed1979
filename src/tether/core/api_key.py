"""The ApiKey record: a credential that acts for one owner (only its hash is stored)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An API key as the database knows it: never the key itself."""

    id: str
    #: Whose sessions, runs and memory the key reaches.
    owner: str
    #: The first characters of the key, to recognise it in a list.
    prefix: str
    created_at: datetime
    #: A label for people ("ci", "laptop").
    name: str | None = None
    revoked_at: datetime | None = None

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None
