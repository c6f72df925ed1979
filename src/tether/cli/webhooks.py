"""``--webhook-allow`` for ``tether serve`` and ``tether worker``, and ``tether webhooks``: the
owners' webhook signing secrets."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from tether.cli.app import DbOption, handles_errors
from tether.store.factory import DEFAULT_DB, open_store

WebhookAllowOption = Annotated[
    list[str] | None,
    typer.Option(
        "--webhook-allow",
        envvar="TETHER_WEBHOOK_ALLOW",
        help="A host name or CIDR webhooks may reach besides public addresses (loopback, a "
        "private network …); repeatable (TETHER_WEBHOOK_ALLOW: separated by spaces).",
    ),
]


def webhook_allow(given: list[str] | None) -> tuple[str, ...]:
    """The entries given, each of the variable's split on spaces."""
    return tuple(part for entry in given or () for part in entry.split())


webhooks_app = typer.Typer(help="Webhooks of ended runs.", no_args_is_help=True)


@webhooks_app.command("secret")
@handles_errors
def webhooks_secret(
    owner: Annotated[str, typer.Option(help="Whose webhooks the secret signs.")],
    db: DbOption = DEFAULT_DB,
    rotate: Annotated[bool, typer.Option(help="Replace it with a new one first.")] = False,
) -> None:
    """Print the secret an owner's webhooks are signed with (X-Tether-Signature: HMAC-SHA256),
    alone on standard output; made on first use."""
    import asyncio

    from tether.runtime.service import Service

    async def main() -> str:
        store = open_store(db)
        try:
            return await Service(store, owner=owner).webhook_secret(rotate=rotate)
        finally:
            await store.close()

    sys.stdout.write(asyncio.run(main()) + "\n")
    sys.stdout.flush()
