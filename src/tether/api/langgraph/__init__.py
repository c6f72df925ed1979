"""The LangGraph-compatible API: what the official ``langgraph-sdk`` client speaks, served over
tether's sessions (threads), runs, and user memory (the store). See docs/langgraph.md."""

from __future__ import annotations

from fastapi import APIRouter

from tether.api.langgraph import assistants, crons, items, runs, threads, unserved

#: Every route of the LangGraph-compatible API (kept out of the OpenAPI spec of /v1).
routers: tuple[APIRouter, ...] = (
    assistants.router,
    threads.router,
    runs.router,
    crons.router,
    items.router,
    unserved.router,
)
