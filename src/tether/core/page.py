"""A page of a cursor-paginated list."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """Items plus the cursor of the next page (None on the last page)."""

    data: list[T] = field(default_factory=list)
    next_cursor: str | None = None
