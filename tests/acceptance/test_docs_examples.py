"""The model-and-tools example in docs/agents.md runs as printed, in a fresh interpreter."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

AGENTS_MD = Path(__file__).parents[2] / "docs" / "agents.md"


def _example(marker: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", AGENTS_MD.read_text(), re.S)
    found = [b for b in blocks if marker in b]
    assert len(found) == 1, f"one example in docs/agents.md holds {marker!r}"
    return str(found[0])


def test_the_model_agent_example_runs_as_documented(tmp_path: Path) -> None:
    script = tmp_path / "concierge.py"
    script.write_text(_example('"concierge"'))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == 'waiting Allow book_taxi({"city": "Oslo"})?'
    assert lines[1] == "completed It rains in Oslo (8 °C): I booked you a taxi."
    steps = ast.literal_eval(lines[2])
    assert [s for s in steps if s[0] in ("model_call", "tool_call")] == [
        ("model_call", "scripted"),
        ("tool_call", "weather"),
        ("model_call", "scripted"),
        ("tool_call", "book_taxi"),
        ("model_call", "scripted"),
    ]
    assert lines[3] == "It rains in Oslo (8 °C): I booked you a taxi."
