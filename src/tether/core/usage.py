"""Token usage, recorded on model-call steps and rolled up on runs and sessions."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens spent on model calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    #: Number of model calls these tokens came from.
    requests: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.requests + other.requests,
        )

    def is_zero(self) -> bool:
        return self == ZERO_USAGE


ZERO_USAGE = Usage()
