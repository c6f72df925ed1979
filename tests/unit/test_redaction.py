"""The redactor: every default secret shape is replaced, wherever it sits in text or data;
redacting twice changes nothing; extra patterns are checked; disabled, nothing changes."""

from __future__ import annotations

import string

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tether.core.errors import UsageError
from tether.core.redaction import DEFAULT_REDACTOR, NO_REDACTION, Redactor

_URLSAFE = string.ascii_letters + string.digits + "-_"
_UPPER = string.ascii_uppercase + string.digits
_B64 = string.ascii_letters + string.digits + "+/"


def _chars(alphabet: str, size: int, most: int | None = None) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=size, max_size=most or size)


#: One secret of each default shape (what must never survive redaction).
SECRETS = st.one_of(
    _chars(_URLSAFE, 43).map(lambda s: "tk_" + s),
    _chars(_URLSAFE, 20, 60).map(lambda s: "sk-" + s),
    _chars(_URLSAFE, 20, 60).map(lambda s: "sk-proj-" + s),
    st.tuples(st.sampled_from(["AKIA", "ASIA"]), _chars(_UPPER, 16)).map("".join),
    _chars(_B64, 40, 200).map(
        lambda body: f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
    ),
    _chars(_B64, 40, 200).map(lambda body: f"-----BEGIN PRIVATE KEY-----\n{body}"),
)
#: Text around a secret: anything printable, with newlines.
AROUND = st.text(string.printable, max_size=80)


@settings(max_examples=300, deadline=None)
@given(SECRETS, AROUND, AROUND)
def test_a_secret_never_survives_whatever_surrounds_it(
    secret: str, before: str, after: str
) -> None:
    assume(secret not in before + after)
    redacted = DEFAULT_REDACTOR.text(f"{before} {secret}\n{after}")
    assert secret not in redacted
    assert "[REDACTED:" in redacted


@settings(max_examples=300, deadline=None)
@given(_chars(_B64 + "._~=-", 16, 80), st.sampled_from(["Bearer", "bearer", "Basic"]), AROUND)
def test_an_authorization_credential_never_survives(token: str, scheme: str, after: str) -> None:
    redacted = DEFAULT_REDACTOR.text(f"Authorization: {scheme} {token}\n{after}")
    assert redacted.split("\n")[0] == f"Authorization: {scheme} [REDACTED:credential]"


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["API_TOKEN", "DB_PASSWORD", "SECRET", "export AWS_SECRET_ACCESS_KEY"]),
    _chars(string.ascii_letters + string.digits + "/+=.:@", 1, 60),
)
def test_a_secret_variable_of_an_env_file_is_redacted(name: str, value: str) -> None:
    redacted = DEFAULT_REDACTOR.text(f"HOME=/home/me\n{name}={value}\nDEBUG=1\n")
    assert redacted == f"HOME=/home/me\n{name}=[REDACTED:secret-variable]\nDEBUG=1\n"


JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(), SECRETS),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_redacting_twice_changes_nothing(value: object) -> None:
    once = DEFAULT_REDACTOR.data(value)
    assert DEFAULT_REDACTOR.data(once) == once


@settings(max_examples=300, deadline=None)
@given(st.text(string.printable + "äß€", max_size=300))
def test_redacting_any_text_twice_changes_nothing(text: str) -> None:
    once = DEFAULT_REDACTOR.text(text)
    assert DEFAULT_REDACTOR.text(once) == once


@settings(max_examples=100, deadline=None)
@given(SECRETS)
def test_secrets_in_data_are_redacted_in_keys_and_values(secret: str) -> None:
    data = {"out": [f"x {secret}", {"k": secret}], secret: 1, "n": 2.5}
    assert secret not in repr(DEFAULT_REDACTOR.data(data))


def test_ordinary_text_is_left_alone() -> None:
    text = (
        "task_list risk-averse-strategy-for-all max_tokens=100 AKIA short "
        "the bearer of bad news, sk-short, MAX_TOKENS in code"
    )
    assert DEFAULT_REDACTOR.text(text) == text


def test_disabled_redaction_changes_nothing() -> None:
    data = {"token": "tk_" + "a" * 43}
    assert NO_REDACTION.data(data) is data
    assert Redactor.configured(enabled=False).data(data) is data
    assert not Redactor.configured(enabled=False).enabled


def test_extra_patterns_are_redacted_whole_or_by_their_secret_group() -> None:
    redactor = Redactor.configured(extra=[r"ghp_[A-Za-z0-9]{36}", r"pin: (?P<secret>\d{4})"])
    text = "ghp_" + "a" * 36 + " pin: 1234"
    assert redactor.text(text) == "[REDACTED:pattern-1] pin: [REDACTED:pattern-2]"
    assert redactor.text(redactor.text(text)) == redactor.text(text)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [("(", "not valid"), ("x*", "empty text"), (r"REDACTED", "marker"), (r"\[\w+", "marker")],
)
def test_a_bad_extra_pattern_is_a_usage_error(pattern: str, why: str) -> None:
    with pytest.raises(UsageError, match=why):
        Redactor.configured(extra=[pattern])
