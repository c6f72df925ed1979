"""calc: small arithmetic helpers and a report."""

from calc.core import add, mean

__all__ = ["add", "mean"]
