"""Renamed keyword arguments: the former name still works, with a DeprecationWarning.

A session's ``project`` was called ``context``, the word that now names only what a run starts
from (the assembled context).
"""

from __future__ import annotations

import warnings
from typing import TypeVar

from tether.core.errors import UsageError

T = TypeVar("T")


def project_arg(project: T, context: T, *, absent: object = None, stacklevel: int = 2) -> T:
    """The session project given as project=, or as the deprecated context= (warned about,
    stacklevel frames above this function's caller); UsageError when both are given and
    differ. absent is what a keyword left out holds (None, or UNSET for an update)."""
    if context is absent:
        return project
    warnings.warn(
        "context= (a session's project) is deprecated: use project=",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )
    if project is not absent and project != context:
        raise UsageError("project= and its deprecated name context= disagree: give project= only")
    return context
