"""store/migrate.py: migrations load in order, gaps are refused, and a database newer than the
code is refused; both backends ship the same migrations."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.core.errors import SchemaTooNew
from tether.store.migrate import Migration, load_migrations, pending

BACKENDS = ("tether.store.sqlite", "tether.store.postgres")


@pytest.mark.parametrize("package", BACKENDS)
def test_migrations_load_numbered_from_one_without_gaps(package: str) -> None:
    migrations = load_migrations(package)
    assert [m.version for m in migrations] == list(range(1, len(migrations) + 1))
    assert all(m.sql.strip() for m in migrations)


def test_both_backends_ship_the_same_migrations() -> None:
    sqlite, postgres = (load_migrations(package) for package in BACKENDS)
    assert [(m.version, m.name) for m in sqlite] == [(m.version, m.name) for m in postgres]


def _package(root: Path, name: str, files: list[str]) -> str:
    folder = root / name / "migrations"
    folder.mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    for file in files:
        (folder / file).write_text("SELECT 1;")
    return name


def test_files_are_read_in_number_order_and_others_are_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    files = ["0010_j.sql", "0002_b.sql", "0001_a.sql", "README.md", "0003_x.sql.bak"]
    files += [f"{n:04d}_{chr(96 + n)}.sql" for n in range(3, 10)]
    name = _package(tmp_path, "ordered_migrations", files)
    assert [m.version for m in load_migrations(name)] == list(range(1, 11))


def test_a_gap_in_the_numbers_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    name = _package(tmp_path, "gapped_migrations", ["0001_a.sql", "0003_c.sql"])
    with pytest.raises(RuntimeError, match="migration 0002 is missing"):
        load_migrations(name)


def test_pending_is_what_is_newer_than_the_database() -> None:
    migrations = [Migration(n, f"m{n}", "SELECT 1;") for n in (1, 2, 3)]
    assert [m.version for m in pending(migrations, 0, "db")] == [1, 2, 3]
    assert [m.version for m in pending(migrations, 2, "db")] == [3]
    assert pending(migrations, 3, "db") == []
    with pytest.raises(SchemaTooNew, match="schema version 4, newer than the 3"):
        pending(migrations, 4, "db")
