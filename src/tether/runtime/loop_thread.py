"""Event loops for synchronous programs: one in a daemon thread (for what must live on one
loop: the worker, streams, connections bound to a loop), and a private one per calling thread
(for backends whose calls finish on any loop: no hop to another thread)."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import weakref
from collections.abc import AsyncGenerator, Coroutine, Iterator
from typing import Any, TypeVar, cast

T = TypeVar("T")


class LoopThread:
    """Runs coroutines on a private event loop from any thread."""

    def __init__(self, name: str = "tether-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        self.loop.run_forever()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run coro on the loop and return its result (its exception is raised here)."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("a synchronous tether call was made from inside tether's loop")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def iterate(self, stream: AsyncGenerator[T, None]) -> Iterator[T]:
        """Iterate an async generator living on the loop from this thread; stopping early
        closes it."""

        async def step() -> tuple[bool, T | None]:
            try:
                return True, await anext(stream)
            except StopAsyncIteration:
                return False, None

        try:
            while True:
                more, item = self.call(step())
                if not more:
                    return
                yield cast(T, item)
        finally:
            if not self.loop.is_closed():
                self.call(stream.aclose())

    def stop(self) -> None:
        """Cancel what is left, stop the loop and join the thread."""
        if self.loop.is_closed():
            return

        async def _cancel_rest() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(_cancel_rest(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class CallerLoops:
    """Runs a coroutine to completion in the calling thread, on a private loop of that thread.

    A hop to a loop thread costs two thread switches per call (~60 µs, more on a busy machine).
    Here the coroutine first runs eagerly, as its task's first step would (with this thread's
    loop as the running loop, in a copy of the caller's context); most calls (statements on a
    free connection) finish without ever waiting, and cost no pass of the loop. One that waits
    (for the connection another thread holds, a timer, a thread) is finished on the loop. Only
    for backends whose calls may be awaited on any loop (``Store.any_loop``), and only from a
    thread with no loop of its own running. A thread's loop is closed when the thread ends (a
    program that calls from a new thread each time, as thread pools made per call do, keeps no
    loops and their file descriptors behind).
    """

    def __init__(self) -> None:
        self._local = threading.local()
        self._loops: weakref.WeakSet[_ThreadLoop] = weakref.WeakSet()
        self._lock = threading.Lock()

    @staticmethod
    def usable() -> bool:
        """True when this thread runs no event loop (a loop cannot run inside another)."""
        return asyncio._get_running_loop() is None

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run coro here and return its result (its exception is raised)."""
        mine: _ThreadLoop | None = getattr(self._local, "loop", None)
        if mine is None or mine.loop.is_closed():
            mine = self._local.loop = _ThreadLoop()
            with self._lock:
                self._loops.add(mine)
        loop = mine.loop
        context = contextvars.copy_context()
        asyncio._set_running_loop(loop)
        try:
            waiting_for = context.run(coro.send, None)
        except StopIteration as done:
            result: T = done.value
            return result
        finally:
            asyncio._set_running_loop(None)
        task: asyncio.Task[T] = loop.create_task(_Started(coro, waiting_for), context=context)
        try:
            return loop.run_until_complete(task)
        except BaseException:
            # Interrupted (KeyboardInterrupt): the task must not resume with a later call.
            task.cancel()
            raise

    def close(self) -> None:
        """Close every loop that is not running a call at this moment."""
        with self._lock:
            loops = [mine.loop for mine in self._loops]
            self._loops = weakref.WeakSet()
        inside_a_loop = asyncio._get_running_loop() is not None
        for loop in loops:
            if not loop.is_running() and not loop.is_closed():
                if not inside_a_loop:  # (a loop cannot run inside another)
                    loop.run_until_complete(loop.shutdown_default_executor())
                loop.close()


class _ThreadLoop:
    """One thread's loop, closed when the thread's locals go (the thread ended)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        weakref.finalize(self, _close_idle, self.loop)


def _close_idle(loop: asyncio.AbstractEventLoop) -> None:
    if not loop.is_running() and not loop.is_closed():
        loop.close()


class _Started(Coroutine[Any, Any, T]):
    """A coroutine that has already taken its first step, which yielded first (a future, or
    None for a bare yield), as a coroutine a task can finish: the task's first step gets
    first, every later step (and a cancellation, even one before the first step) goes to the
    coroutine itself."""

    def __init__(self, coro: Coroutine[Any, Any, T], first: Any) -> None:
        self._coro = coro
        self._first: list[Any] = [first]

    def send(self, value: Any) -> Any:
        if self._first:
            return self._first.pop()
        return self._coro.send(value)

    def throw(self, *exc: Any) -> Any:
        self._first.clear()
        return self._coro.throw(*exc)

    def close(self) -> None:
        self._coro.close()

    def __next__(self) -> Any:
        return self.send(None)

    def __iter__(self) -> _Started[T]:
        return self

    def __await__(self) -> _Started[T]:
        return self
