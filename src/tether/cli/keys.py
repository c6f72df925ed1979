"""``tether keys``: create, list and revoke the API keys of the HTTP service."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.table import Table

from tether.cli import render
from tether.cli.app import DbOption, JsonOption, console, handles_errors, print_json
from tether.cli.render import add_columns
from tether.core.serde import to_data
from tether.store.factory import DEFAULT_DB, open_store

if TYPE_CHECKING:
    from tether.runtime.api_keys import ApiKeys

T = TypeVar("T")

keys_app = typer.Typer(help="API keys of the HTTP service.", no_args_is_help=True)


def _with_keys(db: str, operation: Callable[[ApiKeys], Awaitable[T]]) -> T:
    import asyncio

    from tether.runtime.api_keys import ApiKeys

    async def main() -> T:
        store = open_store(db)
        try:
            return await operation(ApiKeys(store))
        finally:
            await store.close()

    return asyncio.run(main())


@keys_app.command("create")
@handles_errors
def keys_create(
    owner: Annotated[str, typer.Option(help="Whose sessions and runs the key reaches.")],
    db: DbOption = DEFAULT_DB,
    name: Annotated[str | None, typer.Option(help="A label for people.")] = None,
) -> None:
    """Create a key and print it once, alone on standard output (only its hash is stored)."""
    _, secret = _with_keys(db, lambda keys: keys.create(owner, name=name))
    sys.stdout.write(secret + "\n")
    sys.stdout.flush()


@keys_app.command("list")
@handles_errors
def keys_list(
    db: DbOption = DEFAULT_DB,
    json: JsonOption = False,
    owner: Annotated[str | None, typer.Option(help="Only this owner's keys.")] = None,
) -> None:
    """List keys (their prefixes, never the keys)."""
    found = _with_keys(db, lambda keys: keys.list_keys(owner=owner))
    if json:
        print_json({"data": to_data(found)})
        return
    table = Table(title="API keys", title_justify="left")
    add_columns(table, "id", "owner", "prefix", "name", "created", "revoked")
    for key in found:
        table.add_row(
            key.id,
            key.owner,
            key.prefix + "…",
            key.name or "",
            render.when(key.created_at),
            render.when(key.revoked_at) if key.revoked_at else "",
        )
    console.print(table)


@keys_app.command("revoke")
@handles_errors
def keys_revoke(key_id: str, db: DbOption = DEFAULT_DB) -> None:
    """Revoke a key by id: requests with it get 401 from now on."""
    key = _with_keys(db, lambda keys: keys.revoke(key_id))
    console.print(f"key {key.id} ({key.prefix}…, owner {key.owner}) is revoked")
