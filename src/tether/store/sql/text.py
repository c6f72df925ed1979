"""Text both backends can store: PostgreSQL refuses NUL (U+0000) in text and JSON, so tether
refuses it everywhere: a database it writes on SQLite can always be copied to PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from tether.core.errors import UsageError

NUL_REFUSED = "text cannot contain NUL (U+0000) characters"
#: A JSON text's escape of NUL: ``\u0000`` after an even number of backslashes.
_JSON_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def not_unicode(exc: UnicodeEncodeError) -> UsageError:
    """The error for text that cannot be encoded as UTF-8 (a lone surrogate)."""
    return UsageError(f"text is not valid Unicode ({exc.reason})")


def check_params(params: Mapping[str, Any]) -> None:
    """Raise UsageError when a text parameter holds a NUL character (check_values, inlined:
    every statement calls it)."""
    for value in params.values():
        if type(value) is str and "\x00" in value:
            raise UsageError(NUL_REFUSED)


def check_values(values: Iterable[Any]) -> None:
    """Raise UsageError when a text value holds a NUL character."""
    for value in values:
        if type(value) is str and "\x00" in value:
            raise UsageError(NUL_REFUSED)


def check_json(text: str) -> str:
    """text (a JSON document), or UsageError when it encodes a NUL character."""
    if "\\u0000" in text and _JSON_NUL.search(text):
        raise UsageError(NUL_REFUSED)
    return text
