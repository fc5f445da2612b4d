"""A task's log lines, for its page: the lines its hops wrote (the sidecar's and the handlers' own log
records, which name the hop's envelope and task, `asya.hop_logging`), from the local stack's worker
log or, on AWS, from CloudWatch Logs Insights, behind one small interface (`TaskLogs`).

Both are bounded: the newest `LINES_SHOWN` lines of the task (its branches' included), and locally
only the last `TAIL_BYTES` of the worker log are read per page view, so a log of hundreds of MB costs
the same as a small one (a task whose lines are older than that shows none, and the page says so).
What a handler prints with `print` is not a log record, names no task, and is not found.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from asya_local.moments import recorded
from asya_local.worklog import SEPARATOR

LINES_SHOWN = 200
TAIL_BYTES = 4 * 1024 * 1024
QUERY_SECONDS = 8.0  # how long a page waits for CloudWatch Logs Insights' answer
QUERY_POLL_SECONDS = 0.5
LOG_GROUPS_PER_QUERY = 50  # CloudWatch Logs Insights' limit
# Logs Insights bills each GB a query scans, over every group for the whole span: a task page searches
# the task's newest day, however long the task ran (a 30-day deadline, a paused task)
QUERY_WINDOW_SECONDS = 86_400
# a task id as the mesh makes them (uuids, or ids a producer chose): what a query may hold unquoted
TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


@dataclass(frozen=True)
class LogLine:
    """One line a hop wrote: when, which function, at what level, and what it says."""

    at: str
    source: str
    message: str
    level: str = ""
    envelope_id: str = ""


@dataclass(frozen=True)
class FoundLines:
    lines: list[LogLine]
    where: str  # what was searched, as the page says it
    note: str = ""  # why there may be lines missing (the query ran out of time, a bound was reached)


class TaskLogs(Protocol):
    def lines(self, task: dict[str, Any]) -> FoundLines:
        """The newest log lines of `task` (a task as the gateway reports it), oldest first."""


def parsed(at: str, source: str, text: str) -> LogLine:
    """A line's text, as a JSON log record (the runtime's or Powertools') or as it is."""
    try:
        record = orjson.loads(text)
    except orjson.JSONDecodeError:
        record = None
    if not isinstance(record, dict):
        return LogLine(at, source, text)
    message = record.get("message", text)
    return LogLine(
        at,
        source,
        said(message if isinstance(message, str) else orjson.dumps(message).decode(), record),
        str(record.get("level") or record.get("log_level") or ""),
        str(record.get("envelope_id") or record.get("correlation_id") or ""),
    )


def said(message: str, record: dict[str, Any]) -> str:
    """A record's message with the error it names, as one line: a failure's record says "handler
    failed" and carries what failed as fields (`error_type`, `error_message`, or `error` in the
    crew's), which a reader of the task's log wants beside it ("handler failed: ValueError: review 2
    has no text"), not only in the task's error further up the page."""
    error = record.get("error_message") or record.get("error")
    named = [part for part in (record.get("error_type"), error) if part and isinstance(part, str)]
    return ": ".join([message, *named])


def names_task(text: str, task_id: str) -> bool:
    """Whether a line is a log record of the task, as the AWS query finds them: a JSON record whose
    `task_id`, `envelope_id` or `correlation_id` is the id (not a line that merely mentions it, such
    as the local gateway's access log)."""
    try:
        record = orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return isinstance(record, dict) and task_id in (
        record.get("task_id"),
        record.get("envelope_id"),
        record.get("correlation_id"),
    )


