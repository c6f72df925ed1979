"""Checkpoints of graphs run in a session, as the store keeps them (values only; binary, so
they live here rather than among core's JSON records).

A checkpoint belongs to a session (its thread) and a namespace (a subgraph's, or "" for the
graph itself). Its body and metadata are the bytes a serializer gave, with the serializer's
type name; each channel value it holds is a ChannelValue, stored once per version. A channel
holding a list of messages may instead be stored as ConversationRanges: ranges of the
session's conversation, where each message is stored once, however many checkpoints hold it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tether.core.message import NewMessage

#: The type name of a ChannelValue whose value is conversation ranges (JSON [[first, last], …]).
CONVERSATION_TYPE = "tether/conversation"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One checkpoint: its ids, its serialized body and metadata, its channel versions."""

    #: The thread: the external key of the session.
    thread: str
    session_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_id: str | None
    type: str
    body: bytes
    metadata_type: str
    metadata: bytes
    #: {channel: version} of the values the checkpoint holds (a version is a string, or a
    #: number; its value is stored under its text).
    channels: dict[str, str | int | float]
    #: The run that made it, if known.
    run_id: str | None = None


@dataclass(frozen=True, slots=True)
class ChannelValue:
    """The value of a channel at one version: a serializer's (type, bytes)."""

    channel: str
    version: str
    type: str
    value: bytes | None


@dataclass(frozen=True, slots=True)
class ConversationRanges:
    """A message list channel at one version: the conversation's messages in ranges (inclusive
    seqs, in order), then the new messages, appended to the conversation by the same write."""

    channel: str
    version: str
    ranges: tuple[tuple[int, int], ...]
    new: tuple[NewMessage, ...] = ()


@dataclass(frozen=True, slots=True)
class PendingWrite:
    """A write a task of a checkpoint made (idx < 0: a special write, an error or interrupt)."""

    task_id: str
    idx: int
    channel: str
    type: str
    value: bytes | None
    task_path: str = ""


@dataclass(frozen=True, slots=True)
class LoadedCheckpoint:
    """A checkpoint with its channel values and its pending writes."""

    checkpoint: Checkpoint
    values: list[ChannelValue] = field(default_factory=list)
    writes: list[PendingWrite] = field(default_factory=list)


def merge_ranges(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """ranges with each one that continues the one before joined to it."""
    merged: list[tuple[int, int]] = []
    for first, last in ranges:
        if last < first:
            continue
        if merged and merged[-1][1] + 1 == first:
            merged[-1] = (merged[-1][0], last)
        else:
            merged.append((first, last))
    return tuple(merged)
