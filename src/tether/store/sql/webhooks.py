"""Webhook deliveries and the owners' signing secrets, for the SQL stores."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from tether.core.event import EventType
from tether.store.sql.common import SqlBase
from tether.store.sql.database import Row
from tether.store.sql.rows import from_us, opt_us, to_us

if TYPE_CHECKING:  # made where a row becomes one (a read of messages makes none)
    from tether.core.webhook import WebhookDelivery


def _delivery(row: Row, session_id: str) -> WebhookDelivery:
    from tether.core.webhook import WebhookDelivery

    return WebhookDelivery(
        id=row["id"],
        run_id=row["run_id"],
        session_id=session_id,
        owner=row["owner"],
        url=row["url"],
        shape=row["shape"],
        state=row["state"],
        attempts=row["attempts"],
        next_attempt_at=from_us(row["next_attempt_at"]),
        created_at=from_us(row["created_at"]),
        updated_at=from_us(row["updated_at"]),
    )


class WebhooksPart(SqlBase):
    """Deliveries from a run's creation to its webhook's last attempt; per-owner secrets."""

    async def due_webhook_deliveries(
        self, *, now: datetime, limit: int = 20
    ) -> list[WebhookDelivery]:
        async with self._db.read() as tx:
            rows = await tx.all("due_webhook_deliveries", now=to_us(now), limit=limit)
        return [_delivery(r, r["session_id"]) for r in rows]

    async def claim_webhook_delivery(
        self, delivery: WebhookDelivery, *, lease_until: datetime, now: datetime
    ) -> WebhookDelivery | None:
        async with self._db.write() as tx:
            row = await tx.one(
                "claim_webhook_delivery",
                id=delivery.id,
                seen=to_us(delivery.next_attempt_at),
                lease_until=to_us(lease_until),
                now=to_us(now),
            )
        return None if row is None else _delivery(row, delivery.session_id)

    async def end_webhook_attempt(
        self,
        delivery: WebhookDelivery,
        *,
        outcome: str,
        next_attempt_at: datetime | None,
        status_code: int | None,
        error: str | None,
        now: datetime,
    ) -> bool:
        state = "pending" if outcome == "retrying" else outcome
        data: dict[str, Any] = {
            "url": delivery.url,
            "attempt": delivery.attempts,
            "status_code": status_code,
            "error": error,
            "outcome": outcome,
            "next_attempt_at": None if next_attempt_at is None else next_attempt_at.isoformat(),
        }
        async with self._db.write() as tx:
            row = await tx.one(
                "end_webhook_attempt",
                id=delivery.id,
                state=state,
                attempts=delivery.attempts,
                lease=to_us(delivery.next_attempt_at),
                next_attempt_at=opt_us(next_attempt_at) or to_us(now),
                now=to_us(now),
            )
            if row is None:
                return False
            await self._event(
                tx,
                EventType.RUN_WEBHOOK,
                owner=delivery.owner,
                now=now,
                session_id=delivery.session_id,
                run_id=delivery.run_id,
                data=data,
            )
        return True

    async def webhook_secret(self, owner: str, *, candidate: str, now: datetime) -> str:
        async with self._db.write() as tx:
            await tx.run(
                "insert_webhook_secret_if_none",
                owner=owner,
                secret=candidate,
                created_at=to_us(now),
            )
            row = await tx.one("webhook_secret", owner=owner)
        assert row is not None
        return str(row["secret"])

    async def rotate_webhook_secret(self, owner: str, *, secret: str, now: datetime) -> str:
        async with self._db.write() as tx:
            row = await tx.one(
                "put_webhook_secret", owner=owner, secret=secret, created_at=to_us(now)
            )
        assert row is not None
        return str(row["secret"])
