"""`import tether` costs its errors and version: every other public name loads with its module
on first use, as a user sees in a fresh interpreter's sys.modules (no timing here: bench/cli.py
times it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

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


#: Put first in a fresh interpreter: httpx cannot be imported, as without the [client] extra.
WITHOUT_HTTPX = """
import sys
class NoHttpx:
    def find_spec(self, name, path=None, target=None):
        if name == "httpx" or name.startswith("httpx."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NoHttpx())
"""


def printed_by(code: str) -> Any:
    """What `code`, run in a fresh interpreter, printed last (as JSON)."""
    # Without coverage's start-up in the child (the suite's --cov measures subprocesses, and
    # coverage itself imports sqlite3): what is loaded is then what a user's interpreter loads.
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def loaded_after(code: str) -> list[str]:
    modules: list[str] = printed_by(
        f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    )
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


def test_the_subpackages_import_tether_bound_load_on_first_use() -> None:
    found = printed_by(
        "import json, sys, types, tether\n"
        "before = 'tether.runtime' in sys.modules or 'tether.store' in sys.modules\n"
        "kinds = [isinstance(getattr(tether, n), types.ModuleType) for n in ('runtime', 'store')]\n"
        "print(json.dumps([before, kinds, {'runtime', 'store'} <= set(dir(tether))]))"
    )
    assert found == [False, [True, True], True]


def test_without_the_client_extra_introspection_works_and_the_client_says_what_is_missing() -> None:
    found = printed_by(
        WITHOUT_HTTPX + "import inspect, io, json, pydoc, tether\n"
        "members = dict(inspect.getmembers(tether))\n"
        "helped = io.StringIO()\n"
        "pydoc.Helper(output=helped).help(tether)\n"
        "try:\n"
        "    tether.Client('http://127.0.0.1:1')\n"
        "    error = None\n"
        "except tether.MissingExtra as exc:\n"
        "    error = str(exc)\n"
        "print(json.dumps([sorted(set(tether.__all__) - set(members)), 'class Message' in "
        "helped.getvalue(), error, 'httpx' in sys.modules]))"
    )
    missing, helped, error, httpx_loaded = found
    assert missing == ["AsyncClient", "Client", "connect", "connect_async"]
    assert helped
    needs = "tether.Client needs tether[client]: pip install 'tether[client]'"
    assert error == f"{needs} (no module named 'httpx')"
    assert not httpx_loaded
