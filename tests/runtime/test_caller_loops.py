"""CallerLoops runs a coroutine in the calling thread: eagerly while it does not wait, on the
thread's own loop once it does, with a task's semantics either way (a running loop, its own
copy of the caller's context, cancellation passed on to what it waits for)."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Iterator

import pytest

from tether.runtime.loop_thread import CallerLoops

_mark: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="caller")


@pytest.fixture
def loops() -> Iterator[CallerLoops]:
    caller_loops = CallerLoops()
    yield caller_loops
    caller_loops.close()


async def _answer() -> tuple[str, bool]:
    _mark.set("inside")  # the caller's context must not see this
    return "done", asyncio.get_running_loop().is_closed()


def test_a_call_that_never_waits_runs_with_a_loop_and_its_own_context(loops: CallerLoops) -> None:
    assert loops.call(_answer()) == ("done", False)
    assert _mark.get() == "caller"
    assert loops.usable()  # no loop is left running in this thread


def test_a_call_that_waits_is_finished_on_the_thread_s_loop(loops: CallerLoops) -> None:
    async def waits() -> list[str]:
        seen = [_mark.get()]
        _mark.set("inside")
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[str] = loop.create_future()
        threading.Thread(target=lambda: loop.call_soon_threadsafe(answer.set_result, "x")).start()
        seen.append(await answer)
        await asyncio.sleep(0)  # a bare yield as well
        seen.append(_mark.get())  # the context set before waiting is still the call's
        return seen

    assert loops.call(waits()) == ["caller", "x", "inside"]
    assert _mark.get() == "caller"


def test_an_error_before_or_after_waiting_reaches_the_caller(loops: CallerLoops) -> None:
    async def fails_at_once() -> None:
        raise LookupError("now")

    async def fails_later() -> None:
        await asyncio.sleep(0)
        raise LookupError("later")

    with pytest.raises(LookupError, match="now"):
        loops.call(fails_at_once())
    with pytest.raises(LookupError, match="later"):
        loops.call(fails_later())


def _later(loop: asyncio.AbstractEventLoop, action: Callable[[], None], turns: int) -> None:
    """action after turns passes of loop."""
    if turns == 0:
        action()
    else:
        loop.call_soon(_later, loop, action, turns - 1)


@pytest.mark.parametrize("turns", [1, 3], ids=["before-its-task-starts", "while-it-waits"])
def test_a_cancellation_reaches_the_coroutine(loops: CallerLoops, turns: int) -> None:
    seen: list[str] = []

    async def cancelled_while_waiting() -> str:
        loop = asyncio.get_running_loop()
        forever: asyncio.Future[None] = loop.create_future()
        _later(loop, _cancel_every_task, turns)
        try:
            await forever
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "unreachable"

    with pytest.raises(asyncio.CancelledError):
        loops.call(cancelled_while_waiting())
    assert seen == ["cancelled"]


def _cancel_every_task() -> None:
    for task in asyncio.all_tasks():
        task.cancel()
