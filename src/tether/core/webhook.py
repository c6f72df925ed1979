"""The WebhookDelivery record: sending an ended run to the URL it named."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class WebhookDelivery:
    """One run's webhook: pending until delivered, or failed once its attempts ran out."""

    id: str
    run_id: str
    session_id: str
    owner: str
    url: str
    #: How the body shows the run: native (as /v1 does) or langgraph.
    shape: str
    #: pending, delivered or failed.
    state: str
    #: Attempts made (or being made) so far.
    attempts: int
    #: When it may be tried next (while an attempt runs: the end of its lease).
    next_attempt_at: datetime
    created_at: datetime
    updated_at: datetime
