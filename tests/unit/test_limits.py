"""runtime/limits.py: a message to append, checked as every edge checks it (the common values
take a shorter path through new_message; every other value the one it always took)."""

from __future__ import annotations

from typing import Any

import pytest

from tether.core.errors import UsageError
from tether.core.message import NewMessage, Role
from tether.runtime import limits


class _Text(str):
    """A str subclass: checked as any text is."""


_ITEM = {"type": "function_call_output", "output": "42"}


@pytest.mark.parametrize(
    ("role", "content", "metadata", "item", "made"),
    [
        ("user", "hi", None, None, (Role.USER, "hi", {}, None)),
        (Role.TOOL, "", {}, None, (Role.TOOL, "", {}, None)),
        (_Text("assistant"), _Text("x"), {"k": [1]}, None, (Role.ASSISTANT, "x", {"k": [1]}, None)),
        (None, "hi", None, None, (Role.USER, "hi", {}, None)),
        ("", "hi", None, None, (Role.USER, "hi", {}, None)),
        (None, None, None, _ITEM, (Role.TOOL, "42", {}, _ITEM)),
        ("system", None, None, _ITEM, (Role.SYSTEM, "42", {}, _ITEM)),
        (
            "user",
            "x" * limits.MAX_CONTENT,
            None,
            None,
            (Role.USER, "x" * limits.MAX_CONTENT, {}, None),
        ),
    ],
)
def test_a_message_is_made_of_its_checked_fields(
    role: Any, content: Any, metadata: Any, item: Any, made: tuple[Any, ...]
) -> None:
    new = limits.new_message(role, content, metadata, item)
    assert type(new) is NewMessage
    assert (new.role, new.content, new.metadata, new.item) == made
    assert new == NewMessage(*made)


@pytest.mark.parametrize(
    ("role", "content", "metadata", "error"),
    [
        ("robot", "hi", None, r"role must be one of user, assistant, system, tool \(got 'robot'\)"),
        (5, "hi", None, r"role must be one of .* \(got 5\)"),
        ("USER", "hi", None, r"role must be one of"),
        ("user", None, None, "content must be a string"),
        ("user", b"hi", None, "content must be a string"),
        ("user", "x" * (limits.MAX_CONTENT + 1), None, "content is longer than 1000000"),
        ("user", "hi", [], "metadata must be a JSON object"),
        ("user", "hi", {1: "x"}, "metadata must be a JSON object"),
        ("user", "hi", {"x": float("nan")}, "metadata: value is not JSON"),
    ],
)
def test_a_bad_field_is_refused_in_words(
    role: Any, content: Any, metadata: Any, error: str
) -> None:
    with pytest.raises(UsageError, match=error):
        limits.new_message(role, content, metadata)
    with pytest.raises(UsageError, match=r"messages\[1\]: " + error):
        limits.batch([{"content": "ok"}, {"role": role, "content": content, "metadata": metadata}])


def test_a_batch_takes_objects_mappings_and_messages_made_before() -> None:
    class Fields(dict[str, Any]):
        """A dict of another type: a Mapping."""

    made = limits.batch(
        [{"role": "user", "content": "a"}, Fields(content="b"), NewMessage(Role.TOOL, "c")]
    )
    assert [(m.role, m.content) for m in made] == [
        (Role.USER, "a"),
        (Role.USER, "b"),
        (Role.TOOL, "c"),
    ]
    with pytest.raises(UsageError, match=r"messages\[1\] must be a message object"):
        limits.batch([{"content": "a"}, ["content", "b"]])
