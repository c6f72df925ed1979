"""A session's project over HTTP: named ``project``; its former name ``context`` still read (with
a Deprecation header) and still written beside it; both names disagreeing is a 422."""

from __future__ import annotations

import httpx
import pytest

import tether
from tests.api.httpkit import Server, new_session
from tether.api import create_app


def test_the_project_is_given_and_returned_as_project(alice: httpx.Client) -> None:
    answer = alice.post("/v1/sessions", json={"project": {"workspace": "./calc"}})
    assert answer.status_code == 201, answer.text
    assert "Deprecation" not in answer.headers
    session = answer.json()
    assert session["project"] == {"workspace": "./calc"}
    assert session["context"] == session["project"]  # the former name, still written

    patched = alice.patch(f"/v1/sessions/{session['id']}", json={"project": {"workspace": "./b"}})
    assert patched.status_code == 200 and "Deprecation" not in patched.headers
    again = alice.get(f"/v1/sessions/{session['id']}").json()
    assert again["project"] == again["context"] == {"workspace": "./b"}
    run = alice.post(f"/v1/sessions/{session['id']}/runs", json={"goal": "look"}).json()
    started = alice.get(f"/v1/runs/{run['id']}/wait", params={"timeout": 30}).json()
    assert started["context"]["project"] == {"workspace": "./b"}  # what the run started from


def test_the_former_name_still_works_with_a_deprecation_header(alice: httpx.Client) -> None:
    answer = alice.post("/v1/sessions", json={"context": {"workspace": "./calc"}})
    assert answer.status_code == 201, answer.text
    assert answer.headers["Deprecation"].startswith("@")
    sid = answer.json()["id"]
    assert answer.json()["project"] == {"workspace": "./calc"}

    patched = alice.patch(f"/v1/sessions/{sid}", json={"context": {"workspace": "./b"}})
    assert patched.status_code == 200 and patched.headers["Deprecation"].startswith("@")
    assert patched.json()["project"] == {"workspace": "./b"}
    cleared = alice.patch(f"/v1/sessions/{sid}", json={"context": None})
    assert cleared.json()["project"] == {} and "Deprecation" in cleared.headers
    keyed = alice.post(
        "/v1/sessions",
        json={"external_key": "proj-old", "if_exists": "return", "context": {"k": 1}},
    )
    assert keyed.status_code == 201 and "Deprecation" in keyed.headers
    assert keyed.json()["project"] == {"k": 1}


def test_both_names_must_agree(alice: httpx.Client) -> None:
    same = alice.post("/v1/sessions", json={"project": {"a": 1}, "context": {"a": 1}})
    assert same.status_code == 201 and same.json()["project"] == {"a": 1}
    assert "Deprecation" in same.headers
    differ = alice.post("/v1/sessions", json={"project": {"a": 1}, "context": {"a": 2}})
    assert differ.status_code == 422
    assert differ.headers["content-type"].startswith("application/problem+json")
    assert "project and its deprecated name context disagree" in differ.json()["detail"]

    sid = new_session(alice, project={"a": 1})["id"]
    refused = alice.patch(f"/v1/sessions/{sid}", json={"project": {"a": 2}, "context": None})
    assert refused.status_code == 422
    assert alice.get(f"/v1/sessions/{sid}").json()["project"] == {"a": 1}  # unchanged


def test_the_spec_marks_the_former_name_deprecated() -> None:
    spec = create_app().openapi()
    schemas = spec["components"]["schemas"]
    for name in ("SessionCreate", "SessionUpdate", "Session"):
        properties = schemas[name]["properties"]
        assert "deprecated" not in properties["project"], name
        assert properties["context"]["deprecated"] is True, name
    patch = spec["paths"]["/v1/sessions/{session_id}"]["patch"]
    assert "Deprecation" in patch["responses"]["200"]["headers"]
    # The assembled context keeps its name, undeprecated.
    assert "deprecated" not in schemas["Run"]["properties"]["context"]
    assert "/v1/sessions/{session_id}/context" in spec["paths"]


def test_the_client_sends_project_and_reads_both_names(server: Server) -> None:
    with tether.connect(server.url, api_key=server.keys["alice"]) as tt:
        s = tt.sessions.create(project={"workspace": "./calc"})
        assert tt.sessions.get(s.id).project == {"workspace": "./calc"}
        with pytest.warns(DeprecationWarning, match="use project=") as caught:
            s = s.update(context={"workspace": "./b"})
        assert caught[0].filename == __file__ and s.project == {"workspace": "./b"}
