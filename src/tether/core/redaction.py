"""Redaction: common secret shapes replaced by a marker before what a run produces is stored.

A :class:`Redactor` rewrites text, and JSON-like data (dicts, lists, tuples, strings, keys
included), replacing each secret with ``[REDACTED:<kind>]``. Redacting is idempotent (a
redacted value redacted again is unchanged) and a marker never holds a secret. The default
shapes: tether's own API keys (``tk_…``), ``sk-…`` model-provider keys, AWS access key ids
(``AKIA…``, ``ASIA…``), ``Bearer``/``Basic`` credentials (as in ``Authorization:`` headers),
PEM private key blocks (to the end of the text when cut short) and, in env files, the value of a
variable whose name says it is a secret (``API_TOKEN=…``, ``DB_PASSWORD=…``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from tether.core.errors import UsageError

#: What a secret becomes; no pattern matches it (every secret-group pattern refuses it).
MARKER = "[REDACTED:{kind}]"
_NOT_A_MARKER = r"(?!\[REDACTED)"
_TOKEN_CHARS = r"[A-Za-z0-9_-]"
_SECRET_NAMES = (
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "TOKEN",
    "API_KEY",
    "APIKEY",
    "ACCESS_KEY",
    "PRIVATE_KEY",
    "CREDENTIAL",
)


class SecretPattern:
    """One secret shape: a regular expression whose ``secret`` group (else the whole match) is
    replaced by the marker of kind. (A plain class: it is configuration, never a stored
    record.)"""

    __slots__ = ("hints", "kind", "regex")

    def __init__(self, kind: str, regex: re.Pattern[str], hints: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self.regex = regex
        #: Texts every match contains one of (found far faster than the expression): a text
        #: with none of them is left alone without running the expression. Empty: always run.
        self.hints = hints

    def sub(self, text: str) -> str:
        if self.hints and not any(hint in text for hint in self.hints):
            return text
        marker = MARKER.format(kind=self.kind)
        if "secret" not in self.regex.groupindex:
            return self.regex.sub(marker, text)
        return self.regex.sub(lambda m: _replace_group(m, marker), text)


def _replace_group(match: re.Match[str], marker: str) -> str:
    start, end = match.span("secret")
    whole = match.group(0)
    offset = match.start()
    return whole[: start - offset] + marker + whole[end - offset :]


def _pattern(kind: str, regex: str, *hints: str) -> SecretPattern:
    return SecretPattern(kind, re.compile(regex), hints)


#: The shapes redacted by default.
DEFAULT_PATTERNS: tuple[SecretPattern, ...] = (
    _pattern(
        "private-key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"
        r"(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[\s\S]*\Z)",
        "PRIVATE KEY-----",
    ),
    _pattern(
        "secret-variable",
        r"(?m)^[ \t]*(?:export[ \t]+)?[A-Z0-9_]*"
        rf"(?:{'|'.join(_SECRET_NAMES)})"
        rf"[A-Z0-9_]*[ \t]*=[ \t]*[\"']?(?P<secret>{_NOT_A_MARKER}[^\s\"']+)",
        *_SECRET_NAMES,
    ),
    _pattern(
        "credential",
        # Bearer, bearer, BEARER, Basic, basic, BASIC as a word (literal first, as below).
        r"(?:earer(?<=[Bb]earer)(?<!\w.earer)|EARER(?<=BEARER)(?<!\w.EARER)"
        r"|asic(?<=[Bb]asic)(?<!\w.asic)|ASIC(?<=BASIC)(?<!\w.ASIC))[ \t]+"
        rf"(?P<secret>{_NOT_A_MARKER}[A-Za-z0-9._~+/=-]{{16,}})",
        "earer",
        "EARER",
        "asic",
        "ASIC",
    ),
    # The literal comes first and the look-behind after it: the engine then looks for the
    # literal, instead of trying the look-behind at every position (several times slower).
    _pattern("tether-key", rf"tk_(?<!{_TOKEN_CHARS}tk_){_TOKEN_CHARS}{{16,}}", "tk_"),
    _pattern("api-key", rf"sk-(?<!{_TOKEN_CHARS}sk-){_TOKEN_CHARS}{{16,}}", "sk-"),
    _pattern(
        "aws-key-id",
        r"A[KS]IA(?<![A-Za-z0-9]A[KS]IA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        "AKIA",
        "ASIA",
    ),
)


class Redactor:
    """Replaces secrets in text and JSON-like data; with no patterns, changes nothing."""

    __slots__ = ("patterns",)

    def __init__(self, patterns: Iterable[SecretPattern] = DEFAULT_PATTERNS) -> None:
        self.patterns = tuple(patterns)

    @classmethod
    def configured(cls, *, enabled: bool = True, extra: Iterable[str] = ()) -> Redactor:
        """The default shapes plus extra regular expressions (each redacted whole, or its
        ``secret`` group), or nothing at all when not enabled. UsageError for an expression
        that does not compile or matches the empty text."""
        if not enabled:
            return cls(())
        added: list[SecretPattern] = []
        for n, regex in enumerate(extra, start=1):
            try:
                compiled = re.compile(regex)
            except re.error as exc:
                raise UsageError(f"redaction pattern {regex!r} is not valid: {exc}") from exc
            kind = f"pattern-{n}"
            markers = [MARKER.format(kind=p.kind) for p in (*DEFAULT_PATTERNS, *added)]
            if any(compiled.search(text) for text in ("", *markers, MARKER.format(kind=kind))):
                raise UsageError(
                    f"redaction pattern {regex!r} matches the empty text or a redaction marker"
                )
            added.append(SecretPattern(kind, compiled))
        return cls((*DEFAULT_PATTERNS, *added))

    @property
    def enabled(self) -> bool:
        return bool(self.patterns)

    def text(self, value: str) -> str:
        """value with every secret replaced by its marker."""
        for pattern in self.patterns:
            value = pattern.sub(value)
        return value

    def data(self, value: Any) -> Any:
        """JSON-like value with every string in it (keys too) redacted; other values as they
        are. The same object back when nothing is enabled."""
        if not self.patterns:
            return value
        return self._walk(value)

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self._walk(k): self._walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._walk(item) for item in value]
        if isinstance(value, tuple):
            return tuple(self._walk(item) for item in value)
        return value


#: Redaction as tether does it by default.
DEFAULT_REDACTOR = Redactor()
#: No redaction.
NO_REDACTION = Redactor(())
