"""Helpers of the LangGraph integration tests: the extra, a graph, a saver per backend."""

from __future__ import annotations

import importlib.util
import os

import pytest


def langgraph_or_skip() -> None:
    """Skip the module without the langgraph extra; under CI=true, fail instead."""
    if importlib.util.find_spec("langgraph") is not None:
        return
    message = "the langgraph extra is missing: pip install -e '.[langgraph]' (make install)"
    if os.environ.get("CI") == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message, allow_module_level=True)
