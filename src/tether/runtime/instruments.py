"""Instruments: the hooks through which the runtime reports its work as traces and metrics.

The runtime calls them at a few points: storing a new run, each execution of a run, each model
call and tool call it makes, and the runs its reaper finished. This base reports nothing
and costs next to nothing; ``tether.telemetry`` provides the implementations (OpenTelemetry
spans, Prometheus metrics), imported only when they are turned on.

What the runtime learns inside a block (how an execution ended, what a model answered, whether a
tool call failed) it writes on a small record it passes in; the hooks read it as the block exits.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tether.core.run import ErrorInfo, Run

if TYPE_CHECKING:
    from tether.runtime.models.base import ModelResponse

#: How an execution ended besides a run status: its lease was lost (the run was reaped or
#: claimed again, not cancelled), it was handed back to the queue by a worker shutting down, or
#: its end could not be recorded (the reaper will end the run).
LOST = "lost"
RELEASED = "released"
UNRECORDED = "unrecorded"


@dataclass(slots=True)
class Ending:
    """How one execution of a run ended: a run status value (``waiting`` and ``cancelled``
    included) or one of the above, with the error of a run that failed."""

    status: str = UNRECORDED
    error: ErrorInfo | None = None


@dataclass(slots=True)
class ModelCall:
    """One call to a model: its response, once it answered."""

    model: str
    response: ModelResponse | None = None


@dataclass(slots=True)
class ToolInvocation:
    """One call to a tool: the error the tool gave, if it failed."""

    tool: str
    call_id: str
    error: str | None = None


class Instruments:
    """Hooks the runtime calls as it works; these report nothing."""

    def creating_run(self, run: Run) -> AbstractContextManager[str | None]:
        """Around storing a new run: gives the trace context (a W3C ``traceparent``) to store
        with it, or None."""
        return nullcontext(None)

    def execution(self, run: Run, ending: Ending) -> AbstractContextManager[None]:
        """Around one execution of a claimed run, until it ends, waits for a person or is no
        longer this worker's; ending says how, once the block exits."""
        return nullcontext()

    def model_call(self, run: Run, call: ModelCall) -> AbstractContextManager[None]:
        """Around one call to a model (an exception means it failed)."""
        return nullcontext()

    def tool_call(self, run: Run, call: ToolInvocation) -> AbstractContextManager[None]:
        """Around one tool invocation."""
        return nullcontext()

    def runs_reaped(self, runs: Sequence[Run]) -> None:
        """The reaper finished or requeued these runs (as they now are)."""


class Chain(Instruments):
    """Several instruments as one: each hook calls them all, in order."""

    def __init__(self, *parts: Instruments) -> None:
        self.parts = parts

    @contextmanager
    def creating_run(self, run: Run) -> Iterator[str | None]:
        with ExitStack() as stack:
            given = [stack.enter_context(part.creating_run(run)) for part in self.parts]
            yield next((g for g in given if g is not None), None)

    @contextmanager
    def execution(self, run: Run, ending: Ending) -> Iterator[None]:
        with ExitStack() as stack:
            for part in self.parts:
                stack.enter_context(part.execution(run, ending))
            yield

    @contextmanager
    def model_call(self, run: Run, call: ModelCall) -> Iterator[None]:
        with ExitStack() as stack:
            for part in self.parts:
                stack.enter_context(part.model_call(run, call))
            yield

    @contextmanager
    def tool_call(self, run: Run, call: ToolInvocation) -> Iterator[None]:
        with ExitStack() as stack:
            for part in self.parts:
                stack.enter_context(part.tool_call(run, call))
            yield

    def runs_reaped(self, runs: Sequence[Run]) -> None:
        for part in self.parts:
            part.runs_reaped(runs)


_installed: list[Instruments] = []


def install(instruments: Instruments) -> None:
    """Report through instruments from every service and worker that was given none."""
    _installed.append(instruments)


def uninstall(instruments: Instruments) -> None:
    """Stop reporting through instruments installed before (no-op if they were not)."""
    if instruments in _installed:
        _installed.remove(instruments)


def installed() -> Instruments:
    """The instruments installed in this process, as one (a do-nothing one when none are)."""
    if not _installed:
        return _NONE
    if len(_installed) == 1:
        return _installed[0]
    return Chain(*_installed)


_NONE = Instruments()
