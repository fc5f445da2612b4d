"""A task as the terminal shows it (`asya status`, `send --wait`, `watch`, `rerun`): a table of its
status, route, hops, input, result or error, and a fan-out's branches, said in words; kept apart from
the commands, which find and change tasks, so that what a person reads is in one place."""

from __future__ import annotations

import json
import textwrap
from typing import Any

from rich.table import Table
from rich.text import Text

from asya.root_result import OWN_ENVELOPE, no_single_result
from asya_local.console import failure
from asya_local.console.wording import how_far
from asya_local.moments import local_time
from asya_local.screen import status_text

INPUT_SHOWN = 200  # characters of a task's input `asya status` shows
SHORT_ID = 8  # characters of an id a table shows: what `asya status` and the others take back
WHY_SHOWN = 60  # characters of a reason a list shows, cut between words


def task_table(task: dict[str, Any]) -> Table:
    """The fields of a task a person looks at, in that order; empty ones are left out."""
    table = Table(show_header=False, title=f"task {task.get('id', '')}", title_justify="left")
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    status = str(task.get("status", ""))
    rows: list[tuple[str, str | Text]] = [
        ("flow", str(task.get("flow") or "")),
        ("status", status_text(status)),
        ("progress", progress_text(task)),
        (_where_label(task), where(task)),
        ("route", _route(task.get("route"))),
        ("branches", branches_text(task.get("branches"))),
        ("rerun of", str(task.get("rerun_of") or "")),
        ("input", input_text(task)),
        ("output", json.dumps(task["output"], ensure_ascii=False) if "output" in task else ""),
        ("result", str(task.get("result") or no_single_result(task) or "")),
        ("own envelope", _own_envelope(task)),
        ("reason", str(task.get("reason") or "")),
        ("error", error_text(task.get("error"))),
        ("traceback", _traceback(task.get("error"))),
        *(
            (_failed_branch_label(branch, index), _failed_branch(branch, task.get("id")))
            for index, branch in enumerate(task.get("failed_branches") or [], start=1)
        ),
        ("pause", json.dumps(task["pause"], ensure_ascii=False) if task.get("pause") else ""),
        ("deadline", local_time(str(task.get("deadline_at") or ""))),
        ("updated", local_time(str(task.get("updated_at") or ""))),
    ]
    for name, value in rows:
        if value:
            table.add_row(name, value)
    return table


def tasks_table(found: list[dict[str, Any]], title: str) -> Table:
    """Tasks one a row, each by its short id, with why one that ended badly did, and how far it got."""
    table = Table(title=title, title_justify="left")
    for column in ("id", "flow", "status", "actor", "progress", "reason", "started", "updated"):
        table.add_column(column, overflow="fold", no_wrap=column == "id")
    for task in found:
        table.add_row(
            short_id(task["id"]),
            str(task.get("flow") or ""),
            status_text(str(task.get("status", ""))),
            where(task),
            progress_text(task),
            shortened(why(task)),
            local_time(str(task.get("created_at") or "")),
            local_time(str(task.get("updated_at") or "")),
        )
    return table


def short_id(given: Any) -> str:
    """An id as the tables show it: its first characters, which every command taking an id takes."""
    return str(given or "")[:SHORT_ID]


def where(task: dict[str, Any]) -> str:
    """The actor a task is at, or where it failed or was canceled as the console says it
    (`asya_local.console.failure.why`): a fan-out its branches failed, at the failing branch's actor,
    not where its own envelope went on to end well; a join that gave up, at the join."""
    cause = failure.why(task)
    return str((cause.at if cause is not None else None) or task.get("actor") or "")


def _where_label(task: dict[str, Any]) -> str:
    """`failed at` or `canceled at` for a task that ended so (where it stopped), `actor` otherwise."""
    cause = failure.why(task)
    return f"{cause.ended} at" if cause is not None and cause.at else "actor"


def progress_text(task: dict[str, Any]) -> str:
    """How far a task got: for one that ended without succeeding, in words as the console says it
    (`stopped at score, 1 of 3 actors done`), not the 100 % its record ends at; else its percentage."""
    return how_far(task) or f"{float(task.get('progress') or 0):g} %"


