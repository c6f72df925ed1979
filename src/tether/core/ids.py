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
#: A byte with its two high bits set to 10 (the variant of an RFC 4122 UUID), by byte.
_VARIANT = bytes(b & 0x3F | 0x80 for b in range(256))


def new_id() -> str:
    """Return a new UUIDv7 as a string; ids made in one process are strictly increasing."""
    entropy = int.from_bytes(os.urandom(10), "big")  # 16 bits for a new counter, 64 random
    with _lock:
        return _next(time.time_ns() // 1_000_000, entropy)


def new_ids(count: int) -> list[str]:
    """count new ids (as new_id makes them, in increasing order), with one clock reading and
    one draw of randomness for them all: in one millisecond, ids differ by their counter, so
    only that and their random bits are written out one by one."""
    global _last_ms, _counter
    if count < 1:
        return []
    entropy = os.urandom(8 * count + 2)
    # The 62 random bits of each id, behind its variant bits (10).
    low = bytearray(entropy[2:])
    low[::8] = low[::8].translate(_VARIANT)
    digits = low.hex()
    ids = []
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            ms, counter = _last_ms, _counter + 1
        else:
            counter = int.from_bytes(entropy[:2], "big") & 0x3FF
        head = _head(ms)
        for i in range(0, 16 * count, 16):
            if counter > 0xFFF:  # the counter ran out: on to the next millisecond
                ms, counter = ms + 1, 0
                head = _head(ms)
            ids.append(f"{head}{counter:03x}-{digits[i : i + 4]}-{digits[i + 4 : i + 16]}")
            counter += 1
        _last_ms, _counter = ms, counter - 1
    return ids


def _head(ms: int) -> str:
    """The text every id of millisecond ms starts with: its time and version digit."""
    digits = f"{ms & 0xFFFF_FFFF_FFFF:012x}"
    return f"{digits[:8]}-{digits[8:]}-7"


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
