"""Named SQL, under ``-- name: x`` headers: the statements both backends share in this package's
queries.sql, written once, and each backend's own in its package's queries.sql.

A shared statement has ``:named`` parameters and may cast with ``::type`` (PostgreSQL's syntax,
which SQLite lacks): for SQLite the casts are left out, for PostgreSQL the parameters become
``%(named)s``. A backend's own file is written in that backend's SQL as it runs.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import Literal

Backend = Literal["sqlite", "postgres"]

_HEADER = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
#: A string literal (left as it is), or a :parameter with its cast, or a cast of something else.
_TOKEN = re.compile(r"'(?:[^']|'')*'|(?<![:\w]):(\w+)|::\w+(?:\[\])?")
_SHARED = "tether.store.sql"


def parse_queries(text: str, source: str) -> dict[str, str]:
    """{name: statement} of a queries file's text, without comment lines and final semicolons."""
    parts = _HEADER.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        lines = [ln for ln in body.strip().splitlines() if not ln.lstrip().startswith("--")]
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice in {source}")
        queries[name] = "\n".join(lines).strip().rstrip(";")
    return queries


def render(statement: str, backend: Backend) -> str:
    """A shared statement in the backend's SQL: casts dropped (SQLite) or %(named)s (PostgreSQL)."""

    def token(match: re.Match[str]) -> str:
        text, name = match.group(0), match.group(1)
        if text.startswith("'"):
            return text
        if backend == "sqlite":
            return text if name else ""
        return f"%({name})s" if name else text

    if backend == "postgres":
        # psycopg reads % as the start of a placeholder: a literal one is written %%.
        statement = statement.replace("%", "%%")
    return _TOKEN.sub(token, statement)


def _read(package: str) -> dict[str, str]:
    text = resources.files(package).joinpath("queries.sql").read_text(encoding="utf-8")
    return parse_queries(text, f"{package}/queries.sql")


def load_queries(backend: Backend) -> dict[str, str]:
    """Every statement of a backend by name: the shared ones rendered for it, then its own."""
    shared, own = _read(_SHARED), _read(f"tether.store.{backend}")
    twice = sorted(shared.keys() & own.keys())
    if twice:
        raise ValueError(f"queries {twice} are both shared and in tether.store.{backend}")
    # The text comes from files shipped with tether, never from user input.
    return {**{n: render(sql, backend) for n, sql in shared.items()}, **own}
