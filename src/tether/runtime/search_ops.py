"""Session search: the Service's queries over the owner's sessions (by metadata, project, ids
and what their runs are doing), counted and paged in the database."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tether.core.clock import Clock
from tether.core.errors import UsageError
from tether.core.run import Activity, RunActivity
from tether.core.session import Session
from tether.runtime import limits
from tether.runtime.renames import project_arg
from tether.store.base import SessionSort, Store


class SearchOps:
    """The session search operations of Service (which provides these attributes)."""

    store: Store
    clock: Clock
    owner: str

    async def search_sessions(
        self,
        *,
        metadata: dict[str, Any] | None = None,
        project: dict[str, Any] | None = None,
        ids: Sequence[str] | None = None,
        activity: Activity | str | None = None,
        sort: SessionSort = "created_at",
        descending: bool = True,
        limit: int = 10,
        offset: int = 0,
        context: dict[str, Any] | None = None,
    ) -> list[Session]:
        """The owner's sessions whose metadata and project have the given top-level values,
        among ids (when given), whose runs are doing `activity`; sorted by `sort` and paged by
        limit and offset in the database (only the page is read). context is the deprecated
        name of project."""
        now = self.clock.now()
        project = project_arg(project, context)
        found = await self.store.search_sessions(
            owner=self.owner,
            **self._search(metadata, project, ids, activity),
            sort=_sort(sort),
            descending=bool(descending),
            limit=limits.page_size(limit),
            offset=limits.offset(offset),
        )
        return [s.as_of(now) for s in found]

    async def count_sessions(
        self,
        *,
        metadata: dict[str, Any] | None = None,
        project: dict[str, Any] | None = None,
        ids: Sequence[str] | None = None,
        activity: Activity | str | None = None,
        context: dict[str, Any] | None = None,
    ) -> int:
        """How many sessions search_sessions finds, counted by the database."""
        project = project_arg(project, context)
        return await self.store.count_sessions(
            owner=self.owner, **self._search(metadata, project, ids, activity)
        )

    def _search(
        self,
        metadata: dict[str, Any] | None,
        project: dict[str, Any] | None,
        ids: Sequence[str] | None,
        activity: Activity | str | None,
    ) -> dict[str, Any]:
        if ids is not None and not all(isinstance(i, str) for i in ids):
            raise UsageError("ids must be session ids")
        return {
            "metadata": limits.mapping("metadata", metadata) or None,
            "project": limits.mapping("project", project) or None,
            "ids": None if ids is None else list(ids),
            "activity": limits.enum(Activity, activity, "activity"),
        }

    async def run_activity(self, session_ids: Sequence[str]) -> dict[str, RunActivity]:
        """What the runs of each of the owner's sessions given are doing, in one read (without
        run contexts); a session without runs, or not the owner's, is idle."""
        found = await self.store.run_activity(list(session_ids), owner=self.owner)
        return {sid: found.get(sid, _NO_RUNS) for sid in session_ids}


_NO_RUNS = RunActivity()
_SORTS: tuple[SessionSort, ...] = ("created_at", "updated_at", "activity_at", "id", "activity")


def _sort(value: Any) -> SessionSort:
    for sort in _SORTS:
        if value == sort:
            return sort
    raise UsageError(f"sort must be one of {', '.join(_SORTS)} (got {value!r})")