class LocalTaskLogs:
    """The lines of the local stack's worker log (`<time> <function> | <text>`) that name the task."""

    def __init__(self, path: Path, tail_bytes: int = TAIL_BYTES, shown: int = LINES_SHOWN) -> None:
        self.path = path
        self.tail_bytes = tail_bytes
        self.shown = shown

    def lines(self, task: dict[str, Any]) -> FoundLines:
        task_id = str(task.get("id", ""))
        where = f"the worker log {self.path}"
        try:
            with self.path.open("rb") as log:
                size = log.seek(0, 2)
                start = max(0, size - self.tail_bytes)
                log.seek(start)
                chunk = log.read(size - start)
        except OSError as exc:
            return FoundLines([], where, f"it cannot be read: {exc.strerror}")
        if start:  # the first line read is a piece of one
            chunk = chunk.partition(b"\n")[2]
            where = f"the last {_size(self.tail_bytes)} of {where}"
        needle = task_id.encode()
        found = []
        for raw in chunk.splitlines():
            if needle not in raw:  # most lines are passed over without being parsed
                continue
            head, _, text = raw.decode("utf-8", "replace").partition(SEPARATOR)
            at, _, source = head.partition(" ")
            if names_task(text, task_id):
                found.append(parsed(at, source, text))
        note = f"the newest {self.shown} of its {len(found)} lines" if len(found) > self.shown else ""
        return FoundLines(found[-self.shown :], where, note)


class CloudWatchTaskLogs:
    """The task's lines in the mesh's functions' log groups, by CloudWatch Logs Insights: one query
    (`StartQuery`) over the task's time, polled (`GetQueryResults`) for up to `QUERY_SECONDS`. The
    functions log JSON (`asya_cdk.actor`), so the hop's `task_id` and `envelope_id` are fields, and
    the crew's records name the envelope they keep as Powertools' `correlation_id`."""

    def __init__(
        self,
        logs: Any,
        log_groups: list[str],
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logs = logs
        self.log_groups = log_groups[:LOG_GROUPS_PER_QUERY]
        self.left_out = len(log_groups) - len(self.log_groups)
        self.sleep = sleep
        self.clock = clock

    def lines(self, task: dict[str, Any]) -> FoundLines:
        task_id = str(task.get("id", ""))
        where = f"CloudWatch Logs, {len(self.log_groups)} log groups of the mesh's functions"
        if not TASK_ID.match(task_id) or not self.log_groups:
            return FoundLines([], where)
        begins, ends = _span(task)
        notes = []
        if begins < ends - QUERY_WINDOW_SECONDS:
            begins = ends - QUERY_WINDOW_SECONDS
            notes.append("only the task's newest 24 hours are searched")
        if self.left_out:
            notes.append(f"{self.left_out} log groups past Logs Insights' {LOG_GROUPS_PER_QUERY} are not searched")
        query = (
            "fields @timestamp, @log, @message"
            f' | filter task_id = "{task_id}" or envelope_id = "{task_id}" or correlation_id = "{task_id}"'
            f" | sort @timestamp desc | limit {LINES_SHOWN}"
        )
        started = self.logs.start_query(
            logGroupNames=self.log_groups, startTime=begins, endTime=ends, queryString=query, limit=LINES_SHOWN
        )
        deadline = self.clock() + QUERY_SECONDS
        while True:
            answer = self.logs.get_query_results(queryId=started["queryId"])
            if answer["status"] in ("Complete", "Failed", "Cancelled", "Timeout") or self.clock() >= deadline:
                break
            self.sleep(QUERY_POLL_SECONDS)
        found = [_insights_line(row) for row in answer.get("results", [])]
        if answer["status"] != "Complete":
            notes.append(f"the query was {answer['status'].lower()}: reload for more")
        return FoundLines(list(reversed(found)), where, "; ".join(notes))


def _size(count: int) -> str:
    for unit, size in (("MB", 1024 * 1024), ("KB", 1024)):
        if count >= size:
            return f"{count // size} {unit}"
    return f"{count} bytes"


def _span(task: dict[str, Any]) -> tuple[int, int]:
    """The task's time, in epoch seconds, a minute wider on each side (clocks, the last lines)."""
    now = dt.datetime.now(dt.UTC)
    created = recorded(task.get("created_at")) or now - dt.timedelta(days=1)
    ended = recorded(task.get("updated_at")) if task.get("terminal") else None
    return int(created.timestamp()) - 60, int((ended or now).timestamp()) + 60


def _insights_line(row: list[dict[str, str]]) -> LogLine:
    fields = {field["field"]: field["value"] for field in row}
    source = fields.get("@log", "").rpartition("/")[2]  # `<account>:/aws/lambda/<function>`: the function
    stamp = fields.get("@timestamp", "")  # `2026-11-27 10:00:00.123`, in UTC
    return parsed(stamp.replace(" ", "T") + "Z" if stamp else "", source, fields.get("@message", ""))
