"""`import tether` costs its errors and version: every other public name loads with its module
on first use, as a user sees in a fresh interpreter's sys.modules (no timing here: bench/cli.py
times it)."""

from __future__ import annotations

import json
import subprocess
import sys

import tether

#: What `import tether` alone must not load (each, and its submodules).
HEAVY = (
    "asyncio",
    "pydantic",
    "sqlite3",
    "httpx",
    "tether.core.event",
    "tether.core.message",
    "tether.runtime",
    "tether.store",
    "tether.client",
)


def loaded_after(code: str) -> list[str]:
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    modules: list[str] = json.loads(done.stdout.splitlines()[-1])
    return modules


def test_import_tether_loads_none_of_the_heavy_modules() -> None:
    loaded = loaded_after("import tether")
    assert [m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY)] == []
    assert "tether.core.errors" in loaded and "tether.version" in loaded


def test_a_name_loads_its_own_module_only() -> None:
    loaded = loaded_after("from tether import Message, NotFound")
    assert "tether.core.message" in loaded
    assert not [m for m in loaded if m.startswith(("tether.runtime", "tether.store", "pydantic"))]


def test_every_public_name_resolves_to_its_home() -> None:
    for name in tether.__all__:
        value = getattr(tether, name)
        home = getattr(value, "__module__", None)
        assert home is None or home.startswith("tether."), name
    assert set(tether.__all__) <= set(dir(tether))
    assert tether.open is tether.runtime.facade.open
    assert tether.connect is tether.client.connect
