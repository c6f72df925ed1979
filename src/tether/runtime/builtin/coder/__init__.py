"""coder: the seed's coding assistant — real tools over a workspace, driven by a model."""

from tether.runtime.builtin.coder.agent import coder
from tether.runtime.builtin.coder.policy import OfflineCoderModel
from tether.runtime.builtin.coder.workspace import Workspace

__all__ = ["OfflineCoderModel", "Workspace", "coder"]
