"""Event loops for synchronous programs: one in a daemon thread (for what must live on one
loop: the worker, streams, connections bound to a loop), and a private one per calling thread
(for backends whose calls finish on any loop: no hop to another thread)."""

from __future__ import annotations

import asyncio
import threading
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

    A hop to a loop thread costs two thread switches per call (~60 µs, more on a busy machine);
    this costs a task on an idle loop (~15 µs). Only for backends whose calls may be awaited on
    any loop (``Store.any_loop``), and only from a thread with no loop of its own running.
    """

    def __init__(self) -> None:
        self._local = threading.local()
        self._loops: list[asyncio.AbstractEventLoop] = []
        self._lock = threading.Lock()

    @staticmethod
    def usable() -> bool:
        """True when this thread runs no event loop (a loop cannot run inside another)."""
        return asyncio._get_running_loop() is None

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run coro here and return its result (its exception is raised)."""
        loop: asyncio.AbstractEventLoop | None = getattr(self._local, "loop", None)
        if loop is None or loop.is_closed():
            loop = asyncio.new_event_loop()
            self._local.loop = loop
            with self._lock:
                self._loops.append(loop)
        task = loop.create_task(coro)
        try:
            return loop.run_until_complete(task)
        except BaseException:
            # Interrupted (KeyboardInterrupt): the task must not resume with a later call.
            task.cancel()
            raise

    def close(self) -> None:
        """Close every loop that is not running a call at this moment."""
        with self._lock:
            loops, self._loops = self._loops, []
        inside_a_loop = asyncio._get_running_loop() is not None
        for loop in loops:
            if not loop.is_running() and not loop.is_closed():
                if not inside_a_loop:  # (a loop cannot run inside another)
                    loop.run_until_complete(loop.shutdown_default_executor())
                loop.close()
