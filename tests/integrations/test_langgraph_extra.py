"""The langgraph extra: imported only when the integration is, and named when it is missing."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_import_tether_does_not_import_langgraph() -> None:
    done = run("import sys, tether; print('langgraph' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_without_the_extra_the_integration_names_it() -> None:
    done = run(
        "import sys\n"
        "sys.modules['langgraph'] = None\n"  # as if it were not installed
        "import tether\n"
        "try:\n"
        "    import tether.integrations.langgraph\n"
        "except tether.MissingExtra as exc:\n"
        "    print(exc.extra, exc)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("langgraph ")
    assert "pip install 'tether[langgraph]'" in done.stdout
