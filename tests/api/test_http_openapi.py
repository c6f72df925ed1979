"""Property-based testing of every route in the OpenAPI spec with schemathesis, against the live
server: valid and invalid inputs alike, no response is a 5xx, every answer conforms to the spec
(its status, media type, headers and body are declared there), and every error is a problem with
a stable code."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api.httpkit import Server, new_run, new_session, start_server, wait_run
from tether.api import create_app
from tether.api.errors import PROBLEM_JSON

#: Every operation of the spec, read from the app itself (no server needed to collect).
OPERATIONS = [
    (method.upper(), path)
    for path, item in create_app().openapi()["paths"].items()
    for method in item
]
EXAMPLES = 8
#: What every answer is checked for.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server of its own: fuzzing closes, deletes and fills sessions."""
    running = start_server(tmp_path_factory.mktemp("fuzz"), owners=("alice",))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def api_schema(fuzzed: Server) -> Any:
    return schemathesis.openapi.from_url(f"{fuzzed.url}/openapi.json")


@pytest.fixture
def known(fuzzed: Server) -> dict[str, str]:
    """Ids of real objects, so generated requests reach past the 404s."""
    with fuzzed.client("alice") as client:
        sid = new_session(client, title="fuzz")["id"]
        run = wait_run(client, new_run(client, sid, input={"steps": 1})["id"])
        assert client.put(f"/v1/sessions/{sid}/memory/k", json={"value": 1}).status_code == 200
    return {"session_id": sid, "run_id": run["id"], "key": "k"}


def _check(fuzzed: Server, case: Any, auth: dict[str, str]) -> None:
    if case.path.endswith("/events"):
        # An SSE stream may stay open: look at the status and headers, then hang up.
        with httpx.Client(base_url=fuzzed.url, timeout=10) as client:
            request = client.build_request(
                case.method, case.formatted_path, params=case.query, headers={**auth}
            )
            response = client.send(request, stream=True)
            try:
                status, content_type = response.status_code, response.headers["content-type"]
            finally:
                response.close()
        assert (
            status in case.operation.definition.raw["responses"]
            or str(status) in (case.operation.definition.raw["responses"])
        ), status
    else:
        answer = case.call(headers=auth, timeout=30)
        case.validate_response(answer, checks=CHECKS)
        status, content_type = answer.status_code, answer.headers.get("content-type", [""])[0]
        if status >= 400:
            assert isinstance(answer.json()["code"], str), answer.text
    assert status < 500, f"{status}: {case.method} {case.formatted_path} {case.query} {case.body!r}"
    if status >= 400:
        assert content_type == PROBLEM_JSON, (status, content_type)


@pytest.mark.slow
@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_no_input_produces_a_server_error(
    method: str, path: str, fuzzed: Server, api_schema: Any, known: dict[str, str]
) -> None:
    operation = api_schema[path][method]
    auth = {"Authorization": f"Bearer {fuzzed.keys['alice']}"}
    wanted = {p: known[p] for p in ("session_id", "run_id", "key") if "{" + p in path}
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        for path_parameters in ({}, wanted) if wanted else ({},):
            strategy = operation.as_strategy(
                generation_mode=mode, path_parameters=path_parameters or None
            )

            @given(case=strategy)
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def check(case: Any) -> None:
                _check(fuzzed, case, auth)

            try:
                check()
            except Unsatisfiable:
                # Nothing to get wrong in an operation without inputs.
                assert mode is GenerationMode.NEGATIVE
