"""Pages of records written straight as JSON text (render.message_page) are the bytes
render.page writes: same keys, order, values, escaping of non-ASCII and control characters, and
times; over generated messages, and over the real route reading a real database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.responses import Response

from tests.contract.test_conversation import ITEM, JSON_OBJECTS
from tether.api import create_app, render
from tether.api.settings import ApiSettings
from tether.core.message import Message, Role
from tether.core.page import Page
from tether.runtime.service import Service

#: Text with what JSON escapes or passes through: quotes, backslashes, every control
#: character, DEL, non-ASCII, astral characters (no lone surrogates: UTF-8 cannot hold them).
TEXT = st.text(st.characters(blacklist_categories=["Cs"]), max_size=30) | st.sampled_from(
    ['"quoted" \\ back', "".join(map(chr, range(0x20))) + "\x7f", "café 世界 😀 \u2028\u2029"]
)
#: Times in UTC and in other zones (written in UTC), with and without microseconds.
TIMES = st.datetimes(
    min_value=datetime(1, 1, 2),  # noqa: DTZ001 (hypothesis takes naive bounds)
    max_value=datetime(9999, 12, 30),  # noqa: DTZ001
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone.min]),
)


@st.composite
def messages(draw: st.DrawFn) -> list[Message]:
    """Messages as a page holds them: some sharing one time (one batch), some equal times
    that are other objects, removed ones, items, metadata, runs."""
    shared = draw(TIMES)
    out = []
    for seq in range(1, draw(st.integers(0, 6)) + 1):
        at = shared if draw(st.booleans()) else draw(TIMES)
        out.append(
            Message(
                id=draw(TEXT),
                session_id=draw(TEXT),
                seq=draw(st.integers(1, 2**63 - 1)) if seq == 1 else seq,
                role=draw(st.sampled_from(Role)),
                content=draw(TEXT),
                created_at=at,
                run_id=draw(st.none() | TEXT),
                metadata=draw(st.just({}) | JSON_OBJECTS),
                item=draw(st.none() | JSON_OBJECTS | st.just(ITEM)),
                removed_at=draw(st.none() | TIMES),
            )
        )
    return out


def _same(new: Response, old: Response) -> None:
    assert new.body == old.body
    assert new.status_code == old.status_code
    assert new.headers.raw == old.headers.raw


@settings(max_examples=300, deadline=None, database=None)
@given(page=messages(), cursor=st.none() | TEXT)
def test_a_message_page_is_the_bytes_of_render_page(page: list[Message], cursor: str) -> None:
    _same(render.message_page(page, cursor), render.page(page, cursor))


def _fill(http: TestClient) -> str:
    sid: str = http.post("/v1/sessions", json={"title": "pages"}).json()["id"]
    batch = [
        {"role": "user", "content": 'a "quote", a \\ and\ttabs\n\x01\x1f\x7f'},
        {"role": "assistant", "content": "café 世界 😀 \u2028", "metadata": {"k": ["ü", 1.5]}},
        {"item": ITEM},
        {"role": "tool", "content": "", "metadata": {"tool_call_id": "c1", "n": 2**70}},
    ]
    for _ in range(3):
        assert http.post(f"/v1/sessions/{sid}/messages/batch", json={"messages": batch}).is_success
        added = http.post(f"/v1/sessions/{sid}/messages", json={"role": "user", "content": "one"})
        assert added.status_code == 201
    assert http.post(f"/v1/sessions/{sid}/messages/pop").status_code == 200
    return sid


async def _read(
    service: Service, sid: str, query: dict[str, Any], cursor: str | None
) -> Page[Message]:
    """What the route reads for query, through the service."""
    return await service.list_messages(
        sid,
        limit=query.get("limit", 100),
        cursor=cursor,
        newest_first=query.get("order") == "desc",
        before_seq=query.get("before"),
        include_removed=query.get("include_removed", False),
    )


def test_the_messages_route_answers_what_render_page_wrote(tmp_path: Path) -> None:
    app = create_app(ApiSettings(db=str(tmp_path / "t.db"), auth=False, workers=0))
    with TestClient(app, base_url="http://127.0.0.1") as http:
        sid = _fill(http)
        service: Service = app.state.service.for_owner("local")
        queries: list[dict[str, Any]] = [
            {},
            {"limit": 5},
            {"order": "desc", "limit": 4},
            {"order": "desc", "before": 9, "limit": 3},
            {"include_removed": True},
            {"order": "desc", "include_removed": True, "limit": 1000},
        ]
        for query in queries:
            cursor = None
            while True:
                params = {**query, **({} if cursor is None else {"cursor": cursor})}
                answer = http.get(f"/v1/sessions/{sid}/messages", params=params)
                assert http.portal is not None
                found = http.portal.call(_read, service, sid, query, cursor)
                assert found.data, query
                expected = render.page(found.data, found.next_cursor)
                assert answer.status_code == 200
                assert answer.content == expected.body, query
                assert answer.headers["content-type"] == expected.headers["content-type"]
                cursor = found.next_cursor
                if cursor is None:
                    break
