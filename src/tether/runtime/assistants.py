"""Assistants: named configurations of an agent (its ``graph_id``), kept in versions.

Every update adds a version and makes it the one runs use; ``set_latest`` chooses another. A
run made with an assistant executes its agent and records which version it used, with that
version's ``config`` and ``context``, in its metadata under ``assistant`` (an agent reads them
as ``ctx.run.metadata["assistant"]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

from tether.core.assistant import Assistant
from tether.core.errors import AlreadyExists, NotFound, UsageError
from tether.core.ids import is_id, new_id
from tether.core.run import RunOptions
from tether.runtime import limits
from tether.runtime.service import Service

#: The key of a run's metadata that records its assistant.
RUN_KEY = "assistant"
#: The most assistants of one owner that a listing reads.
MAX_LISTED = 10_000
#: The fields an update may change.
FIELDS = ("graph_id", "name", "description", "config", "context", "metadata")


def _checked(svc: Service, changes: Mapping[str, Any]) -> dict[str, Any]:
    """changes, each checked (UsageError naming the first that is wrong)."""
    unknown = sorted(set(changes) - set(FIELDS))
    if unknown:
        raise UsageError(f"an assistant has no field {', '.join(unknown)}")
    checked: dict[str, Any] = {}
    for name, value in changes.items():
        if name == "graph_id":
            if not isinstance(value, str):
                raise UsageError("an assistant's graph_id must be an agent's name (a string)")
            svc.agents.get(value)  # AgentNotFound
            checked[name] = value
        elif name == "name":
            if not isinstance(value, str) or not value.strip():
                raise UsageError("an assistant's name must be a non-empty string")
            checked[name] = limits.text("name", value, limits.MAX_TITLE)
        elif name == "description":
            checked[name] = None if value is None else limits.text("description", value, 4000)
        else:
            checked[name] = limits.mapping(name, value)
    return checked


async def create(
    svc: Service,
    graph_id: str,
    *,
    assistant_id: str | None = None,
    name: str | None = None,
    description: str | None = None,
    config: dict[str, Any] | None = None,
    context: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    if_exists: Literal["raise", "do_nothing"] = "raise",
) -> Assistant:
    """A new assistant of the agent graph_id (version 1). An assistant_id already taken is
    AlreadyExists, or (if_exists="do_nothing") the assistant that has it."""
    if assistant_id is not None and not is_id(assistant_id):
        raise UsageError(f"assistant id {assistant_id!r} is not a UUID in canonical form")
    fields = _checked(
        svc,
        {
            "graph_id": graph_id,
            "name": name or graph_id,
            "description": description,
            "config": config,
            "context": context,
            "metadata": metadata,
        },
    )
    if assistant_id is not None and if_exists == "do_nothing":
        found = await svc.store.get_assistant(assistant_id, owner=svc.owner)
        if found is not None:
            return found
    now = svc.clock.now()
    made = Assistant(
        id=assistant_id or new_id(),
        owner=svc.owner,
        version=1,
        created_at=now,
        updated_at=now,
        **fields,
    )
    try:
        return await svc.store.create_assistant(made)
    except AlreadyExists:
        found = await find(svc, made.id) if if_exists == "do_nothing" else None
        if found is None:  # another owner's id is taken, as it is for sessions
            raise
        return found


async def get(svc: Service, assistant_id: str) -> Assistant:
    """The assistant (its chosen version); NotFound."""
    found = await svc.store.get_assistant(assistant_id, owner=svc.owner)
    if found is None:
        raise NotFound("assistant", assistant_id)
    return found


async def find(svc: Service, assistant_id: str) -> Assistant | None:
    """The owner's assistant with this id, or None (for an id that is no UUID too)."""
    if not is_id(assistant_id):
        return None
    return await svc.store.get_assistant(assistant_id, owner=svc.owner)


async def list_all(svc: Service) -> list[Assistant]:
    """The owner's assistants, oldest first."""
    return await svc.store.list_assistants(owner=svc.owner, limit=MAX_LISTED)


async def update(svc: Service, assistant_id: str, **changes: Any) -> Assistant:
    """A new version with changes (graph_id, name, description, config, context; metadata is
    merged into the metadata), which runs use from now on."""
    checked = _checked(svc, changes)
    if "metadata" in checked:
        current = await get(svc, assistant_id)
        checked["metadata"] = limits.mapping(
            "metadata", {**current.metadata, **checked["metadata"]}
        )
    return await svc.store.update_assistant(
        assistant_id, owner=svc.owner, changes=checked, now=svc.clock.now()
    )


async def set_latest(svc: Service, assistant_id: str, version: int) -> Assistant:
    """Make version the one runs use; NotFound for an unknown version."""
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise UsageError("version must be a whole number, 1 or more")
    return await svc.store.set_assistant_version(
        assistant_id, version, owner=svc.owner, now=svc.clock.now()
    )


async def versions(
    svc: Service, assistant_id: str, *, limit: int = 10, offset: int = 0
) -> list[Assistant]:
    """The assistant's versions, newest first."""
    return await svc.store.list_assistant_versions(
        assistant_id,
        owner=svc.owner,
        limit=limits.page_size(limit),
        offset=limits.offset(offset),
    )


async def delete(svc: Service, assistant_id: str) -> None:
    """Remove the assistant and its versions (runs it made keep their record of it)."""
    await svc.store.delete_assistant(assistant_id, owner=svc.owner)


def run_options(assistant: Assistant, options: RunOptions) -> RunOptions:
    """options for a run of the assistant: its agent, and the version it uses recorded in the
    metadata (with the version's config and context)."""
    metadata = dict(options.metadata or {})
    if RUN_KEY in metadata:
        raise UsageError(f"metadata.{RUN_KEY} is reserved for the run's assistant")
    metadata[RUN_KEY] = {
        "id": assistant.id,
        "version": assistant.version,
        "name": assistant.name,
        "config": assistant.config,
        "context": assistant.context,
    }
    return replace(options, agent=assistant.graph_id, metadata=metadata)
