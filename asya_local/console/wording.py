"""How the console's pages say values: a task's progress when it did not succeed, JSON on one line or
indented, a time in the reader's zone, how long ago. Jinja's globals and filters (`create_app`), kept
apart from the routes so that a page's wording is found, and tested, in one place."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from markupsafe import Markup

from asya.root_result import not_succeeded


def how_far(task: dict[str, Any]) -> str | None:
    """For a task that ended without succeeding (failed, canceled), how far it got, in words, instead of
    a bar: the gateway records every ended task at 100 %, which would read as done. A fan-out whose
    branches did not all succeed says how many failed or were canceled, as the gateway's error says it
    (`asya.root_result.not_succeeded`), and where, when its view names them: its own
    envelope's route may have ended well. Otherwise its route says where it stopped and how many of the
    route's actors were done before. None for any other task, whose progress is its bar (a succeeded
    one's full)."""
    if task.get("status") not in ("failed", "canceled"):
        return None
    short = not_succeeded(task.get("branches") or {})
    if short:
        where = sorted({str(branch["actor"]) for branch in task.get("failed_branches") or [] if branch.get("actor")})
        at = f" (at {', '.join(where)})" if where else ""
        return f"{short}{at}"
    route = task.get("route") or {}
    done, stopped = len(route.get("prev") or []), route.get("curr") or ""
    total = done + (1 if stopped else 0) + len(route.get("next") or [])
    if not total:
        return "did not finish"
    if stopped:
        return f"stopped at {stopped}, {done} of {total} actors done"
    return f"stopped after {done} of {total} actors"


def flattened(text: str, most: int) -> str:
    """`text` on one line (its line breaks and runs of spaces as single spaces), cut to `most`
    characters with an ellipsis: a list's row, a screen's error line; the whole is kept elsewhere."""
    flat = " ".join(text.split())
    return flat if len(flat) <= most else f"{flat[: most - 1]}…"


def one_line(value: Any, most: int = 400) -> str:
    """JSON on one line, in its own order (a branch's result in a list of them), cut to `most`
    characters with an ellipsis: the page shows it whole elsewhere (`pretty`)."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= most else text[: most - 1] + "…"


def rows_for(text: Any) -> int:
    """A text box's rows for what it is given: every line and one to type on, 4 to 24 (console.js keeps
    it so as it is typed in): a box of fewer rows clipped a payload's last line."""
    return max(4, min(24, str(text or "").count("\n") + 2))


def pretty(value: Any) -> Markup:
    """JSON as the pages show it: indented, escaped."""
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)
    return Markup.escape(text)


def moment(stamp: Any, shown: str | None = None) -> Markup:
    """A time as a `<time>` element: `shown` (the stamp itself by default) until the page's script puts
    it in the reader's local time; the UTC stamp stays on hover."""
    if not isinstance(stamp, str) or not stamp:
        return Markup("")
    if shown is not None:
        return Markup('<time datetime="{0}" title="{0} UTC">{1}</time>').format(stamp, shown)
    return Markup('<time datetime="{0}" title="{0} UTC" data-local>{0}</time>').format(stamp)


# an RFC 3339 time in UTC inside a message (a deadline the mesh wrote): `2026-11-28T20:22:44.791Z`
_STAMP = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")


def local_stamps(text: Any) -> Markup:
    """A message with each UTC time in it marked as `moment` marks one, so the page shows it in the
    reader's zone as every other time of the page (the stamp on hover); the rest escaped."""
    escaped = Markup.escape("" if text is None else str(text))
    return Markup(_STAMP.sub(lambda found: str(moment(found.group(0))), str(escaped)))


def ago(moment: Any) -> str:
    """`2026-11-26T10:00:00.000Z` as "3 s ago", "5 min ago"."""
    if not isinstance(moment, str):
        return ""
    try:
        then = dt.datetime.fromisoformat(moment.replace("Z", "+00:00"))
    except ValueError:
        return moment
    seconds = (dt.datetime.now(dt.UTC) - then).total_seconds()
    if seconds < 90:
        return f"{max(0, round(seconds))} s ago"
    if seconds < 5400:
        return f"{round(seconds / 60)} min ago"
    if seconds < 172_800:
        return f"{round(seconds / 3600)} h ago"
    return f"{round(seconds / 86_400)} days ago"
