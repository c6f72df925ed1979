"""Query parameters shared by the list routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query
from pydantic import AwareDatetime

from tether.runtime import limits

Limit = Annotated[int, Query(ge=1, le=limits.MAX_PAGE, description="Page size.")]
Cursor = Annotated[str | None, Query(description="next_cursor of the previous page.")]
Since = Annotated[
    AwareDatetime | None, Query(description="Only what started at or after this time (ISO 8601).")
]
Until = Annotated[
    AwareDatetime | None, Query(description="Only what started before this time (ISO 8601).")
]
