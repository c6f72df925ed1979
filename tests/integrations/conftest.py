"""Fixtures of the framework tests."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator

import pytest


@pytest.fixture
def close_the_default_loop() -> Iterator[None]:
    """The Agents SDK's ``Runner.run_sync`` runs on the thread's default loop and leaves it
    open for the next call: close it after the test, as a program would at its end (the Agents
    SDK's tests ask for it)."""
    yield
    policy = asyncio.get_event_loop_policy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            left = policy.get_event_loop()
        except RuntimeError:
            return
    if not left.is_running() and not left.is_closed():
        left.close()
    policy.set_event_loop(None)
