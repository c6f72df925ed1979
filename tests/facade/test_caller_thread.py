"""On SQLite the sync facade runs each call in the calling thread, not on its loop thread: a busy
loop thread (the embedded worker) does not hold calls up, threads call at once safely, and a
program that runs its own event loop still gets answers (through the loop thread)."""

from __future__ import annotations

import asyncio
import gc
import threading
from pathlib import Path

import tether
from tether.core.status import RunStatus


def test_a_call_does_not_wait_for_a_busy_loop_thread(tmp_path: Path) -> None:
    with tether.open(tmp_path / "t.db") as tt:
        s = tt.sessions.create(title="busy worker loop")
        # The worker has started and gone idle (no transaction of its own left open).
        warm = s.runs.create("first", agent="echo", input={"text": "hi"}).wait(30)
        assert warm.status is RunStatus.COMPLETED
        before = [m.content for m in s.messages]
        release = threading.Event()
        blocked = threading.Event()

        def hold() -> None:  # occupies the loop thread the embedded worker runs on
            blocked.set()
            release.wait(60)

        tt._loop.loop.call_soon_threadsafe(hold)
        assert blocked.wait(10)
        seqs: list[int] = []
        caller = threading.Thread(
            target=lambda: seqs.append(s.messages.add("user", "while the loop is busy").seq)
        )
        try:
            caller.start()
            caller.join(30)  # a hop to the loop thread would wait here until it is released
            assert not caller.is_alive(), "the call waited for the busy loop thread"
        finally:
            release.set()
            caller.join(30)
        assert seqs == [len(before) + 1]
        assert [m.content for m in s.messages] == [*before, "while the loop is busy"]
        # The worker (on the loop thread) and a wait in this thread still meet.
        run = s.runs.create("after", agent="echo", input={"text": "hi"}).wait(30)
        assert run.status is RunStatus.COMPLETED


def test_threads_append_at_once_and_every_message_gets_its_own_seq(tmp_path: Path) -> None:
    with tether.open(tmp_path / "t.db", worker=False) as tt:
        s = tt.sessions.create(title="many writers")
        errors: list[BaseException] = []

        def write(n: int) -> None:
            try:
                for i in range(25):
                    s.messages.add("user", f"{n}-{i}")
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not errors
        messages = s.messages.list()
        assert [m.seq for m in messages] == list(range(1, 101))
        assert sorted(m.content for m in messages) == sorted(
            f"{n}-{i}" for n in range(4) for i in range(25)
        )
        assert len(s.events()) == 101  # session.created + one message.added each


def test_a_program_running_its_own_event_loop_can_still_call(tmp_path: Path) -> None:
    with tether.open(tmp_path / "t.db", worker=False) as tt:

        async def inside_a_loop() -> int:
            s = tt.sessions.create(title="called from a coroutine")
            return s.messages.add("user", "hi").seq

        assert asyncio.run(inside_a_loop()) == 1


def test_threads_that_end_leave_no_loop_or_descriptor_behind(tmp_path: Path) -> None:
    # A pool made per call (as graph frameworks do) calls from a new thread every time.
    fds = Path("/proc/self/fd")
    with tether.open(tmp_path / "t.db", worker=False) as tt:
        s = tt.sessions.create(title="short-lived threads")

        def call_from_a_new_thread(i: int) -> None:
            caller = threading.Thread(target=lambda: s.messages.add("user", f"m{i}"))
            caller.start()
            caller.join(30)
            assert not caller.is_alive()

        call_from_a_new_thread(0)
        gc.collect()
        before = len(list(fds.iterdir())) if fds.is_dir() else 0
        for i in range(1, 60):
            call_from_a_new_thread(i)
        gc.collect()
        assert [m.content for m in s.messages] == [f"m{i}" for i in range(60)]
        assert len(tt._here._loops) <= 1  # type: ignore[union-attr]
        if fds.is_dir():  # each loop held three descriptors: 180 if they were kept
            assert len(list(fds.iterdir())) <= before + 5
