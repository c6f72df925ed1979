"""Pages of records written straight as JSON text (render.message_page, render.session_page)
are the bytes render.page writes, and one record (render.record) the bytes of a JSONResponse:
same keys, order, values, escaping of non-ASCII and control characters, and times; over
generated records, and over the real routes reading a real database."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.responses import JSONResponse, Response

from tests.contract.test_conversation import ITEM, JSON_OBJECTS
from tests.support import WORKER, Factory
from tether.api import create_app, render
from tether.api.settings import ApiSettings
from tether.core.clock import ManualClock
from tether.core.message import Message, Role
from tether.core.page import Page
from tether.core.session import Session
from tether.core.status import RunStatus, SessionStatus
from tether.core.step import StepKind
from tether.core.usage import ZERO_USAGE, Usage
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


@settings(max_examples=300, deadline=None, database=None)
@given(page=messages(), status=st.sampled_from([200, 201]), location=st.none() | TEXT)
def test_a_message_record_is_the_bytes_of_a_json_response(
    page: list[Message], status: int, location: str | None
) -> None:
    headers = None if location is None else {"Location": location.encode().hex()}
    for message in page:
        old = JSONResponse(render.data_of(message), status_code=status, headers=headers)
        _same(render.record(message, status, headers), old)


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


#: Times a session's TTL still fits after (expires_at stays within datetime's range).
SESSION_TIMES = st.datetimes(
    min_value=datetime(1, 1, 2),  # noqa: DTZ001 (hypothesis takes naive bounds)
    max_value=datetime(9000, 12, 30),  # noqa: DTZ001
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=-9, minutes=-30)), timezone.max]),
)
COUNTS = st.integers(0, 2**63 - 1)


@st.composite
def sessions(draw: st.DrawFn) -> list[Session]:
    """Sessions as a listing holds them: any status and TTL, times shared between fields (as
    the store decodes them) or merely equal, closed ones, usage, keys, apps, JSON of any kind."""
    out = []
    for _ in range(draw(st.integers(0, 5))):
        created = draw(SESSION_TIMES)
        updated = draw(st.sampled_from([created, created.replace()]) | SESSION_TIMES)
        active = draw(st.sampled_from([created, updated]) | SESSION_TIMES)
        usage = draw(st.just(ZERO_USAGE) | st.builds(Usage, COUNTS, COUNTS, COUNTS))
        out.append(
            Session(
                id=draw(TEXT),
                owner=draw(TEXT),
                title=draw(st.none() | TEXT),
                status=draw(st.sampled_from(SessionStatus)),
                created_at=created,
                updated_at=updated,
                last_activity_at=active,
                ttl_seconds=draw(st.none() | st.integers(1, 10**9)),
                metadata=draw(st.just({}) | JSON_OBJECTS),
                project=draw(st.just({}) | JSON_OBJECTS),
                closed_at=draw(st.none() | TIMES),
                run_count=draw(COUNTS),
                usage=usage,
                external_key=draw(st.none() | TEXT),
                app=draw(st.none() | TEXT),
            )
        )
    return out


@settings(max_examples=300, deadline=None, database=None)
@given(page=sessions(), cursor=st.none() | TEXT)
def test_a_session_page_is_the_bytes_of_render_page(page: list[Session], cursor: str) -> None:
    _same(render.session_page(page, cursor), render.page(page, cursor))


@settings(max_examples=300, deadline=None, database=None)
@given(page=sessions())
def test_a_session_record_is_the_bytes_of_a_json_response(page: list[Session]) -> None:
    for session in page:
        _same(render.record(session), JSONResponse(render.data_of(session)))


@settings(max_examples=200, deadline=None, database=None)
@given(value=JSON_OBJECTS | st.lists(JSON_OBJECTS, max_size=3) | TEXT)
def test_any_other_record_is_the_bytes_of_a_json_response(value: Any) -> None:
    _same(render.record(value, 201), JSONResponse(render.data_of(value), status_code=201))


async def _use(service: Service, make: Factory, sid: str, tokens: int) -> None:
    """A completed run of sid that spent tokens (the session's usage), and a deleted one."""
    for spent in (tokens, 1):
        run = await make.held(sid)
        await service.store.record_step(
            run_id=run.id,
            worker_id=WORKER,
            position=1,
            kind=StepKind.MODEL_CALL,
            name="model",
            input={},
            now=make.clock.now(),
            usage=Usage(spent, spent // 3, 1),
        )
        await service.store.finish_run(
            run.id, worker_id=WORKER, status=RunStatus.COMPLETED, now=make.clock.now()
        )
    await service.store.delete_run(run.id, owner=None)


def _fill_sessions(http: TestClient, service: Service, clock: ManualClock) -> None:
    """Sessions of every shape: titled or not, escaped text, JSON of any kind, keys, apps,
    no TTL, closed, expired as of now (not yet swept), changed, active since, with usage."""
    made = []
    bodies: list[dict[str, Any]] = [
        {"title": 'a "quote", a \\ and\ttabs\n\x01\x1f\x7f', "metadata": {"k": "v"}},
        {"title": "café 世界 😀 \u2028", "metadata": {"k": ["ü", 1.5, 2**70, None, True]}},
        {},
        {"project": {"workspace": "./calc", "n": {"deep": [{}]}}, "ttl_seconds": None},
        {"external_key": "key-1 ü", "app": "a1", "ttl_seconds": 60},
        {"external_key": "key-2", "app": "a1", "metadata": {"k": "v", "x": {}}},
        {"title": "short", "ttl_seconds": 60},
    ]
    for n in range(3):
        for body in bodies:
            given = {**body, **({"title": f"#{n}"} if n else {})}
            if "external_key" in body:
                given["external_key"] = f"{body['external_key']} #{n}"
            answer = http.post("/v1/sessions", json=given)
            assert answer.status_code == 201, answer.text
            made.append(answer.json()["id"])
        clock.advance(0.25 if n else 1.5)
    assert http.post(f"/v1/sessions/{made[1]}/close").status_code == 200
    assert http.patch(f"/v1/sessions/{made[2]}", json={"title": "changed"}).status_code == 200
    added = http.post(f"/v1/sessions/{made[6]}/messages", json={"role": "user", "content": "x"})
    assert added.status_code == 201
    assert http.patch(f"/v1/sessions/{made[6]}", json={"title": "both"}).status_code == 200
    clock.advance(59.6)  # a TTL of 60 s has run out for the first two rounds only
    assert http.portal is not None
    http.portal.call(_use, service, Factory(service.store, clock, owner="local"), made[3], 120)


async def _list(service: Service, query: dict[str, Any], cursor: str | None) -> Page[Session]:
    """What the route reads for query, through the service."""
    metadata = query.get("metadata")
    return await service.list_sessions(
        status=query.get("status"),
        query=query.get("query"),
        metadata=None if metadata is None else json.loads(metadata),
        app=query.get("app"),
        key_prefix=query.get("key_prefix"),
        limit=query.get("limit", 50),
        cursor=cursor,
    )


def test_the_sessions_route_answers_what_render_page_wrote(tmp_path: Path) -> None:
    clock = ManualClock()
    app = create_app(ApiSettings(db=str(tmp_path / "t.db"), auth=False, workers=0), clock=clock)
    with TestClient(app, base_url="http://127.0.0.1") as http:
        service: Service = app.state.service.for_owner("local")
        _fill_sessions(http, service, clock)
        queries: list[dict[str, Any]] = [
            {},
            {"limit": 4},
            {"status": "active", "limit": 5},
            {"status": "expired"},
            {"status": "closed", "limit": 1},
            {"query": "ü"},
            {"metadata": '{"k": "v"}', "limit": 2},
            {"app": "a1"},
            {"key_prefix": "key-", "limit": 1},
            {"limit": 1000},
        ]
        seen: set[str] = set()
        for query in queries:
            cursor = None
            while True:
                params = {**query, **({} if cursor is None else {"cursor": cursor})}
                answer = http.get("/v1/sessions", params=params)
                assert http.portal is not None
                found = http.portal.call(_list, service, query, cursor)
                assert found.data, query
                seen.update(s.status.value for s in found.data)
                expected = render.page(found.data, found.next_cursor)
                assert answer.status_code == 200
                assert answer.content == expected.body, query
                assert answer.headers["content-type"] == expected.headers["content-type"]
                cursor = found.next_cursor
                if cursor is None:
                    break
        assert seen == {"active", "closed", "expired"}
