"""Reading a /metrics answer the way Prometheus does: with prometheus_client's parsers (the
text format and, stricter, OpenMetrics), into samples a test can look up by name and labels."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families

OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


@dataclass(frozen=True)
class Samples:
    """Every sample of one exposition, and the type of each family."""

    values: dict[tuple[str, frozenset[tuple[str, str]]], float]
    types: dict[str, str]

    def get(self, name: str, **labels: str) -> float | None:
        """The value of the sample with exactly these labels, or None."""
        return self.values.get((name, frozenset(labels.items())))

    def total(self, name: str, **labels: str) -> float:
        """The sum of the samples called name whose labels include these (0 when none)."""
        wanted = set(labels.items())
        return sum(v for (n, ls), v in self.values.items() if n == name and wanted <= ls)

    def names(self) -> set[str]:
        return {name for name, _ in self.values}


def parse(text: str, *, openmetrics: bool = False) -> Samples:
    """The samples of a text-format (or OpenMetrics) exposition; the parser raises on anything
    malformed."""
    # prometheus_client's text parser is not annotated.
    families = (
        openmetrics_families(text) if openmetrics else text_string_to_metric_families(text)  # type: ignore[no-untyped-call]
    )
    values: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    types: dict[str, str] = {}
    for family in families:
        types[family.name] = family.type
        for sample in family.samples:
            key = (sample.name, frozenset(sample.labels.items()))
            assert key not in values, f"duplicate sample {key}"
            values[key] = sample.value
    return Samples(values, types)
