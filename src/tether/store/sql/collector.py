"""Bulk reads with Python's cyclic garbage collector paused.

A read of thousands of records allocates thousands of tracked objects (a row's tuple, a
record), and every 700 of them start a collection that walks the young ones again, and now
and then older ones: 7 % of reading 1,000 messages, 13 % of 10,000, garbage none of it. So
``ReadTx.records`` fetches and decodes a statement's rows with the collector off, as
``gc.disable`` does, for that call only: once the statement runs (never while it waits for a
busy file), a few milliseconds for a page of 1,000 records (the library's largest).

The collector's switch is the process's, not the thread's: while one read holds it off,
allocations in other threads start no collection either (they start one as soon as it is back
on: nothing is lost, a collection is only delayed). The collector is switched back on only by
the read that switched it off, so a program that keeps it off keeps it off; a program that
switches it off from another thread *during* such a read finds it on again after the read,
and code in another thread that saves the switch during a read and restores it afterwards
(``timeit``'s pattern) restores it off: a program that toggles the collector from threads
while tether reads should not rely on finding it as it left it.
"""

from __future__ import annotations

from collections.abc import Callable
from gc import disable, enable, isenabled
from typing import TypeVar

T = TypeVar("T")


def uncollected(call: Callable[[], T]) -> T:
    """call(), with the cyclic garbage collector off while it runs (unless it is off already,
    then left off): on again afterwards, whether call returned or raised."""
    if not isenabled():
        return call()
    disable()
    try:
        return call()
    finally:
        enable()
