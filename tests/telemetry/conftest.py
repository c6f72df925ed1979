"""Fixtures of the telemetry tests: spans kept in memory, and an app served in-process."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import httpx
import pytest
from fastapi import FastAPI
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tether import telemetry


class Spans:
    """The spans tether ended since tracing was turned on, as the SDK exported them."""

    def __init__(self, exporter: InMemorySpanExporter, provider: TracerProvider) -> None:
        self.exporter = exporter
        self.provider = provider

    def all(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.all() if s.name == name]


@pytest.fixture
def spans() -> Iterator[Spans]:
    """Tracing on, through an SDK provider whose spans stay in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.enable_tracing(provider)
    try:
        yield Spans(exporter, provider)
    finally:
        telemetry.disable_tracing()


@asynccontextmanager
async def in_process(
    app: FastAPI, *, client: tuple[str, int] = ("127.0.0.1", 50000)
) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client talking to app on this event loop (its lifespan running: store, worker),
    as a client at the given address."""
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, client=client)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            yield http
