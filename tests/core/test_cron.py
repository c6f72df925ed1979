"""Cron expressions: parsing, and the next tick checked against a minute-by-minute search,
in zones with daylight saving time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.core import cron
from tether.core.errors import UsageError

ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata")


def _field(low: int, high: int) -> st.SearchStrategy[str]:
    number = st.integers(low, high)
    single = number.map(str)
    span = st.tuples(number, number).map(lambda ab: f"{min(ab)}-{max(ab)}")
    step = st.tuples(st.sampled_from(["*", "", "range"]), st.integers(1, high - low + 1))
    stepped = st.tuples(step, number, number).map(
        lambda t: (
            f"*/{t[0][1]}"
            if t[0][0] in ("*", "")
            else f"{min(t[1], t[2])}-{max(t[1], t[2])}/{t[0][1]}"
        )
    )
    item = st.one_of(st.just("*"), single, span, stepped)
    return st.lists(item, min_size=1, max_size=3).map(",".join)


#: Expressions that fire often enough to be checked minute by minute.
FREQUENT = st.tuples(_field(0, 59), _field(0, 23), st.just("*"), st.just("*"), _field(0, 7)).map(
    " ".join
)
ANY = st.tuples(_field(0, 59), _field(0, 23), _field(1, 31), _field(1, 12), _field(0, 7)).map(
    " ".join
)
MOMENTS = st.datetimes(
    min_value=datetime(2020, 1, 1),  # noqa: DTZ001 (hypothesis wants naive bounds)
    max_value=datetime(2035, 12, 31),  # noqa: DTZ001
    timezones=st.just(UTC),
)


def _brute_next(expr: cron.Cron, after: datetime, zone: ZoneInfo, limit: int) -> datetime | None:
    """The first minute after ``after`` whose wall-clock time matches, at its first
    occurrence (a repeated wall-clock time fires once), searched minute by minute."""
    moment = after.replace(second=0, microsecond=0)
    for _ in range(limit):
        moment += timedelta(minutes=1)
        local = moment.astimezone(zone)
        if local.fold == 0 and expr.matches(local):
            return moment
    return None


@settings(max_examples=150, deadline=None)
@given(text=FREQUENT, after=MOMENTS, zone_name=st.sampled_from(ZONES))
def test_next_after_is_the_first_matching_minute(
    text: str, after: datetime, zone_name: str
) -> None:
    expr = cron.parse(text)
    zone = ZoneInfo(zone_name)
    limit = 8 * 24 * 60
    expected = _brute_next(expr, after, zone, limit)
    found = expr.next_after(after, zone)
    if expected is None:  # nothing within the week searched: found is later, if anything
        assert found is None or found > after + timedelta(minutes=limit)
    else:
        assert found == expected


@settings(max_examples=150, deadline=None)
@given(text=ANY, after=MOMENTS, zone_name=st.sampled_from(ZONES))
def test_next_after_matches_and_moves_forward(text: str, after: datetime, zone_name: str) -> None:
    expr = cron.parse(text)
    zone = ZoneInfo(zone_name)
    found = expr.next_after(after, zone)
    if found is not None:
        assert found > after and found.second == 0 and found.tzinfo is UTC
        assert expr.matches(found.astimezone(zone))
        assert expr.next_after(found, zone) != found


@given(text=ANY)
def test_a_parsed_expression_reads_back_the_same(text: str) -> None:
    expr = cron.parse(text)
    assert cron.parse(expr.expression) == expr
    assert all(0 <= m <= 59 for m in expr.minutes) and all(0 <= h <= 23 for h in expr.hours)
    assert set(expr.weekdays) <= set(range(7))


def test_fields_lists_ranges_steps_and_names() -> None:
    expr = cron.parse("5/20 9-17/4 1,15 JAN-mar mon-fri")
    assert expr.minutes == (5, 25, 45)
    assert expr.hours == (9, 13, 17)
    assert expr.days == (1, 15) and expr.months == (1, 2, 3)
    assert expr.weekdays == (1, 2, 3, 4, 5)
    assert cron.parse("0 0 * * 7").weekdays == (0,)  # 7 is Sunday too


def test_either_day_field_matches_when_both_are_restricted() -> None:
    expr = cron.parse("0 0 13 * fri")  # every 13th and every Friday
    after = datetime(2026, 3, 1, tzinfo=UTC)  # a Sunday
    ticks = []
    for _ in range(4):
        found = expr.next_after(after, UTC)
        assert found is not None
        ticks.append(found.day)
        after = found
    assert ticks == [6, 13, 20, 27]  # Fridays, and the 13th (a Friday too)
    assert cron.parse("0 0 14 * fri").next_after(datetime(2026, 3, 7, tzinfo=UTC), UTC) == (
        datetime(2026, 3, 13, tzinfo=UTC)
    )


def test_daylight_saving_time_skips_the_lost_hour_and_repeats_nothing() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    # 29 March 2026: 02:00 → 03:00 in Berlin; 02:30 does not happen that day.
    daily = cron.parse("30 2 * * *")
    found = daily.next_after(datetime(2026, 3, 28, 12, tzinfo=UTC), berlin)
    assert found == datetime(2026, 3, 30, 0, 30, tzinfo=UTC)  # 02:30 CEST on the 30th
    # 25 October 2026: 03:00 → 02:00; 02:30 happens twice and fires once.
    first = daily.next_after(datetime(2026, 10, 24, 12, tzinfo=UTC), berlin)
    assert first == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 02:30 CEST
    assert daily.next_after(first, berlin) == datetime(2026, 10, 26, 1, 30, tzinfo=UTC)
    # 09:00 every day stays 09:00 local across the change.
    nine = cron.parse("0 9 * * *")
    before = nine.next_after(datetime(2026, 3, 27, 12, tzinfo=UTC), berlin)
    after = nine.next_after(datetime(2026, 3, 28, 12, tzinfo=UTC), berlin)
    assert before is not None and after is not None
    assert before.astimezone(berlin).hour == after.astimezone(berlin).hour == 9
    assert after - before == timedelta(hours=23)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("* * * *", "5 fields"),
        ("60 * * * *", "minute"),
        ("* 24 * * *", "hour"),
        ("* * 0 * *", "day of month"),
        ("* * * 13 *", "month"),
        ("* * * * 8", "day of week"),
        ("5-1 * * * *", "backwards"),
        ("*/0 * * * *", "minute"),
        ("a * * * *", "minute"),
        ("1,,2 * * * *", "minute"),
        ("* * * foo *", "month"),
        ("٣ * * * *", "minute"),
    ],
)
def test_bad_expressions_name_their_field(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        cron.parse(text)


def test_an_expression_that_never_matches_has_no_next_time() -> None:
    assert cron.parse("0 0 31 2 *").next_after(datetime(2026, 1, 1, tzinfo=UTC), UTC) is None


def test_zones() -> None:
    assert cron.zone(None).key == "UTC"
    assert cron.zone("Asia/Tokyo").key == "Asia/Tokyo"
    for bad in ("Nowhere/City", "../etc/passwd", "/etc/localtime"):
        with pytest.raises(UsageError, match="timezone"):
            cron.zone(bad)
