"""Named SQL: each backend keeps every statement in a queries.sql, under ``-- name: x`` headers."""

from __future__ import annotations

import re
from importlib import resources

_HEADER = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


def load_queries(package: str, filename: str = "queries.sql") -> dict[str, str]:
    """Parse a queries file shipped in package into {name: statement}."""
    text = resources.files(package).joinpath(filename).read_text(encoding="utf-8")
    parts = _HEADER.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        lines = [ln for ln in body.strip().splitlines() if not ln.lstrip().startswith("--")]
        statement = "\n".join(lines).strip().rstrip(";")
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice in {package}/{filename}")
        # The text comes from a file shipped with tether, never from user input.
        queries[name] = statement
    return queries
