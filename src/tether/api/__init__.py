"""The HTTP service: the native /v1 API with SSE streams, API keys and problem+json errors.

``create_app`` and ``ApiSettings`` are imported on first use, so that importing a small part
(settings, for the CLI) does not load FastAPI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tether.api.app import create_app
    from tether.api.settings import ApiSettings

__all__ = ["ApiSettings", "create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from tether.api.app import create_app

        return create_app
    if name == "ApiSettings":
        from tether.api.settings import ApiSettings

        return ApiSettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
