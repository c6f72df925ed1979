"""Durations and times on the command line (--since 1d, --unroutable-after 1h)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import typer

from tether.cli import durations

NOW = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90),
        ("90s", 90),
        ("15m", 900),
        ("1h", 3600),
        ("1.5h", 5400),
        ("1d", 86400),
        ("2w", 14 * 86400),
        (" 3D ", 3 * 86400),
        ("0", 0),
    ],
)
def test_a_duration_is_a_number_and_a_unit(text: str, seconds: float) -> None:
    assert durations.seconds(text, option="--x") == seconds


@pytest.mark.parametrize("text", ["", "1x", "-1h", "h", "1e9", "nan", "1 h 2", "999999999w"])
def test_anything_else_is_a_usage_error_naming_the_option(text: str) -> None:
    with pytest.raises(typer.BadParameter) as caught:
        durations.seconds(text, option="--since")
    assert caught.value.param_hint == "--since"


def test_a_moment_is_a_duration_ago_or_an_iso_time() -> None:
    assert durations.moment("1d", option="--since", now=NOW) == NOW - timedelta(days=1)
    assert durations.moment("2026-12-01T10:00:00+01:00", option="--since", now=NOW) == datetime(
        2026, 12, 1, 9, 0, tzinfo=UTC
    )
    # a time without a zone is UTC, as every time tether shows
    assert durations.moment("2026-12-01 10:00", option="--since", now=NOW) == datetime(
        2026, 12, 1, 10, 0, tzinfo=UTC
    )
    with pytest.raises(typer.BadParameter):
        durations.moment("yesterday", option="--since", now=NOW)


def test_a_grace_period_may_be_never() -> None:
    assert durations.grace("never", option="--unroutable-after") is None
    assert durations.grace("1h", option="--unroutable-after") == 3600
