"""What the commands that execute runs (``serve``, ``worker``) take to redact secrets."""

from __future__ import annotations

from typing import Annotated

import typer

from tether.core.redaction import Redactor

RedactOption = Annotated[
    bool,
    typer.Option(
        "--redact/--no-redact",
        envvar="TETHER_REDACT",
        help="Replace secrets (tk_ and sk- keys, AWS key ids, Bearer/Basic credentials, private "
        "keys, secret env variables) in what runs record, before it is stored.",
    ),
]
RedactPatternOption = Annotated[
    list[str] | None,
    typer.Option(
        "--redact-pattern",
        envvar="TETHER_REDACT_PATTERNS",
        help="One more regular expression to redact (its 'secret' group, else the whole "
        "match); repeatable (TETHER_REDACT_PATTERNS: separated by spaces).",
    ),
]


def redactor(redact: bool, patterns: list[str] | None) -> Redactor:
    """The redactor the options ask for (UsageError for a bad pattern)."""
    return Redactor.configured(enabled=redact, extra=patterns or ())
