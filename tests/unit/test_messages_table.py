"""`tether sessions messages` draws its table a line at a time: what it prints is exactly what
rich's Table printed before (the reference below is the code it replaced), byte for byte, in
every kind of terminal (colours, ASCII boxes, a pipe), at every width (in a table too wide for
the terminal, cells wrap as rich wraps them; a line break, a zero-width joiner or a column
too narrow for any text makes it rich's own)."""

from __future__ import annotations

import io
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from random import Random
from typing import Any

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tether.cli import render
from tether.core.message import Message, Role

AT = datetime(2026, 12, 4, 21, 39, 19, 123456, tzinfo=UTC)
PIECES = (
    "plain words",
    "[bold]markup[/bold] stays",
    ":smile: :thumbs_up:",
    "世界 wide キャラクター",
    "emoji 👍🏽 and e\u0301 combining",
    "zero\u200bwidth",
    "line\nbreak\ttab\x1b[31m escape",
    "\u2028separator\u2029",
    "rtl \u202e override",
    " leading and trailing ",
    "x" * 130,
    "",
)


def reference_table(messages: list[Message]) -> Table:
    """The table `sessions messages` printed before (render.messages_table as it was)."""
    table = Table(title="Messages", title_justify="left")
    render.add_columns(table, "seq", "role", "content", "item", "at")
    for m in messages:
        kind = render.plain("" if m.item is None else m.item.get("type", "object"))
        text = Text(render.short(m.content, 100))
        if m.removed_at is not None:
            text.stylize("strike dim")
        table.add_row(str(m.seq), m.role.value, text, kind, render.when(m.created_at))
    if not messages:
        table.add_row("—", "", "(no messages)", "", "")
    return table


def conversation(seed: int, size: int) -> list[Message]:
    rng = Random(seed)
    items: list[dict[str, Any] | None] = [
        None,
        {"type": "function_call", "name": "f"},
        {"role": "user"},
        {"type": "x\ny [b]"},
        {"type": " padded "},
    ]
    return [
        Message(
            id=f"m{n}",
            session_id="s",
            seq=n * rng.choice((1, 7, 1013)),
            role=rng.choice(list(Role)),
            content=" ".join(rng.choice(PIECES) for _ in range(rng.randint(0, 4))),
            created_at=AT + timedelta(seconds=n),
            item=rng.choice(items),
            removed_at=AT if rng.random() < 0.3 else None,
        )
        for n in range(1, size + 1)
    ]


def consoles(width: int) -> list[Console]:
    """A pipe (no colours), a terminal in each colour system, and one that can only draw
    ASCII boxes."""
    made = [Console(file=io.StringIO(), width=width)]
    for system in ("standard", "256", "truecolor"):
        made.append(
            Console(file=io.StringIO(), width=width, force_terminal=True, color_system=system)
        )
    made.append(Console(file=io.StringIO(), width=width, force_terminal=True, safe_box=True))
    made.append(Console(file=io.TextIOWrapper(io.BytesIO(), encoding="ascii"), width=width))
    return made


def printed(console: Console, renderable: object) -> str:
    with console.capture() as capture:
        console.print(renderable)
    return capture.get()


@pytest.mark.parametrize("width", [20, 60, 80, 120, 160, 240])
@pytest.mark.parametrize("seed", range(6))
def test_the_table_is_what_rich_drew(seed: int, width: int) -> None:
    messages = conversation(seed, size=seed * 5)
    if seed == 5:  # an item type of two lines (clean() keeps U+2028): rich's table
        messages[0] = replace(messages[0], item={"type": "two\u2028lines"})
    for console in consoles(width):
        assert printed(console, render.messages_table(messages)) == printed(
            console, reference_table(messages)
        )


@pytest.mark.parametrize("width", [400, 80])
def test_a_conversation_is_drawn_without_rich_tables_layout(width: int) -> None:
    # one line per message: drawn a line at a time, whether it fits (400) or its cells wrap
    # (80), never rich's table (whose cells are Padding renderables)
    messages = [m for m in conversation(1, 40) if "\n" not in m.content]
    table = render.messages_table(messages)
    console = Console(file=io.StringIO(), width=width, force_terminal=True)
    rendered = list(table.__rich_console__(console, console.options))
    assert not any(isinstance(piece, Table) for piece in rendered)
    assert printed(console, table) == printed(console, reference_table(messages))


def one_message(content: str, item: str | None = None) -> list[Message]:
    return [
        Message(
            id="m1",
            session_id="s",
            seq=1,
            role=Role.USER,
            content=content,
            created_at=AT,
            item=None if item is None else {"type": item},
        )
    ]


@pytest.mark.parametrize(
    ("content", "item"),
    [
        ("a\u200d", None),  # rich measures a joiner as swallowing the padding after it
        ("❤\ufe0f\u200d", None),
        ("family 👨\u200d👩\u200d👧 and more", None),
        ("x" * 98 + "👨\u200d👩\u200d👧 more words", None),  # cut inside the sequence
        ("plain", "joined\u200d"),
        ("ends in a separator\u2028", None),  # a line break at the end, which rich drops
        ("plain", "item\u2028"),
        ("new line\n", "paragraph\u2029"),
    ],
)
@pytest.mark.parametrize("width", [30, 80, 240])
def test_a_joiner_or_a_closing_line_break_is_drawn_as_rich_draws_it(
    content: str, item: str | None, width: int
) -> None:
    messages = one_message(content, item)
    for console in consoles(width):
        assert printed(console, render.messages_table(messages)) == printed(
            console, reference_table(messages)
        )


@pytest.mark.parametrize("width", range(6, 22))
def test_columns_too_narrow_for_any_text_are_drawn_as_rich_draws_them(width: int) -> None:
    # at 10 columns and so, a column is its padding alone: rich draws its lines blank
    for messages in (one_message("hello"), conversation(3, 4)):
        for console in consoles(width):
            assert printed(console, render.messages_table(messages)) == printed(
                console, reference_table(messages)
            )
