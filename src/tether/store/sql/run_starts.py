"""What a claimed run starts from, for the SQL stores: every read in one batch (one round trip
on PostgreSQL)."""

from __future__ import annotations

from typing import Any

from tether.core.run import Run
from tether.store.run_start import ContextSources, RunStart, SourceLimits
from tether.store.sql.common import SqlBase
from tether.store.sql.rows import (
    MAX_SEQ,
    NAMESPACE_SEP,
    conversation_from_rows,
    memory_by_scope,
    run_summary_from_row,
    session_from_row,
    step_from_row,
)


class RunStartsPart(SqlBase):
    """Store.run_start."""

    async def run_start(
        self, run: Run, *, sources: SourceLimits | None = None, memory_limit: int = 1000
    ) -> RunStart | None:
        session_id = run.session_id
        calls: list[tuple[str, dict[str, Any]]] = [
            ("get_session", {"id": session_id, "owner": None}),
            (
                "memory_of_run_start",
                {
                    "run_id": run.id,
                    "session_id": session_id,
                    "owner": run.owner,
                    "sep": NAMESPACE_SEP,
                    "limit": memory_limit,
                },
            ),
            ("steps_of_run", {"run_id": run.id}),
        ]
        if sources is not None:
            calls += _source_reads(run, sources)
        async with self._db.read() as tx:
            found = await tx.batch(calls)
        if not found[0]:
            return None
        load = self._db.load_json
        session = session_from_row(found[0][0], load)
        memory = memory_by_scope(found[1], load, app=session.app is not None)
        steps = [step_from_row(row, load) for row in found[2]]
        if sources is None:
            return RunStart(session, memory, steps)
        runs, calls_, messages = found[3:]
        return RunStart(
            session,
            memory,
            steps,
            ContextSources(
                runs=[run_summary_from_row(row, load) for row in runs],
                tool_calls=[step_from_row(row, load) for row in calls_],
                messages=conversation_from_rows(run.session_id, messages),
            ),
        )


def _source_reads(run: Run, limits: SourceLimits) -> list[tuple[str, dict[str, Any]]]:
    """The reads of a context's sources, as list_runs (summaries only), list_tool_calls and
    list_messages make them (newest first)."""
    session_id = run.session_id
    return [
        (
            "run_summaries_backward",
            {"session_id": session_id, "before_seq": run.seq, "limit": limits.runs},
        ),
        (
            "tool_calls_of_session_backward",
            {
                "session_id": session_id,
                "run_id": None,
                "status": None,
                "since": None,
                "until": None,
                "after_id": "",
                "before_id": "~",
                "limit": limits.tool_calls,
            },
        ),
        (
            "messages_backward",
            {
                "session_id": session_id,
                "owner": None,
                "after_seq": 0,
                "before_seq": MAX_SEQ,
                "removed": False,
                "limit": limits.messages,
            },
        ),
    ]
