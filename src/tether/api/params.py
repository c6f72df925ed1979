"""Query parameters shared by the list routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from tether.runtime import limits

Limit = Annotated[int, Query(ge=1, le=limits.MAX_PAGE, description="Page size.")]
Cursor = Annotated[str | None, Query(description="next_cursor of the previous page.")]
