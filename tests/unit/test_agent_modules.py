"""``--agents NAME`` (tether serve, tether worker) imports NAME from the current folder, as
``python -m`` does, and a module it cannot find is one line naming where it looked."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tether.config import import_agents
from tether.core.errors import UsageError


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp_path as the current folder, which is not on the import path yet."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    return tmp_path


def test_a_module_in_the_current_folder_imports(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (folder / "triage_here.py").write_text("LOADED = True\n")
    monkeypatch.delitem(sys.modules, "triage_here", raising=False)
    try:
        assert import_agents("triage_here") == ["triage_here"]
        assert sys.modules["triage_here"].LOADED is True
    finally:
        sys.modules.pop("triage_here", None)


def test_a_missing_module_says_where_it_was_looked_for(folder: Path) -> None:
    with pytest.raises(UsageError) as missing:
        import_agents("no_such_agents_here")
    assert f"no 'no_such_agents_here' in the current folder ({folder})" in str(missing.value)


def test_a_module_whose_own_import_fails_says_what_failed(folder: Path) -> None:
    (folder / "broken_agents.py").write_text("import no_such_dependency_xyz\n")
    try:
        with pytest.raises(UsageError) as broken:
            import_agents("broken_agents")
    finally:
        sys.modules.pop("broken_agents", None)
    message = str(broken.value)
    assert "cannot import agent module 'broken_agents'" in message
    assert "No module named 'no_such_dependency_xyz'" in message
