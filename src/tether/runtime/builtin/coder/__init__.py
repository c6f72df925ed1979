"""coder: the seed's coding assistant — real tools over a workspace, driven by a model.

Its names load on first use (``from tether.runtime.builtin.coder import Workspace``): the
offline policy, which every model catalog holds, is imported without the workspace's tools.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tether.runtime.builtin.coder.agent import coder
    from tether.runtime.builtin.coder.policy import OfflineCoderModel
    from tether.runtime.builtin.coder.workspace import Workspace

__all__ = ["OfflineCoderModel", "Workspace", "coder"]

_HOME_OF = {"OfflineCoderModel": "policy", "Workspace": "workspace", "coder": "agent"}


def __getattr__(name: str) -> Any:
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
