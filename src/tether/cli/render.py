"""Rich rendering of sessions, runs, steps and memory for the terminal."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.box import HEAVY_HEAD, Box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

if TYPE_CHECKING:
    from tether.cli.report import RunReport, SessionReport
    from tether.core.memory import MemoryItem
    from tether.core.message import Message
    from tether.core.run import Run
    from tether.core.session import Session
    from tether.core.step import Step

STATUS_STYLE = {
    "active": "bold green",
    "closed": "yellow",
    "expired": "red",
    "ready": "cyan",
    "running": "bold blue",
    "waiting": "bold magenta",
    "completed": "green",
    "failed": "bold red",
    "timed_out": "red",
    "cancelled": "yellow",
    "in_doubt": "bold yellow",
}


#: Characters a terminal may act on (C0, DEL, C1: ESC starts its escape sequences), and the
#: bidirectional overrides and isolates that make text show in another order than it is.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def clean(value: Any) -> str:
    """Text a caller wrote (a goal, a name, a title), its control characters shown escaped
    (\\x1b, \\n) so that the terminal shows them instead of acting on them."""
    return _CONTROL.sub(lambda found: found.group().encode("unicode_escape").decode(), str(value))


def plain(value: Any) -> Text:
    """A table cell or tree line of caller text: cleaned, its [markup] shown as written."""
    return Text(clean(value))


def status(value: str) -> Text:
    return Text(value, style=STATUS_STYLE.get(value, ""))


def clock(moment: datetime | None) -> str:
    if moment is None:
        return "—"
    return moment.strftime("%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def when(moment: datetime | None) -> str:
    return "—" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def seconds(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def short(value: Any, limit: int = 90) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = clean(" ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def expires(session: Session, now: datetime) -> str:
    at = session.expires_at
    if session.status.value != "active":
        return "—"
    if at is None:
        return "never"
    left = (at - now).total_seconds()
    if left <= 0:
        return "now"
    days, rest = divmod(int(left), 86400)
    return f"in {days}d {rest // 3600}h" if days else f"in {rest // 3600}h {rest % 3600 // 60}m"


def plural(count: int, word: str) -> str:
    """``1 step``, ``2 steps``, ``0 tool calls``."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def waiting_lines(run_id: str, waiting_for: dict[str, Any]) -> str:
    """What a waiting run asks (the prompt; for an approval, the tool and its arguments) and
    the command that answers it."""
    kind = clean(waiting_for.get("kind", "input"))
    lines = [f"waits for {kind}: {short(waiting_for.get('prompt', ''), 160)}"]
    if "tool" in waiting_for:
        arguments = short(waiting_for.get("arguments", {}), 140)
        lines.append(f"tool: {clean(waiting_for['tool'])}  arguments: {arguments}")
    answer = "yes (or no)" if kind == "approval" else "'<your answer>'"
    lines.append(f"answer with: tether runs resume {run_id} {answer}")
    return "\n  ".join(lines)


def step_line(step: Step) -> Text:
    from tether.core.step import StepKind  # loaded with the steps shown

    kind, name = step.label
    line = Text(f"{step.seq:>2} ")
    line.append(f"{clean(kind):<10} ", style="dim")
    line.append(f"{clean(name)} ", style="bold")
    line.append_text(status(step.status.value))
    line.append(f"  {seconds(step.duration_seconds)}", style="dim")
    if step.waits_for is not None:
        asked = (step.input or {}).get("prompt", "") if isinstance(step.input, dict) else ""
        line.append(f"\n     asks: {short(asked)}", style="dim")
        if isinstance(step.output, dict) and "input" in step.output:
            line.append(f"\n     answer: {short(step.output['input'])}", style="dim")
    elif step.kind is StepKind.TOOL_CALL:
        args = (step.input or {}).get("arguments", step.input)
        line.append(f"\n     in:  {short(args)}", style="dim")
        if step.error is not None:
            line.append(f"\n     err: {short(step.error.message)}", style="red")
        else:
            line.append(f"\n     out: {short(step.output)}", style="dim")
    elif step.kind is StepKind.MODEL_CALL and not step.usage.is_zero():
        line.append(f"  tokens {step.usage.input_tokens}→{step.usage.output_tokens}", style="dim")
    elif step.error is not None:
        line.append(f"  {short(step.error.message)}", style="red")
    return line


