"""/ui/assistants: the owner's assistants with their agent and chosen version (never another
owner's), and the registered agents."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.serving import cli
from tests.ui.uikit import Server, created, log_in, start_server

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    db = tmp_path_factory.mktemp("assistants") / "tether.db"
    assert cli("db", "migrate", "--db", db).returncode == 0
    running = start_server(db, owners=("alice", "bob"))
    yield running
    running.stop()


def test_the_assistants_page_lists_the_owners_assistants(page: Page, server: Server) -> None:
    with server.api("alice") as alice, server.api("bob") as bob:
        mine = created(alice.post("/v1/assistants", json={"graph_id": "echo", "name": "greeter"}))
        alice.patch(f"/v1/assistants/{mine['id']}", json={"description": "says hello"})
        created(bob.post("/v1/assistants", json={"graph_id": "echo", "name": "bobs own"}))
    log_in(page, server, "alice")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Assistants").click()
    expect(page.get_by_role("heading", name="Assistants", exact=True)).to_be_visible()
    row = page.locator(f"#assistants [data-assistant-id='{mine['id']}']")
    expect(row).to_contain_text("greeter")
    expect(row).to_contain_text("says hello")
    expect(row.locator("td").nth(1)).to_have_text("echo")
    expect(row.locator("td.num")).to_have_text("2")
    expect(page.locator("#assistants tbody tr")).to_have_count(1)  # not bob's
    expect(page.locator("#agents")).to_contain_text("coder")
