"""UUIDv7 identifiers: time-ordered, so newer ids sort after older ones."""

from __future__ import annotations

import os
import threading
import time
import uuid
from datetime import UTC, datetime

_lock = threading.Lock()
_last_ms = 0
_counter = 0


def new_id() -> str:
    """Return a new UUIDv7 as a string; ids made in one process are strictly increasing."""
    entropy = int.from_bytes(os.urandom(10), "big")  # 16 bits for a new counter, 64 random
    with _lock:
        return _next(time.time_ns() // 1_000_000, entropy)


def new_ids(count: int) -> list[str]:
    """count new ids (as new_id makes them, in increasing order), with one clock reading and
    one draw of randomness for them all."""
    entropy = os.urandom(10 * count)
    with _lock:
        ms = time.time_ns() // 1_000_000
        return [
            _next(ms, int.from_bytes(entropy[i : i + 10], "big")) for i in range(0, 10 * count, 10)
        ]


def _next(ms: int, entropy: int) -> str:
    """The id following the last one made, at ms (the caller holds _lock)."""
    global _last_ms, _counter
    if ms <= _last_ms:
        # Same (or earlier) millisecond: keep the timestamp, bump the 12-bit counter.
        ms = _last_ms
        _counter += 1
        if _counter > 0xFFF:
            ms += 1
            _counter = 0
    else:
        _counter = (entropy >> 64) & 0x3FF
    _last_ms = ms
    value = (ms & 0xFFFF_FFFF_FFFF) << 80
    value |= 0x7 << 76
    value |= _counter << 64
    value |= 0b10 << 62
    value |= entropy & 0x3FFF_FFFF_FFFF_FFFF
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def is_id(text: str) -> bool:
    """True when text is a UUID in canonical form (lower-case, 8-4-4-4-12): the one spelling
    of it, so that one UUID can never name two records."""
    try:
        return str(uuid.UUID(text)) == text
    except (ValueError, AttributeError, TypeError):
        return False


def made_at(text: str) -> datetime | None:
    """When a UUIDv7 id was made (its millisecond timestamp), or None if text is not one."""
    if not is_id(text) or text[14] != "7":
        return None
    return datetime.fromtimestamp(int(text[:8] + text[9:13], 16) / 1000, UTC)