def run_label(run: Run, steps: list[Step]) -> Text:
    from tether.core.step import StepKind  # loaded with the steps shown

    label = Text(f"Run {run.seq} ", style="bold")
    label.append_text(status(run.status.value))
    label.append(f"  {clean(run.goal)}", style="italic")
    tools = sum(1 for s in steps if s.kind is StepKind.TOOL_CALL)
    label.append(
        f"\n  {clock(run.started_at)} → {clock(run.ended_at)}  ({seconds(run.duration_seconds)})"
        f"  {plural(len(steps), 'step')}, {plural(tools, 'tool call')}"
        f"  agent={clean(run.agent)}  id={run.id}",
        style="dim",
    )
    if run.waiting_for is not None and run.status.value == "waiting":
        label.append(f"\n  {waiting_lines(run.id, run.waiting_for)}", style="bold yellow")
    if run.error is not None:
        label.append(
            f"\n  error: {clean(run.error.type)}: {clean(run.error.message)}", style="bold red"
        )
    elif run.output is not None:
        output = (
            run.output.get("summary", run.output) if isinstance(run.output, dict) else run.output
        )
        label.append(f"\n  output: {short(output, 160)}", style="green")
    return label


def run_tree(report: RunReport, parent: Tree | None = None) -> Tree:
    label = run_label(report.run, report.steps)
    node = parent.add(label) if parent is not None else Tree(label)
    for step in report.steps:
        node.add(step_line(step))
    if report.memory:
        memory = node.add(Text("working memory", style="bold"))
        for item in report.memory:
            memory.add(plain(f"{item.key} = {short(item.value)}"))
    return node


def session_tree(report: SessionReport, now: datetime) -> Tree:
    s = report.session
    label = Text("Session ", style="bold")
    label.append(f"{clean(s.title or '(untitled)')} ", style="bold italic")
    label.append_text(status(s.status.value))
    label.append(
        f"\n  id={s.id}  created {when(s.created_at)}  last activity {when(s.last_activity_at)}"
        f"  expires {expires(s, now)}  runs={s.run_count}",
        style="dim",
    )
    if s.external_key is not None or s.app is not None:
        named = [f"key={s.external_key!r}"] if s.external_key is not None else []
        named += [f"app={clean(s.app)}"] if s.app is not None else []
        label.append("\n  " + "  ".join(named), style="dim")
    if s.project:
        label.append(f"\n  project {short(s.project, 110)}", style="dim")
    tree = Tree(label)
    for run in report.runs:
        run_tree(run, tree)
    return tree


def memory_table(title: str, items: list[MemoryItem], runs: dict[str, int]) -> Table:
    table = Table(title=title, title_justify="left", show_lines=False, expand=False)
    table.add_column("key", style="bold")
    table.add_column("value")
    table.add_column("from", style="dim")
    for item in items:
        source = f"run {runs[item.source_run_id]}" if item.source_run_id in runs else "—"
        table.add_row(plain(item.key), plain(short(item.value, 100)), source)
    if not items:
        table.add_row("—", "(empty)", "")
    return table


