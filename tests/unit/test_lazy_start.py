"""What a process loads to read, as a fresh interpreter's sys.modules shows (no timing here:
bench/cli.py times it): a read, by the `tether` command or the library, loads none of the run
machinery (the worker, the executor, agents' tools, the built-in agents' code), and the
command's start-up (--help, --version) none of the runtime or the store."""

from __future__ import annotations

import asyncio
import inspect
import json

import pytest

import tether
from tests.unit.test_light_import import printed_by
from tether.runtime.builtin import AGENTS
from tether.runtime.builtin.coder.policy import OfflineCoderModel
from tether.runtime.models.catalog import model_catalog

#: What only running an agent needs (each, and its submodules).
RUN_MACHINERY = (
    "tether.runtime.executor",
    "tether.runtime.worker",
    "tether.runtime.tools",
    "tether.runtime.run_context",
    "tether.runtime.model_agent",
    "tether.runtime.models.base",
    "tether.runtime.builtin.coder.policy",
    "tether.runtime.builtin.echo",
    "tether.runtime.builtin.coder.agent",
    "tether.runtime.builtin.coder.workspace",
)
#: What the other commands load (their modules and what only they use) and rich's emoji table,
#: which a read prints no emoji code from.
OTHER_COMMANDS = (
    "tether.cli.serve",
    "tether.cli.tail",
    "tether.cli.keys",
    "tether.cli.schedules",
    "tether.cli.retention",
    "tether.api",
    "tether.core.hosts",
    "rich._emoji_codes",
)
#: Records of the store's other operations (graphs' checkpoints, the overview's statistics,
#: webhooks, API keys, assistants): loaded where a row becomes one.
OTHER_RECORDS = (
    "tether.store.checkpoint",
    "tether.core.stats",
    "tether.core.webhook",
    "tether.runtime.webhooks",
    "tether.core.api_key",
    "tether.core.assistant",
)
#: What the command's start-up needs none of.
RUNTIME_AND_STORE = (
    "asyncio",
    "sqlite3",
    "tether.runtime.facade",
    "tether.runtime.service",
    "tether.store.base",
    "tether.store.sqlite",
)

#: Runs the `tether` command with the arguments in ARGS in this interpreter, then prints its
#: exit code and the modules loaded (the command's own output comes first).
COMMAND = """
import json, sys
sys.argv = ["tether", *json.loads(ARGS)]
from tether.cli.launch import main
try:
    main()
except SystemExit as exc:
    code = exc.code
print()
print(json.dumps([code, sorted(sys.modules)]))
"""


def among(loaded: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in loaded if any(m == n or m.startswith(n + ".") for n in names)]


def command(*args: str) -> tuple[int, list[str]]:
    code, loaded = printed_by(COMMAND.replace("ARGS", repr(json.dumps(args))))
    return code, loaded


@pytest.fixture(scope="module")
def conversation(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    db = str(tmp_path_factory.mktemp("lazy") / "t.db")
    with tether.open(db, worker=False) as tt:
        session = tt.sessions.create(title="reads")
        session.messages.add("user", "hello there")
    return db, session.id


def test_a_read_by_the_command_loads_no_run_machinery(conversation: tuple[str, str]) -> None:
    db, sid = conversation
    code, loaded = command("sessions", "messages", sid, "--tail", "5", "--db", db)
    assert code in (0, None)
    assert "tether.store.sqlite.store" in loaded  # it did read
    assert among(loaded, RUN_MACHINERY) == []
    assert among(loaded, ("httpx", "tether.client", "tether.telemetry")) == []


def test_a_read_by_the_command_loads_no_other_command(conversation: tuple[str, str]) -> None:
    db, sid = conversation
    code, loaded = command("sessions", "messages", sid, "--tail", "5", "--db", db)
    assert code in (0, None)
    assert "tether.cli.render" in loaded  # it did print its table
    assert among(loaded, (*OTHER_COMMANDS, *OTHER_RECORDS)) == []
    _, whole = command("sessions", "--help")  # the group's help loads its commands' modules
    assert "tether.cli.retention" in whole and "tether.cli.serve" not in whole


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["sessions", "--help"]])
def test_the_command_starts_without_the_runtime_or_the_store(args: list[str]) -> None:
    code, loaded = command(*args)
    assert code in (0, None)
    assert "tether.cli.main" in loaded
    assert among(loaded, RUNTIME_AND_STORE + RUN_MACHINERY) == []


def test_a_read_by_the_library_loads_no_run_machinery_but_a_worker_does(
    conversation: tuple[str, str],
) -> None:
    db, sid = conversation
    read = (
        "import json, sys, tether\n"
        f"with tether.open({db!r}, worker=False) as tt:\n"
        f"    texts = [m.content for m in tt.sessions.get({sid!r}).messages.tail(5)]\n"
        "print(json.dumps([texts, sorted(sys.modules)]))"
    )
    texts, loaded = printed_by(read)
    assert texts == ["hello there"]
    assert among(loaded, (*RUN_MACHINERY, *OTHER_RECORDS, "pydantic")) == []
    _, with_worker = printed_by(read.replace("worker=False", "worker=True"))
    assert "tether.runtime.worker" in with_worker and "tether.runtime.executor" in with_worker


def test_the_built_in_agents_are_described_as_their_code_says() -> None:
    from tether.runtime.builtin.coder.agent import coder
    from tether.runtime.builtin.echo import echo

    for name, real in (("echo", echo), ("coder", coder)):
        doc = inspect.getdoc(real) or ""
        assert AGENTS[name].__doc__ == doc.split("\n")[0]
        assert AGENTS[name].__name__ == real.__name__


def test_the_coder_package_names_load_on_first_use() -> None:
    from tether.runtime.builtin import coder as package
    from tether.runtime.builtin.coder.policy import OfflineCoderModel

    assert package.OfflineCoderModel is OfflineCoderModel
    assert set(package.__all__) == {"OfflineCoderModel", "Workspace", "coder"}
    assert all(getattr(package, name) is not None for name in package.__all__)
    with pytest.raises(AttributeError):
        package.nothing  # noqa: B018


def test_the_catalogs_offline_model_answers_as_the_policy_does() -> None:
    offline = model_catalog({}).models["offline"]
    messages = [{"role": "user", "content": "Analyse the failing tests"}]
    tools = [{"name": "run_command", "description": "", "parameters": {}}]
    ours = asyncio.run(offline.complete(messages, tools))
    policy = OfflineCoderModel()
    assert offline.name == policy.name
    assert ours == asyncio.run(policy.complete(messages, tools))
