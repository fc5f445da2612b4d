"""What the crew kept for an envelope, as `asya results` shows it to a person: how it ended, its result
or its error (type, message, where it was raised and the last frames of its traceback), each on its
own row; the raw documents stay available (`asya results --output json`). `asya sump show` sums up
x-sump's copy of a message the same way, with when it arrived and whether it was redriven.

A traceback names files by the paths of the machine that ran the handler: a file under the folder the
command runs in (the project) is named from there, one of an installed library from its package, any
other by its name alone, so that what is shown (and pasted into an issue) says nothing of the machine.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from asya.envelope import visited
from asya.names import CREW, SUMP
from asya_local.console.wording import one_line
from asya_local.moments import local_time
from asya_local.results import RECORD_KEY, TASK_ENDED
from asya_local.screen import status_text
from asya_local.task_text import error_text, short_id

FRAMES_SHOWN = 3  # the last frames of a traceback: where the handler raised, and what called it
RESULT_SHOWN = 400  # characters of a result or input, on one line (`--output json` has it whole)
_KEPT_BY = {"sump": SUMP}  # x-sump's copy is kept as `sump.json`: titled by who kept it, as `asya sump show` does
_FILE = re.compile(r'File "([^"]+)"')
_LIBRARY = re.compile(r"/(?:site|dist)-packages/(.+)$")


def kept_table(doc: dict[str, Any], project: Path, more: Sequence[tuple[str, str]] = ()) -> Table:
    """One kept document (`asya_local.results`): a table titled by how it ended and its envelope;
    `more`: rows of what the keeper knows besides (x-sump's arrival), before where it is kept."""
    envelope = doc["envelope"]
    status = _status(envelope)
    error = _error(status)
    payload = envelope.get("payload")
    failure = isinstance(payload, dict) and error is not None and "original_payload" in payload
    trace = traceback_of(error, project)
    title = f"{_KEPT_BY.get(doc['outcome'], doc['outcome'])}: envelope {envelope.get('id', '')}"
    table = Table(show_header=False, title=title, title_justify="left")
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    phase = str(status.get("phase") or doc["outcome"])
    at = _where_it_ended(phase, status.get("actor"))
    route = envelope.get("route")
    rows: list[tuple[str, str | Text]] = [
        ("status", status_text(phase, f"{phase}{at}")),
        ("parent", short_id(envelope.get("parent_id"))),
        ("route", " → ".join(visited(route)) if isinstance(route, dict) else ""),
        ("reason", str(status.get("reason") or "")),
        ("error", error_text(error) if error else ""),
        ("where", where(trace)),
        ("traceback", Text("\n".join(last_frames(trace)), style="dim")),
        ("input", one_line(payload["original_payload"], RESULT_SHOWN) if failure else ""),
        ("result", "" if failure or payload is None else one_line(payload, RESULT_SHOWN)),
        *more,
        ("kept at", str(doc["key"])),
    ]
    for name, value in rows:
        if value:
            table.add_row(name, value)
    return table


def shown_once(docs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The documents to show, each failure once: a task record's copy of a failure that an object of
    the same envelope holds too (x-sump's copy, x-sink's `failed.json`) is left out, being the same
    error; the object is shown, whole (`--output json` lists both)."""
    kept_failures = {_failure(doc) for doc in docs if not _is_record(doc)} - {None}
    return [doc for doc in docs if not (_is_record(doc) and _failure(doc) in kept_failures)]


def task_row(doc: dict[str, Any], docs: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """For a fan-out root's own envelope, whose task its branches ended otherwise, how the task ended
    and through which branch, said once: the first failed branch among `docs`, with its error (its
    own block has the traceback)."""
    ended = doc.get(TASK_ENDED)
    if not ended:
        return []
    envelope_id = doc["envelope"].get("id")
    branches = [other for other in docs if other["envelope"].get("parent_id") == envelope_id]
    failed = [branch for branch in branches if _failure(branch) is not None]
    if not failed:
        return [("task", f"{ended} by its branches")]
    branch = failed[0]["envelope"]
    status = _status(branch)
    error = _error(status)
    cause = error_text(error) if error else str(status.get("reason") or "")
    failing = f"branch {short_id(branch.get('id'))} failed{_where_it_ended('failed', status.get('actor'))}"
    return [("task", f"{ended}: {failing}: {cause}" if cause else f"{ended}: {failing}")]


def _where_it_ended(phase: str, actor: Any) -> str:
    """` at score` for an envelope that failed (or stopped) at an actor, ` after triage` for one that
    ended well after its last actor; nothing when no actor is named, or only the crew."""
    if not actor or actor in CREW:
        return ""
    return f" after {actor}" if phase == "succeeded" else f" at {actor}"


def _status(envelope: dict[str, Any]) -> dict[str, Any]:
    """The envelope's status, or an empty one for a copy whose status is not a mapping."""
    status = envelope.get("status")
    return status if isinstance(status, dict) else {}


def _error(status: dict[str, Any]) -> dict[str, Any] | None:
    error = status.get("error")
    return error if isinstance(error, dict) else None


def _is_record(doc: dict[str, Any]) -> bool:
    return str(doc["key"]).startswith(RECORD_KEY)


def _failure(doc: dict[str, Any]) -> tuple[str, str, str] | None:
    """What makes a kept failure the same one wherever it is kept: its envelope, actor and error."""
    envelope = doc["envelope"]
    status = _status(envelope)
    error = _error(status) or {}
    if status.get("phase") != "failed":
        return None
    return str(envelope.get("id")), str(status.get("actor")), f"{error.get('type')}: {error.get('message')}"


def sump_table(shown: dict[str, Any], project: Path) -> Table:
    """A message x-sump kept, as the gateway shows it (`{entry, kept}`, or `kept_url` for a copy too
    large to carry): its copy summed up as `kept_table` sums up a result, with its task, when it
    arrived and where it was redriven. A copy that never parsed as an envelope, or is only linked, is
    told by what x-sump's list has of it, and the copy on one line or its link."""
    entry, kept = shown["entry"], shown.get("kept")
    parsed = isinstance(kept, dict) and isinstance(kept.get("status"), dict)
    redriven = entry.get("redriven_at")
    more = [
        ("task", short_id(entry.get("task_id")) if entry.get("task_id") != entry["id"] else ""),
        ("arrived", local_time(str(entry.get("arrived_at") or ""))),
        ("redriven", f"to {entry.get('redriven_to')} at {local_time(str(redriven))}" if redriven else ""),
    ]
    if not parsed:
        copy = f"too large to show here: {shown['kept_url']}" if shown.get("kept_url") else _one_line(kept)
        more.append(("kept", copy))
    listed = {"phase": "failed", "actor": entry.get("actor"), "reason": entry.get("reason")}
    error = {"type": entry.get("error_type"), "message": entry.get("message")}
    envelope = kept if parsed else {"id": entry["id"], "status": {**listed, "error": error}}
    return kept_table({"outcome": "x-sump", "key": entry.get("key", ""), "envelope": envelope}, project, more)


def _one_line(kept: Any) -> str:
    """A copy that is no envelope (a body that never parsed), on one line, trimmed."""
    text = " ".join(kept.split()) if isinstance(kept, str) else one_line(kept)
    return text if len(text) <= RESULT_SHOWN else f"{text[: RESULT_SHOWN - 1]}…"


def traceback_of(error: dict[str, Any] | None, project: Path) -> list[str]:
    """The error's traceback, line by line, with every file named without the machine's folders."""
    trace = error.get("traceback") if error else None
    return without_folders(trace, project).splitlines() if isinstance(trace, str) else []


def without_folders(trace: str, project: Path) -> str:
    """A traceback with every file it names as `shown_path` names it: what the CLI and the console show."""
    return _FILE.sub(lambda found: f'File "{shown_path(found.group(1), project)}"', trace)


def shown_path(path: str, project: Path) -> str:
    """`path` from the project's folder when under it, from its package when installed, else its name."""
    given = Path(path)
    if given.is_absolute() and given.is_relative_to(project):
        return str(given.relative_to(project))
    library = _LIBRARY.search(path)
    return library.group(1) if library else given.name


def where(trace: list[str]) -> str:
    """The frame the error was raised in: `file, line N, in function`."""
    frames = [line.strip() for line in trace if line.lstrip().startswith('File "')]
    return frames[-1].removeprefix("File ").replace('"', "") if frames else ""


def last_frames(trace: list[str], most: int = FRAMES_SHOWN) -> list[str]:
    """The traceback's last `most` frames and the error line, the frames before them counted."""
    starts = [index for index, line in enumerate(trace) if line.lstrip().startswith('File "')]
    if len(starts) <= most:
        return trace
    earlier = len(starts) - most
    return [f"  … {earlier} earlier frame{'s' if earlier != 1 else ''}", *trace[starts[-most] :]]