def session_view(report: SessionReport, now: datetime) -> Group:
    runs = {r.run.id: r.run.seq for r in report.runs}
    parts: list[Any] = [session_tree(report, now)]
    parts.append(memory_table("Session memory (every run sees it)", report.memory, runs))
    for run in report.runs:
        if run.memory:
            parts.append(
                memory_table(f"Run {run.run.seq} working memory (that run only)", run.memory, runs)
            )
    parts.append(
        memory_table("User memory (all of this owner's sessions)", report.user_memory, runs)
    )
    if report.session.app is not None:
        parts.append(
            memory_table(
                f"App memory (every session of app {clean(report.session.app)})",
                report.app_memory,
                runs,
            )
        )
    tally: dict[str, int] = {}
    for step in report.tool_calls:
        tally[step.name] = tally.get(step.name, 0) + 1
    summary = ", ".join(f"{clean(name)} x{n}" for name, n in sorted(tally.items())) or "none"
    parts.append(
        Text(
            f"Tool history (aggregated over {plural(len(report.runs), 'run')}): "
            f"{plural(len(report.tool_calls), 'call')} — {summary}"
        )
    )
    return Group(*parts)


def print_session(console: Console, report: SessionReport, now: datetime) -> None:
    console.print(session_view(report, now))


def add_columns(table: Table, *names: str) -> None:
    """Columns of a table; ids are never cut (people copy them into the next command)."""
    for name in names:
        if name == "id":
            table.add_column(name, no_wrap=True, min_width=36)
        else:
            table.add_column(name)


def sessions_table(sessions: list[Session], now: datetime) -> Table:
    table = Table(title="Sessions", title_justify="left")
    add_columns(table, "id", "key", "title", "app", "status", "runs", "last activity", "expires")
    for s in sessions:
        table.add_row(
            s.id,
            plain(s.external_key or ""),
            plain(s.title or ""),
            plain(s.app or ""),
            status(s.status.value),
            str(s.run_count),
            when(s.last_activity_at),
            expires(s, now),
        )
    return table


def runs_table(runs: Sequence[Run]) -> Table:
    table = Table(title="Runs", title_justify="left")
    add_columns(table, "seq", "id", "status", "goal", "agent", "started", "duration", "error")
    for r in runs:
        table.add_row(
            str(r.seq),
            r.id,
            status(r.status.value),
            plain(short(r.goal, 40)),
            plain(r.agent),
            when(r.started_at),
            seconds(r.duration_seconds),
            plain(short(f"{r.error.type}: {r.error.message}", 50) if r.error else ""),
        )
    return table


def all_runs_table(runs: Sequence[Run], *, live_agents: set[str] | None = None) -> Table:
    """Runs of many sessions, newest first; with live_agents, a ready run whose agent no
    running worker has is marked stuck."""
    table = Table(title="Runs", title_justify="left")
    add_columns(
        table, "created", "id", "session", "seq", "status", "agent", "goal", "duration", "error"
    )
    for r in runs:
        state = status(r.status.value)
        if live_agents is not None and r.status.value == "ready" and r.agent not in live_agents:
            state.append(" (stuck: no worker)", style="bold red")
        table.add_row(
            when(r.created_at),
            r.id,
            r.session_id,
            str(r.seq),
            state,
            plain(r.agent),
            plain(short(r.goal, 40)),
            seconds(r.duration_seconds),
            plain(short(f"{r.error.type}: {r.error.message}", 50) if r.error else ""),
        )
    if not runs:
        table.add_row("—", "", "", "", "", "", "(no runs)", "", "")
    return table


#: A conversation's columns; a row is their cells' text and whether the message was removed.
_MESSAGE_COLUMNS = ("seq", "role", "content", "item", "at")
_MessageRow = tuple[str, str, str, str, str, bool]


def messages_table(messages: list[Message]) -> MessagesTable:
    """Messages of a conversation: seq, role, text (a structured item's type), when."""
    rows: list[_MessageRow] = [
        (
            str(m.seq),
            m.role.value,
            short(m.content, 100),
            clean("" if m.item is None else m.item.get("type", "object")),
            when(m.created_at),
            m.removed_at is not None,
        )
        for m in messages
    ]
    return MessagesTable(rows or [("—", "", "(no messages)", "", "", False)])


