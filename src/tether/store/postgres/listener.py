"""LISTEN/NOTIFY: change topics committed on any node reach every node's ChangeFeed.

Each write transaction sends its topics with pg_notify on the ``tether`` channel (delivered at
commit, in commit order). One dedicated connection per store LISTENs and republishes the topics
other stores sent (a store publishes its own locally, right after its commit). The connection
reconnects after a failure; since notifications may have been missed meanwhile, every waiter is
then woken to look again.
"""

from __future__ import annotations

import asyncio
import json
import logging

import psycopg

from tether.store.changes import ChangeFeed

CHANNEL = "tether"
#: pg_notify payloads must stay under 8000 bytes.
_MAX_PAYLOAD = 7000
#: A listener that heard nothing for this long checks its connection is alive.
_PING_SECONDS = 15.0
_MAX_BACKOFF = 5.0

log = logging.getLogger("tether.store.postgres")


def notify_payloads(source: str, topics: list[str]) -> list[str]:
    """The topics (deduplicated, in order) as JSON payloads under the size limit."""
    payloads: list[str] = []
    batch: list[str] = []
    size = 0
    for topic in dict.fromkeys(topics):
        if batch and size + len(topic.encode()) + 4 > _MAX_PAYLOAD:
            payloads.append(json.dumps({"s": source, "t": batch}, ensure_ascii=False))
            batch, size = [], 0
        batch.append(topic)
        size += len(topic.encode()) + 4
    if batch:
        payloads.append(json.dumps({"s": source, "t": batch}, ensure_ascii=False))
    return payloads


class Listener:
    """Feeds a ChangeFeed from NOTIFYs sent by other stores on the same database."""

    def __init__(self, conninfo: str, feed: ChangeFeed, source: str) -> None:
        self._conninfo = conninfo
        self._feed = feed
        self._source = source
        #: Set once the first LISTEN is in place.
        self.ready = asyncio.Event()

    async def run(self) -> None:
        """Listen until cancelled, reconnecting with backoff."""
        backoff = 0.1
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
            except psycopg.Error as exc:
                log.warning("LISTEN connection failed, retrying in %.1f s: %s", backoff, exc)
            else:
                backoff = 0.1
                try:
                    await self._listen(conn)
                except psycopg.Error as exc:
                    log.warning("LISTEN connection lost, reconnecting: %s", exc)
                finally:
                    await conn.close()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _MAX_BACKOFF)

    async def _listen(self, conn: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
        await conn.execute(f"LISTEN {CHANNEL}")
        self.ready.set()
        self._feed.publish_all()  # whatever was sent while nobody listened
        while True:
            async for notify in conn.notifies(timeout=_PING_SECONDS):
                self._deliver(notify.payload)
            await conn.execute("SELECT 1")

    def _deliver(self, payload: str) -> None:
        try:
            message = json.loads(payload)
            source, topics = message["s"], message["t"]
        except (ValueError, KeyError, TypeError):
            log.warning("ignored a malformed notification on %s: %.200s", CHANNEL, payload)
            return
        if source != self._source:
            self._feed.publish(topics)
