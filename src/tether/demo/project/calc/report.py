"""A plain-text report of named values."""

from calc._vendor.tabulate import tabulate

from calc.core import mean


def render(rows):
    """A table of (name, value) rows followed by their mean."""
    table = tabulate(rows, headers=("name", "value"))
    return f"{table}\nmean: {mean(v for _, v in rows):g}"