class MessagesTable:
    """The messages table, drawn a line at a time: what rich's Table prints for it (a test
    compares them in every kind of terminal, at every width), without its general layout
    (measuring, wrapping and padding each of five cells a row: seconds for 10,000 messages).
    Only a cell too wide for its column goes through rich's wrapping; a cell with a line break
    or a zero-width joiner, or a column with no room for text, makes it rich's table."""

    def __init__(self, rows: list[_MessageRow]) -> None:
        self.rows = rows

    def table(self, rows: list[_MessageRow] | None = None) -> Table:
        table = Table(title="Messages", title_justify="left")
        add_columns(table, *_MESSAGE_COLUMNS)
        for seq, role, content, item, at, removed in self.rows if rows is None else rows:
            text = Text(content)
            if removed:
                text.stylize("strike dim")
            table.add_row(seq, role, text, Text(item), at)
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        cells = [row[:5] for row in self.rows]
        if not all(_drawable(text) for row in cells for text in row):
            yield self.table()
            return
        lengths = [[_cell_len(text) for text in row] for row in cells]
        names = [len(name) for name in _MESSAGE_COLUMNS]
        widths = [max(column) + 2 for column in zip(*lengths, names, strict=True)]
        if sum(widths) + len(widths) + 1 > options.max_width:
            widths = self._narrowed(console, options, lengths)
        if min(widths) <= 2:  # no room for text: rich draws blank lines, as many as it likes
            yield self.table()
            return
        box = HEAVY_HEAD.substitute(options, safe=console.safe_box)
        yield from console.render(
            # (without emoji codes to replace: their table, 3 ms to load, has none for it)
            console.render_str("Messages", style="table.title", highlight=False, emoji=False),
            options.update(
                width=sum(widths) + len(widths) + 1, highlight=False, height=None, justify="left"
            ),
        )
        yield Segment(box.get_top(widths) + "\n")
        yield from self._header(console, box, widths)
        yield Segment(box.get_row(widths, "head", edge=True) + "\n")
        struck = console.get_style("strike dim")
        for index, (row, length) in enumerate(zip(self.rows, lengths, strict=True)):
            last = index == len(self.rows) - 1
            left, bar, right = (
                (box.foot_left, box.foot_vertical, box.foot_right)
                if last
                else (box.mid_left, box.mid_vertical, box.mid_right)
            )
            if any(n > w - 2 for n, w in zip(length, widths, strict=False)):
                yield from self._wrapped(console, (left, bar, right), row, widths, length)
                continue
            seq, role, text, item, at = (
                cell + " " * (w - 2 - n)
                for cell, w, n in zip(row[:5], widths, length, strict=False)
            )
            head = f"{left} {seq} {bar} {role} {bar} "
            tail = f"{text[len(row[2]) :]} {bar} {item} {bar} {at} {right}\n"
            # Unstyled pieces print the same in one segment as in rich's several.
            if row[5] and row[2]:  # a removed message's text is struck through
                yield from (Segment(head), Segment(row[2], struck), Segment(tail))
            elif row[2].endswith("…"):  # apart, the rest is measured as ASCII, at once
                yield from (Segment(head + row[2][:-1]), Segment("…"), Segment(tail))
            else:
                yield Segment(head + row[2] + tail)
        yield Segment(box.get_bottom(widths) + "\n")

    def _narrowed(
        self, console: Console, options: ConsoleOptions, lengths: list[list[int]]
    ) -> list[int]:
        """The widths rich gives the columns of a table wider than the console. They depend on
        each column's widest cell and longest word only: rich lays out a table of the rows
        holding those."""
        words = [
            [max(map(_cell_len, text.split()), default=0) for text in r[:5]] for r in self.rows
        ]
        picked = {
            max(range(len(self.rows)), key=[sizes[j] for sizes in table].__getitem__)
            for table in (lengths, words)
            for j in range(len(_MESSAGE_COLUMNS))
        }
        probe = self.table([self.rows[i] for i in sorted(picked)])
        room = options.max_width - len(_MESSAGE_COLUMNS) - 1
        return probe._calculate_column_widths(console, options.update_width(room))

    @staticmethod
    def _wrapped(
        console: Console,
        edges: tuple[str, str, str],
        row: _MessageRow,
        widths: list[int],
        length: list[int],
    ) -> Iterator[Segment]:
        """A row of which some cell is wrapped over several lines, as rich wraps it (a cell
        that fits is its one line, padded)."""
        texts: list[Text | str] = []
        for column, (cell, width, n) in enumerate(zip(row[:5], widths, length, strict=False)):
            if n <= width - 2 and not (column == 2 and row[5]):
                texts.append(f" {cell}{' ' * (width - 2 - n)} ")
            else:
                texts.append(Text(cell))
                if column == 2 and row[5]:
                    texts[-1].stylize("strike dim")  # type: ignore[union-attr]
        yield from _merged(_lines(console, edges, texts, widths, None))

    @staticmethod
    def _header(console: Console, box: Box, widths: list[int]) -> Iterator[Segment]:
        bold = console.get_style("table.header")
        edges = (box.head_left, box.head_vertical, box.head_right)
        if any(len(name) > w - 2 for name, w in zip(_MESSAGE_COLUMNS, widths, strict=True)):
            yield from _lines(console, edges, list(map(Text, _MESSAGE_COLUMNS)), widths, bold)
            return
        yield Segment(box.head_left)
        for index, (name, width) in enumerate(zip(_MESSAGE_COLUMNS, widths, strict=True)):
            if index:
                yield Segment(box.head_vertical)
            yield from (
                Segment(" ", bold),
                Segment(name.ljust(width - 2), bold),
                Segment(" ", bold),
            )
        yield Segment(box.head_right + "\n")


