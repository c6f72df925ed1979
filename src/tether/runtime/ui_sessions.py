"""Sessions of the web UI: what the browser's cookie holds instead of the API key.

Logging in with a valid key starts a session: a random token, given to the browser once and
stored only as its SHA-256 hash, acting for the key's owner until it expires, the user logs out,
or the key is revoked (whichever comes first).
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from tether.core.clock import Clock, SystemClock
from tether.runtime.api_keys import ApiKeys, hash_key
from tether.store.base import Store

#: How long a UI session lasts after logging in.
UI_SESSION_SECONDS = 12 * 3600
#: Random bytes in a token (encoded as URL-safe base64).
TOKEN_BYTES = 32


class UiSessions:
    """Start, resolve and end web UI sessions in a store."""

    def __init__(
        self, store: Store, *, clock: Clock | None = None, lifetime: float = UI_SESSION_SECONDS
    ) -> None:
        self.store = store
        self.clock = clock or SystemClock()
        self.lifetime = timedelta(seconds=lifetime)
        self._keys = ApiKeys(store, clock=self.clock)

    async def start(self, secret: str) -> str | None:
        """A new session for the owner of this API key (its token), or None when the key is
        unknown or revoked."""
        key = await self._keys.active(secret)
        if key is None:
            return None
        token = secrets.token_urlsafe(TOKEN_BYTES)
        now = self.clock.now()
        await self.store.create_ui_session(
            hash_key(token), key=key, created_at=now, expires_at=now + self.lifetime
        )
        return token

    async def owner_of(self, token: str) -> str | None:
        """The owner a session acts for, or None when it has ended (or never was)."""
        return await self.store.ui_session_owner(hash_key(token), now=self.clock.now())

    async def end(self, token: str) -> None:
        """Log out: the token is worth nothing from now on."""
        await self.store.end_ui_session(hash_key(token))
