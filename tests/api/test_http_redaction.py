"""A tool reads an env file holding a token: the token appears nowhere a client can look —
the run, its steps, the tool history, the event log, the SSE stream, the UI's pages — unless
the operator turned redaction off."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.api.httpkit import Server, new_run, new_session, read_sse, start_server, wait_run

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
TOKEN = "tk_" + "Q7w" * 14 + "e"
AWS = "AKIA" + "Z3Y4" * 4
OLD = "tk_" + "r8T" * 14
ENV = (
    f"HOME=/home/me\nexport TETHER_API_KEY={TOKEN}\n# the old key: {OLD}\n"
    f"AWS_ID={AWS}\nSITE=example\n"
)


def _serve(folder: Path, *args: str, **env: str) -> Server:
    path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)
    return start_server(folder, "--agents", "secret_agents", *args, env={"PYTHONPATH": path, **env})


@pytest.fixture(scope="module")
def redacting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Redaction as by default, plus a pattern of the operator's own (the SITE variable)."""
    server = _serve(
        tmp_path_factory.mktemp("redacting"), "--redact-pattern", r"SITE=(?P<secret>\w+)"
    )
    yield server
    server.stop()


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = _serve(tmp_path_factory.mktemp("plain"), TETHER_REDACT="0")
    yield server
    server.stop()


def _everything_shown(server: Server, env_file: Path) -> str:
    """Run the env reader, then read everything a client can about it, as one text."""
    with server.client("alice") as api:
        sid = new_session(api)["id"]
        run = new_run(api, sid, agent="env_reader", input={"path": str(env_file)})
        assert wait_run(api, run["id"])["status"] == "completed"
        shown = [api.get(f"/v1/runs/{run['id']}").text]
        for path in (
            f"/v1/runs/{run['id']}/steps",
            f"/v1/runs/{run['id']}/tool-calls",
            f"/v1/sessions/{sid}/tool-calls",
            f"/v1/sessions/{sid}/messages",
        ):
            answer = api.get(path)
            assert answer.status_code == 200, answer.text
            shown.append(answer.text)
        for stream in (f"/v1/runs/{run['id']}/events", f"/v1/sessions/{sid}/events"):
            with api.stream("GET", stream) as response:
                frames, _ = read_sse(response, until=lambda f: f.event == "run.completed")
            assert frames and frames[-1].event == "run.completed"
            shown.extend(str(f.data) for f in frames)
        shown.append(api.get(f"/v1/sessions/{sid}/events", params={"stream": "false"}).text)
    with httpx.Client(base_url=server.url, timeout=30) as browser:
        logged_in = browser.post("/ui/login", data={"key": server.keys["alice"]})
        assert logged_in.status_code == 303, logged_in.text
        # The cookie is Secure (browsers keep those on loopback over http; httpx does not).
        cookie = {"Cookie": logged_in.headers["set-cookie"].split(";")[0]}
        for page in (f"/ui/runs/{run['id']}", f"/ui/sessions/{sid}"):
            answer = browser.get(page, headers=cookie)
            assert answer.status_code == 200, answer.text
            assert "/home/me" in answer.text  # the page shows the tool's output
            shown.append(answer.text)
    return "\n".join(shown)


def test_a_token_read_by_a_tool_is_shown_nowhere(redacting: Server, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(ENV)
    shown = _everything_shown(redacting, tmp_path / ".env")
    for secret in (TOKEN, OLD, AWS, "SITE=example"):
        assert secret not in shown
    for marker in ("secret-variable", "aws-key-id", "tether-key", "pattern-1"):
        assert f"[REDACTED:{marker}]" in shown
    assert any("secrets redacted" in line for line in redacting.log)


def test_with_redaction_off_the_token_is_kept(plain: Server, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(ENV)
    shown = _everything_shown(plain, tmp_path / ".env")
    assert TOKEN in shown and OLD in shown and AWS in shown
    assert "[REDACTED" not in shown
    assert any("no redaction" in line for line in plain.log)