def _lines(
    console: Console,
    edges: tuple[str, str, str],
    texts: Sequence[Text | str],
    widths: list[int],
    header: Style | None,
) -> Iterator[Segment]:
    """A row's cells wrapped to their columns, as rich's Table draws them: each line cut or
    padded to its column, the shorter cells filled with blank lines below (a header's above,
    all in its style)."""
    drawn: list[list[list[Segment]]] = []
    for text, width in zip(texts, widths, strict=True):
        if isinstance(text, str):  # one line, drawn
            drawn.append([[Segment(text)]])
            continue
        wrapped = text.wrap(console, width - 2, justify="left", overflow="ellipsis")
        cell = [
            [
                Segment(" "),
                *Segment.adjust_line_length(list(line.render(console)), width - 2),
                Segment(" "),
            ]
            for line in wrapped
        ]
        drawn.append([list(Segment.apply_style(line, header)) for line in cell] if header else cell)
    height = max(len(lines) for lines in drawn)
    for lines, width in zip(drawn, widths, strict=True):
        blank: list[list[Segment]] = [[Segment(" " * width, header)]] * (height - len(lines))
        lines[:] = blank + lines if header else lines + blank
    left, bar, right = edges
    for number in range(height):
        yield Segment(left)
        for column, lines in enumerate(drawn):
            if column:
                yield Segment(bar)
            yield from lines[number]
        yield Segment(right + "\n")


def _merged(segments: Iterable[Segment]) -> Iterator[Segment]:
    """segments with each run of unstyled ones as one (printed the same, measured once)."""
    run: list[str] = []
    for segment in segments:
        if segment.style:
            if run:
                yield Segment("".join(run))
                run = []
            yield segment
        else:
            run.append(segment.text)
    if run:
        yield Segment("".join(run))


def _drawable(text: str) -> bool:
    """Whether a cell can be drawn a line at a time: without a line break (even at its end,
    where rich drops it) or a zero-width joiner (rich measures a padded line whole, and a
    joiner at its end swallows the space after it)."""
    return "\u200d" not in text and text.splitlines() in ([], [text])


def _cell_len(text: str) -> int:
    """rich's cell_len, quicker for text cut with an ellipsis: without a variation selector
    (or a zero-width joiner: see _drawable), rich adds up each character's width, and "…" is
    one cell wide like "." (which it counts at once, with the rest of ASCII)."""
    if "\ufe0f" in text:
        return cell_len(text)
    return cell_len(text.replace("…", "."))
