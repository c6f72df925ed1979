"""SqlStore: the Store protocol over any backend that provides a Database."""

from __future__ import annotations

from tether.store.sql.assistants import AssistantsPart
from tether.store.sql.checkpoints import CheckpointsPart
from tether.store.sql.gauges import GaugesPart
from tether.store.sql.keys import KeysPart
from tether.store.sql.memory import MemoryPart
from tether.store.sql.retention import RetentionPart
from tether.store.sql.routing import RoutingPart
from tether.store.sql.run_starts import RunStartsPart
from tether.store.sql.schedules import SchedulesPart
from tether.store.sql.stats import StatsPart
from tether.store.sql.steps import StepsPart
from tether.store.sql.webhooks import WebhooksPart


class SqlStore(
    RoutingPart,
    SchedulesPart,
    StepsPart,
    CheckpointsPart,
    MemoryPart,
    KeysPart,
    GaugesPart,
    RetentionPart,
    StatsPart,
    AssistantsPart,
    WebhooksPart,
    RunStartsPart,
):
    """Every Store operation; SQL text and connections come from the backend's Database."""

    async def schema_version(self) -> int:
        return await self._db.schema_version()

    async def close(self) -> None:
        await self._db.close()
