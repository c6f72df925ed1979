"""The version of tether (one place, importable without importing the package's API)."""

__version__ = "0.1.0"
