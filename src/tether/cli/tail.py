"""``tether tail RUN_ID``: follow a run's events live until its terminal event."""

from __future__ import annotations

import json as jsonlib
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from tether.cli import render
from tether.cli.app import JsonOption, Target, console, handles_errors, with_target
from tether.core.serde import to_data

if TYPE_CHECKING:
    from tether.core.event import Event


def _summary(event: Event) -> Text:
    from tether.core.step import WAIT_PREFIX  # loaded with the events

    data: dict[str, Any] = event.data
    line = Text()
    if "run" in data and event.type.startswith("run."):
        run = data["run"]
        line.append(f"Run {run.get('seq')} ")
        line.append_text(render.status(str(run.get("status"))))
        if run.get("error"):
            error = f"{run['error']['type']}: {run['error']['message']}"
            line.append(f"  {render.clean(error)}", style="red")
        elif run.get("status") == "waiting" and isinstance(run.get("waiting_for"), dict):
            waiting = render.waiting_lines(str(run.get("id")), run["waiting_for"])
            line.append(f"\n  {waiting}", style="bold yellow")
        elif run.get("output") is not None:
            line.append(f"  {render.short(run['output'])}", style="green")
    elif "step" in data:
        step = data["step"]
        kind, name = str(step.get("kind")), str(step.get("name"))
        if kind == "message" and name.startswith(WAIT_PREFIX):  # read as Step.label does
            kind, name = "wait", "for " + name.removeprefix(WAIT_PREFIX)
        line.append(f"{render.clean(kind)} {render.clean(name)} ")
        line.append_text(render.status(str(step.get("status"))))
        if step.get("output") is not None:
            line.append(f"  {render.short(step['output'])}", style="dim")
    elif "message" in data:
        message = data["message"]
        role = render.clean(message.get("role"))
        line.append(f"{role}: {render.short(message.get('content', ''))}")
    elif "item" in data:
        item = data["item"]
        line.append(
            f"{render.clean(item.get('scope'))} memory {render.clean(item.get('key'))} = "
            f"{render.short(item.get('value'))}"
        )
    else:
        line.append(render.short(data), style="dim")
    return line


def _line(event: Event) -> Text:
    text = Text(f"{event.id:>6} ", style="dim")
    text.append(render.clock(event.created_at) + " ", style="dim")
    text.append(f"{event.type:<16} ", style="bold")
    text.append_text(_summary(event))
    return text


@handles_errors
@with_target
def tail(
    target: Target,
    run_id: str,
    json: JsonOption = False,
    after: Annotated[
        int | None, typer.Option(help="Start after this event id (default: from the start).", min=0)
    ] = None,
) -> None:
    """Follow a run live (rendered, or one JSON event per line with --json) until it ends."""
    with target.open() as tt:
        for event in tt.stream_events(run_id=run_id, after_id=after):
            if json:
                sys.stdout.write(jsonlib.dumps(to_data(event), ensure_ascii=False) + "\n")
                sys.stdout.flush()
            else:
                console.print(_line(event), highlight=False, soft_wrap=True)
