"""Tests of tether.integrations: each module needs its framework (an extra) and is skipped
without it, with the reason, except under CI=true, where a missing framework is a failure."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def framework(module: str, extra: str) -> ModuleType:
    """The framework module, or skip (fail under CI=true) naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        message = f"needs the {extra} extra: pip install -e '.[{extra}]'"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (CI=true: a missing extra is a failure)", pytrace=False)
        pytest.skip(message, allow_module_level=True)
