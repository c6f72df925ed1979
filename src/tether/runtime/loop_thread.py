"""An event loop in a daemon thread, so synchronous programs can use the async runtime."""

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
