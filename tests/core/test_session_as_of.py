"""Session.as_of: a session is expired as of a moment exactly when is_expired_at says so."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from tether.core.session import Session
from tether.core.status import SessionStatus

_AT = datetime(2026, 12, 5, 1, 2, 3, 456789, tzinfo=UTC)


@given(
    status=st.sampled_from(list(SessionStatus)),
    ttl=st.none() | st.integers(min_value=0, max_value=10**8),
    offset=st.integers(min_value=-(10**15), max_value=10**15),
)
def test_as_of_expires_what_is_expired_at_that_moment(
    status: SessionStatus, ttl: int | None, offset: int
) -> None:
    session = Session("s1", "alice", None, status, _AT, _AT, _AT, ttl)
    now = _AT + timedelta(microseconds=offset)
    seen = session.as_of(now)
    if status is SessionStatus.ACTIVE and session.is_expired_at(now):
        assert seen == Session("s1", "alice", None, SessionStatus.EXPIRED, _AT, _AT, _AT, ttl)
    else:
        assert seen is session
