"""A LangGraph thread search by values.messages, at the service: the threads it finds are read
in one query, and only their conversations a few at a time, so that threads created meanwhile
shift nothing (pages of a few threads each read one thread twice and missed another)."""

from __future__ import annotations

from typing import Any, cast

from tether.api.langgraph import threads
from tether.core.clock import ManualClock
from tether.core.session import Session
from tether.runtime.service import Service


class CreatedMeanwhile:
    """The real service, on which another client creates a thread of the search's after each of
    its first two searches."""

    def __init__(self, service: Service, clock: ManualClock, metadata: dict[str, Any]) -> None:
        self._service = service
        self._clock = clock
        self._metadata = metadata
        self.searches = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._service, name)

    async def search_sessions(self, **kwargs: Any) -> list[Session]:
        found = await self._service.search_sessions(**kwargs)
        self.searches += 1
        if self.searches <= 2:
            self._clock.advance(1)
            await self._service.create_session(metadata=self._metadata)
        return found


async def test_threads_created_during_a_search_by_values_shift_nothing(
    service: Service, clock: ManualClock
) -> None:
    mark = {"mark": "scan"}
    made = []
    for _ in range(threads._SCANNED + 2):
        clock.advance(1)
        made.append((await service.create_session(metadata=mark)).id)
    meanwhile = CreatedMeanwhile(service, clock, mark)
    filters = {"metadata": mark, "project": None, "ids": None, "activity": None}
    # (nothing wanted of the values: every thread found matches)
    found = await threads._matching(cast(Service, meanwhile), filters, {})
    assert sorted(t["thread_id"] for t in found) == sorted(made)
