"""Packaging: the library runs with pydantic alone; each edge's packages are an extra, and a
missing one is named (with the pip command) when it is needed, never a traceback.

Each check runs in a fresh interpreter in which the extras' packages cannot be imported
(``sys.modules[name] = None`` makes ``import name`` fail as if it were not installed).
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tether
from tether.core import errors

pytestmark = pytest.mark.slow

#: The top-level packages each extra brings (pyproject.toml's optional dependencies).
CLIENT = ("httpx",)
SERVER = ("fastapi", "starlette", "uvicorn")
UI = ("jinja2",)
CLI = ("typer", "rich")
EVERY_EXTRA = (
    *CLIENT,
    *SERVER,
    *UI,
    *CLI,
    "psycopg",
    "psycopg_pool",
    "opentelemetry",
    "prometheus_client",
    "agents",
)


def python(code: str, *, without: tuple[str, ...], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run code in a new interpreter where the packages in without cannot be imported."""
    prelude = f"import sys\nsys.modules.update(dict.fromkeys({list(without)!r}))\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_library_runs_with_none_of_the_extras(tmp_path: Path) -> None:
    done = python(
        """
        import json, sys
        import tether
        tt = tether.open("t.db")
        s = tt.sessions.create(title="bare")
        s.memory["k"] = "v"
        run = s.runs.create("hello", agent="echo", input={"text": "hi"}).wait(30)
        loaded = sorted({m.split(".")[0] for m in sys.modules if sys.modules[m] is not None})
        print(json.dumps({"status": str(run.status), "memory": dict(s.memory), "loaded": loaded}))
        tt.close()
        """,
        without=EVERY_EXTRA,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["status"] == "completed" and seen["memory"] == {"k": "v"}
    assert not set(seen["loaded"]) & set(EVERY_EXTRA)


def test_connect_without_the_client_extra_names_it(tmp_path: Path) -> None:
    done = python(
        """
        import tether
        try:
            tether.connect("http://127.0.0.1:9", api_key="tk_x")
        except tether.MissingExtra as exc:
            print(exc.extra, exc)
        """,
        without=CLIENT,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("client tether.connect needs tether[client]")
    assert "pip install 'tether[client]'" in done.stdout


def test_the_command_without_the_cli_extra_is_one_line(tmp_path: Path) -> None:
    done = python("from tether.cli.launch import main\nmain()", without=CLI, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "error: the tether command needs tether[cli]: pip install 'tether[cli]'"
        " (no module named 'typer')"
    ]


def test_serve_without_the_server_extra_is_one_line(tmp_path: Path) -> None:
    done = python(
        "import sys\nsys.argv = ['tether', 'serve', '--port', '0']\n"
        "from tether.cli.launch import main\nmain()",
        without=SERVER,
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "error: tether serve needs tether[server]: pip install 'tether[server]'"
        " (no module named 'uvicorn')"
    ]
    assert not (tmp_path / "tether.db").exists()  # refused before touching anything


def test_the_server_without_the_ui_extra_serves_the_api_and_names_the_extra_at_ui(
    tmp_path: Path,
) -> None:
    done = python(
        """
        import json
        from starlette.testclient import TestClient
        from tether.api import ApiSettings, create_app
        app = create_app(ApiSettings(db="t.db", workers=0, auth=False))
        with TestClient(app, base_url="http://127.0.0.1") as http:
            ui, health = http.get("/ui/sessions"), http.get("/healthz")
        print(json.dumps([ui.status_code, ui.json(), health.status_code]))
        """,
        without=UI,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    status, problem, health = json.loads(done.stdout)
    assert (status, health) == (501, 200)
    assert problem["code"] == "missing_extra" and problem["extra"] == "ui"
    assert "pip install 'tether[ui]'" in problem["detail"]


def test_the_agents_sdk_adapter_without_its_extra_names_it(tmp_path: Path) -> None:
    done = python(
        """
        import tether
        try:
            from tether.integrations.openai_agents import TetherSession
        except tether.MissingExtra as exc:
            print(exc.extra, exc)
        """,
        without=("agents",),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("openai-agents tether.integrations.openai_agents needs")
    assert "pip install 'tether[openai-agents]'" in done.stdout


def test_the_version_has_one_source() -> None:
    assert tether.__version__ == importlib.metadata.version("tether")


def test_every_error_tether_raises_is_exported() -> None:
    def subclasses(cls: type[errors.TetherError]) -> set[type[errors.TetherError]]:
        found = {cls}
        for sub in cls.__subclasses__():
            found |= subclasses(sub)
        return found

    core = {cls for cls in subclasses(errors.TetherError) if cls.__module__ == errors.__name__}
    assert len(core) > 15
    for cls in core:
        assert getattr(tether, cls.__name__) is cls, cls.__name__
        assert cls.__name__ in tether.__all__