def why(task: dict[str, Any]) -> str:
    """Why a task ended badly, in a line, as the console's list says it (`failure.why`): the handler's
    `Type: message`, or its reason and message."""
    cause = failure.why(task)
    return cause.cause() if cause is not None else ""


def shortened(text: str, most: int = WHY_SHOWN) -> str:
    """`text` on one line, cut between words to at most `most` characters, with an ellipsis."""
    if len(text) <= most and "\n" not in text:
        return text
    cut = textwrap.shorten(text, most, placeholder=" …")
    return cut if cut != "…" else f"{text[: most - 1]}…"  # one word longer than `most`: cut inside it


def _own_envelope(task: dict[str, Any]) -> str:
    """A fan-out root's own envelope's ending, as one branch's among the others."""
    own = task.get(OWN_ENVELOPE)
    if not isinstance(own, dict):
        return ""
    ending = json.dumps(own["output"], ensure_ascii=False) if "output" in own else str(own.get("result") or "")
    return f"one of the branches, it ended with {ending}" if ending else ""


def input_text(task: dict[str, Any]) -> str:
    """The task's input as one line of JSON, trimmed to `INPUT_SHOWN` characters (`asya status` is a
    glance; the console shows it whole), or where it is when the answer held only a link."""
    if "input" in task:
        text = json.dumps(task["input"], ensure_ascii=False)
        return text if len(text) <= INPUT_SHOWN else f"{text[:INPUT_SHOWN]}… ({len(text.encode())} bytes)"
    if task.get("input_url"):
        return f"too large to show here: {task['input_url']}"
    reference = task.get("input_ref")
    return f"kept at {reference.get('uri')}" if isinstance(reference, dict) else ""


def error_text(error: Any) -> str:
    """`Type: message` (the handler's own error type), or the message alone when there is no type."""
    if not isinstance(error, dict):
        return str(error or "")
    message = str(error.get("message") or "")
    return f"{error['type']}: {message}" if error.get("type") else message


def _traceback(error: Any) -> Text:
    trace = error.get("traceback") if isinstance(error, dict) else None
    return Text(trace, style="dim") if isinstance(trace, str) else Text()


def _failed_branch_label(branch: dict[str, Any], index: int) -> str:
    """A join's failed branch by its place in the fan, counted from 1 ("failed branch 2 of 3"); a
    fan-out root's by its place in the list."""
    if isinstance(branch.get("branch"), int) and isinstance(branch.get("width"), int):
        return f"failed branch {branch['branch']} of {branch['width']}"
    return f"failed branch {index}"


def _failed_branch(branch: dict[str, Any], task_id: Any) -> str:
    """A branch by its short id; the task's own envelope, one of a join's branches, named as such."""
    where = f" at {branch['actor']}" if branch.get("actor") else ""
    why = error_text(branch.get("error")) or branch.get("reason")
    named = "the task's own envelope" if branch.get("id") == task_id else short_id(branch.get("id"))
    return f"{named} {branch.get('status')}{where}: {why}"


def _route(route: Any) -> Text:
    """Actors done, the current one (bold), actors to come."""
    if not isinstance(route, dict):
        return Text()
    steps = [
        *((actor, "dim") for actor in route.get("prev", [])),
        *([(route["curr"], "bold")] if route.get("curr") else []),
        *((actor, "") for actor in route.get("next", [])),
    ]
    return Text(" → ").join(Text(actor, style=style) for actor, style in steps)


def payload_summary(payload: Any) -> str:
    """`key=value` for the short scalar fields of a payload: enough to recognise it in a table."""
    if not isinstance(payload, dict):
        return json.dumps(payload, ensure_ascii=False)[:60]
    fields = [f"{k}={v}" for k, v in payload.items() if isinstance(v, str | int | float | bool) and len(str(v)) <= 24]
    return " ".join(fields) or json.dumps(payload, ensure_ascii=False)[:60]


def branches_text(branches: Any) -> str:
    if not isinstance(branches, dict):
        return ""
    counts = ("open", "succeeded", "failed", "canceled")
    return f"{branches.get('total', 0)} in all: " + ", ".join(f"{branches.get(c, 0)} {c}" for c in counts)
