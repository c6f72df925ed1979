"""The HTTP service: the native /v1 API with SSE streams, API keys and problem+json errors."""

from tether.api.app import create_app
from tether.api.settings import ApiSettings

__all__ = ["ApiSettings", "create_app"]
