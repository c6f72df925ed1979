"""Numbered migrations: ``NNNN_name.sql`` files applied in order, recorded in schema_version."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from tether.core.errors import SchemaTooNew

_FILE = re.compile(r"^(\d{4})_(\w+)\.sql$")
#: The line that makes a migration optional: a speed-up that changes no meaning, which a database
#: that refuses it (SQLite in defensive mode refuses edits of its schema text) records as applied
#: and goes on without.
OPTIONAL = "-- tether: optional"


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema change."""

    version: int
    name: str
    sql: str

    @property
    def optional(self) -> bool:
        """Whether a database that refuses it may go on without it (see OPTIONAL)."""
        return OPTIONAL in self.sql.splitlines()


def load_migrations(package: str) -> list[Migration]:
    """The migrations shipped in package/migrations, by version (gaps are an error)."""
    folder = resources.files(package).joinpath("migrations")
    found = []
    for entry in folder.iterdir():
        match = _FILE.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    for expected, migration in enumerate(found, start=1):
        if migration.version != expected:
            raise RuntimeError(f"migration {expected:04d} is missing in {package}")
    return found


def pending(migrations: list[Migration], current: int, location: str) -> list[Migration]:
    """What to apply on a database at version current; refuses one newer than this code."""
    latest = migrations[-1].version if migrations else 0
    if current > latest:
        raise SchemaTooNew(
            f"the database {location} has schema version {current}, newer than the {latest} "
            "this tether knows: upgrade tether to open it"
        )
    return [m for m in migrations if m.version > current]
