"""ConnectionLock: coroutines wait their turn without blocking their loop, in order; a waiter
cancelled before or as its turn comes passes it on; threads and other loops share it."""

from __future__ import annotations

import asyncio
import os
import threading

from tether.store.sqlite.lock import ConnectionLock


async def test_waiters_take_turns_in_order_without_blocking_the_loop() -> None:
    lock = ConnectionLock()
    await lock.acquire()
    order: list[int] = []

    async def user(n: int) -> None:
        await lock.acquire()
        order.append(n)
        lock.release()

    users = [asyncio.create_task(user(n)) for n in range(5)]
    await asyncio.sleep(0)  # the loop goes on while they wait: this line runs at all
    assert order == [] and not any(u.done() for u in users)
    lock.release()
    await asyncio.gather(*users)
    assert order == [0, 1, 2, 3, 4]


async def test_a_cancelled_waiter_passes_its_turn_on() -> None:
    lock = ConnectionLock()
    await lock.acquire()
    first = asyncio.create_task(lock.acquire())
    second = asyncio.create_task(lock.acquire())
    await asyncio.sleep(0)
    first.cancel()  # before its turn
    lock.release()
    await second
    assert first.cancelled()
    third = asyncio.create_task(lock.acquire())
    await asyncio.sleep(0)
    lock.release()  # handed to third, which is cancelled before it runs
    third.cancel()
    await asyncio.gather(third, return_exceptions=True)
    await asyncio.wait_for(lock.acquire(), 5)  # the lock was passed on, not lost
    lock.release()


def test_threads_and_loops_share_it() -> None:
    lock = ConnectionLock()
    inside = 0
    most = 0
    guard = threading.Lock()

    def enter() -> None:
        nonlocal inside, most
        with guard:
            inside += 1
            most = max(most, inside)

    def leave() -> None:
        nonlocal inside
        with guard:
            inside -= 1

    async def coroutine_user() -> None:
        for _ in range(200):
            await lock.acquire()
            enter()
            await asyncio.sleep(0)  # hands the loop (and the GIL) over while holding it
            leave()
            lock.release()

    def thread_user() -> None:
        for _ in range(200):
            with lock.hold():
                enter()
                os.sched_yield()
                leave()

    threads = [threading.Thread(target=asyncio.run, args=(coroutine_user(),)) for _ in range(3)]
    threads += [threading.Thread(target=thread_user) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most == 1


async def test_take_takes_only_a_free_lock_and_never_jumps_the_queue() -> None:
    lock = ConnectionLock()
    assert lock.take()
    assert not lock.take()  # held: no waiting, no place in the queue
    waiter = asyncio.create_task(lock.acquire())
    await asyncio.sleep(0)
    lock.release()  # handed to the waiter, not freed
    assert not lock.take()
    await waiter
    lock.release()
    assert lock.take()
    lock.release()
