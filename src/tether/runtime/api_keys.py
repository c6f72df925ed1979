"""API keys: made here, shown once, stored as a SHA-256 hash, each acting for one owner."""

from __future__ import annotations

import hashlib
import secrets

from tether.core.api_key import ApiKey
from tether.core.clock import Clock, SystemClock
from tether.core.errors import NotFound
from tether.core.ids import new_id
from tether.runtime import limits
from tether.store.base import Store

#: Every key starts with this, so a leaked one is easy to recognise (and to scan for).
KEY_PREFIX = "tk_"
#: Random bytes in a key (encoded as URL-safe base64).
KEY_BYTES = 32


def hash_key(secret: str) -> str:
    """The stored form of a key: hex SHA-256 of its text."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


class ApiKeys:
    """Create, authenticate, list and revoke API keys in a store."""

    def __init__(self, store: Store, *, clock: Clock | None = None) -> None:
        self.store = store
        self.clock = clock or SystemClock()

    async def create(self, owner: str, *, name: str | None = None) -> tuple[ApiKey, str]:
        """A new key for owner: (its record, the secret, which is never stored nor shown again)."""
        secret = KEY_PREFIX + secrets.token_urlsafe(KEY_BYTES)
        key = ApiKey(
            id=new_id(),
            owner=limits.owner(owner),
            prefix=secret[: len(KEY_PREFIX) + 6],
            created_at=self.clock.now(),
            name=name or None,
        )
        return await self.store.create_api_key(key, key_hash=hash_key(secret)), secret

    async def active(self, secret: str) -> ApiKey | None:
        """The key whose secret this is, or None for an unknown or revoked key."""
        if not secret.startswith(KEY_PREFIX):
            return None
        key = await self.store.get_api_key_by_hash(hash_key(secret))
        return None if key is None or key.is_revoked else key

    async def owner_of(self, secret: str) -> str | None:
        """The owner a key acts for, or None for an unknown or revoked key."""
        key = await self.active(secret)
        return None if key is None else key.owner

    async def list_keys(self, *, owner: str | None = None) -> list[ApiKey]:
        return await self.store.list_api_keys(owner=owner)

    async def any_active(self) -> bool:
        """True when at least one key can be used."""
        return any(not key.is_revoked for key in await self.store.list_api_keys())

    async def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key by id (idempotent); its web UI sessions end with it."""
        key = await self.store.revoke_api_key(key_id, now=self.clock.now())
        if key is None:
            raise NotFound("API key", key_id)
        return key
