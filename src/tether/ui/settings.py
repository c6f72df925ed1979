"""UiSettings: what the UI needs to know of the server it is part of (the app factory gives it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tether.core.hosts import AllowedHosts


@dataclass(frozen=True, slots=True)
class UiSettings:
    """Every field has a production default."""

    #: False = no API keys (--no-auth): every page acts for local_owner.
    auth: bool = True
    #: The hosts the server answers for: form POSTs must come from one of them.
    hosts: AllowedHosts = field(default_factory=AllowedHosts)
    #: The owner every page acts for under --no-auth.
    local_owner: str = "local"
    #: Serve the interactive API docs at /docs.
    docs: bool = True
    #: Seconds between heartbeats of the UI's event streams.
    heartbeat_seconds: float = 15.0
