"""AllowedHosts: which Host headers a server answers (loopback by default, plus what the
operator adds), and how a Host header is read (names, ports, IPv6 literals)."""

from __future__ import annotations

import pytest

from tether.core.errors import UsageError
from tether.core.hosts import AllowedHosts, host_of


@pytest.mark.parametrize(
    ("header", "host"),
    [
        ("example.com", "example.com"),
        ("Example.COM.:8080", "example.com"),
        ("127.0.0.1:80", "127.0.0.1"),
        ("[::1]:8080", "::1"),
        ("[::1]", "::1"),
        ("[::1", None),
        ("[::1]x", None),
        ("[127.0.0.1]", None),
        ("::1", None),
        ("a:b:c", None),
        ("host:http", None),
        ("", None),
        ("a b", None),
        ("user@host", None),
        ("-lead.example", None),
    ],
)
def test_host_of_reads_a_host_header(header: str, host: str | None) -> None:
    assert host_of(header) == host


def test_only_loopback_by_default() -> None:
    hosts = AllowedHosts()
    for header in ("localhost", "localhost:1", "127.0.0.1:8080", "127.200.0.9", "[::1]:80"):
        assert hosts.permits(header), header
    for bad in (None, "attacker.example", "localhost.attacker.example", "[::2]", "10.0.0.1"):
        assert not hosts.permits(bad), bad


def test_added_names_addresses_and_wildcards() -> None:
    hosts = AllowedHosts.of(["Tether.Example.", "[2001:db8::1]", "*.corp.example", "10.0.0.5"])
    assert hosts.extra == ("tether.example", "2001:db8::1", "*.corp.example", "10.0.0.5")
    for header in ("tether.example:8080", "[2001:db8::1]:1", "a.b.corp.example", "10.0.0.5"):
        assert hosts.permits(header), header
    for header in ("corp.example", "xcorp.example", "sub.tether.example", "10.0.0.6"):
        assert not hosts.permits(header), header
    assert AllowedHosts.of(["*"]).permits("anything.example")


@pytest.mark.parametrize("entry", ["", "bad/host", "*.", "*.1.2.3.4.5:80", "a b", "*.[::1]"])
def test_bad_entries_are_usage_errors(entry: str) -> None:
    with pytest.raises(UsageError, match="allowed host"):
        AllowedHosts.of([entry])
