"""The native /v1 API, one router per resource."""
