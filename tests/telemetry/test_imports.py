"""Telemetry costs nothing until it is turned on: ``import tether`` and a server without it
import neither the OpenTelemetry SDK nor prometheus-client (nor tether's code that uses them).
Each check runs in a fresh interpreter, so sys.modules shows only what it imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

#: Modules (and their submodules) that only turning telemetry on may import.
EXTRAS = (
    "opentelemetry.sdk",
    "opentelemetry.exporter",
    "opentelemetry.proto",
    "prometheus_client",
    "tether.telemetry.tracing",
    "tether.telemetry.metrics",
    "tether.api.tracing",
    "tether.api.metrics",
)

SERVE_ONE_REQUEST = """
import asyncio, httpx
from tether.api import create_app
from tether.api.settings import ApiSettings

async def main():
    app = create_app(ApiSettings(db=DB, auth=False, metrics=METRICS))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            assert (await http.post("/v1/sessions", json={})).status_code == 201

asyncio.run(main())
"""


def _imported(code: str) -> list[str]:
    """The modules of EXTRAS loaded after code ran in a new interpreter."""
    script = f"""{code}
import json, sys
print(json.dumps(sorted(m for m in sys.modules if m.startswith({EXTRAS!r}))))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def test_import_tether_loads_no_opentelemetry_at_all() -> None:
    script = """
import sys
import tether
import tether.telemetry
assert not [m for m in sys.modules if m.startswith("opentelemetry")], "opentelemetry loaded"
"""
    assert _imported(script) == []


def test_a_library_run_loads_none_of_the_extras(tmp_path: Path) -> None:
    script = f"""
import tether
with tether.open({str(tmp_path / "lib.db")!r}) as tt:
    run = tt.sessions.create(title="quiet").runs.create("hello").wait()
    assert run.status.value == "completed", run
"""
    assert _imported(script) == []


def test_a_server_without_telemetry_loads_none_of_the_extras(tmp_path: Path) -> None:
    script = SERVE_ONE_REQUEST.replace("DB", repr(str(tmp_path / "a.db"))).replace(
        "METRICS", "False"
    )
    assert _imported(script) == []


def test_a_server_with_metrics_loads_prometheus_client_and_no_tracing(tmp_path: Path) -> None:
    """The check above can fail: turning metrics on shows up in sys.modules."""
    script = SERVE_ONE_REQUEST.replace("DB", repr(str(tmp_path / "b.db"))).replace(
        "METRICS", "True"
    )
    loaded = _imported(script)
    assert "prometheus_client" in loaded and "tether.api.metrics" in loaded
    assert not [m for m in loaded if "tracing" in m or m.startswith("opentelemetry")]


@pytest.mark.parametrize(
    ("missing", "flag", "extra"),
    [("opentelemetry.sdk", "--otel", "otel"), ("prometheus_client", "--metrics", "metrics")],
)
def test_without_the_extra_the_flag_says_what_to_install(
    tmp_path: Path, missing: str, flag: str, extra: str
) -> None:
    """As if the extra were not installed (its package cannot be imported)."""
    script = f"""
import sys
sys.modules[{missing!r}] = None  # importing it now fails, as when it is not installed
sys.argv = ["tether", "serve", "--no-auth", "--port", "0", "--db", {str(tmp_path / "t.db")!r},
            {flag!r}]
from tether.cli.main import main
main()
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and f"pip install 'tether[{extra}]'" in last
