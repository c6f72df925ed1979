"""A server with a retention setting prunes old closed sessions by itself, in the background."""

from __future__ import annotations

from pathlib import Path

from tests.waiting import eventually
from tether.api import create_app
from tether.api.settings import ApiSettings
from tether.core.clock import ManualClock
from tether.runtime.service import Service
from tether.store.factory import open_store

DAY = 86400.0


async def test_the_server_prunes_sessions_closed_longer_ago_than_its_setting(
    tmp_path: Path,
) -> None:
    store = open_store(str(tmp_path / "t.db"))
    clock = ManualClock()
    svc = Service(store, clock=clock)
    old = await svc.create_session(title="old")
    await svc.close_session(old.id)
    clock.advance(10 * DAY)
    recent = await svc.create_session(title="recent")
    await svc.close_session(recent.id)
    settings = ApiSettings(auth=False, workers=0, prune_closed_after=5 * DAY, prune_interval=0.05)
    app = create_app(settings, store=store, clock=clock)
    try:
        async with app.router.lifespan_context(app):

            async def pruned() -> bool:
                return await store.get_session(old.id) is None

            await eventually(pruned, what="the old session to be pruned")
        assert await store.get_session(recent.id) is not None
    finally:
        await store.close()
