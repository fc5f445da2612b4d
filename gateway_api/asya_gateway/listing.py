"""Tasks listed page by page, newest first, of one status or of all of them, narrowed by flow, actor
reached, time of creation and roots only (docs/status.md, "Listing tasks").

Every status has its own index, by creation time, which keeps keys only. A listing of one status reads
that index newest first. A listing of all statuses reads each status's index newest first and merges
them, taking the newest entry of any status each time, as a merge sort's last step does: the page is
newest first across statuses, and its cursor (`TaskCursor`) says where each status's read goes on. A
table scan would be cheaper by a query or so, but it returns tasks in no useful order, and a person
looking for a task looks among the newest.

A caller who is not an admin is shown its own tasks only (`asya_gateway.ownership`): the records read
are kept if they are its own (a branch if its root is), as the flow and actor filters keep theirs.
The index is not narrowed by owner, so such a listing reads the entries of every owner to fill its
page (up to `LISTING_READS`), and one batch of roots' owners for the branches among them."""

from __future__ import annotations

import datetime as dt
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ParamValidationError

from asya.dynamo import BatchIncompleteError
from asya.envelope import parse_rfc3339
from asya.task_record import RANKS
from asya.task_store import TaskStore
from asya_gateway.cursors import NOT_OURS, CursorSeal, TaskCursor
from asya_gateway.ownership import Ownership
from asya_gateway.task_error import TaskError
from asya_gateway.views import task_view

MAX_PAGE = 100
LISTING_READS = 1_000  # index entries one listing reads at most, over all statuses and reads
ALL = "all"  # the status a client gives for every status (the same as giving none)


def moment(name: str, text: str) -> dt.datetime:
    """A listing's `since` or `until` (`name`): an RFC 3339 time with its zone, or a 400 that says so."""
    found = parse_rfc3339(text.replace("Z", "+00:00"))
    if found is None:
        raise TaskError(400, f"{name}: {text[:40]!r} is not an RFC 3339 time with its zone (2026-11-25T10:00:00Z)")
    try:
        return found.astimezone(dt.UTC)
    except OverflowError:  # a first or last day of the calendar, moved to UTC, falls off it
        raise TaskError(400, f"{name}: {text[:40]!r} is out of the calendar's range") from None


@dataclass(frozen=True, slots=True)
class TaskFilter:
    """What a listing keeps besides the status: tasks created from `since` to `until` (RFC 3339 as task
    records write it, both kept: the index's sort key), of `flow`, that reached `actor` (its route
    visited it or is at it), `roots` only (fan-out branches left out)."""

    since: str | None = None
    flow: str | None = None
    roots: bool = False
    until: str | None = None
    actor: str | None = None

    def __post_init__(self) -> None:
        if self.since and self.until and self.until < self.since:
            raise TaskError(400, f"until: {self.until} is before since ({self.since})")

    def admits(self, item: dict[str, Any]) -> bool:
        if self.flow is not None and item.get("flow") != self.flow:
            return False
        if self.roots and item.get("root_id"):
            return False
        return self.actor is None or self.actor in reached(item)


def reached(item: dict[str, Any]) -> list[str]:
    """The actors a task's route has visited, and the one it is at."""
    route = item.get("route") or {}
    return [*route.get("prev", []), *([route["curr"]] if route.get("curr") else [])]


@dataclass(slots=True)
class _StatusRead:
    """One status's index entries, newest first, from where the cursor left it: those read and not yet
    taken, and whether the index holds more past them."""

    status: str
    after: dict[str, Any] | None
    read: deque[dict[str, Any]] = field(default_factory=deque)
    more: bool = True

    @property
    def open(self) -> bool:
        return bool(self.read) or self.more


class TaskListing:
    """The tasks of the mesh's table, as the gateway lists them (`GET /api/v1/mesh`)."""

    def __init__(self, tasks: TaskStore, ownership: Ownership, seal: CursorSeal) -> None:
        self.tasks = tasks
        self.ownership = ownership  # whose tasks the listing shows
        self.seal = seal  # its caller's: the cursor names entries the caller was not shown

    def page(
        self, status: str | None, limit: int, cursor: str | None, where: TaskFilter | None = None
    ) -> dict[str, Any]:
        """Newest first, of one status or (None, `all`) of every status, narrowed by `where`. The flow,
        actor and roots filters apply to the records read: a page is filled from as many reads as it
        takes, each asking for no more than the page still lacks, up to `LISTING_READS` index entries
        (a wide fan-out's branches come before their root, newest first); a page may then be short, and
        `next_cursor` goes on from where the reads stopped."""
        where = where or TaskFilter()
        status = None if status == ALL else status
        if status is not None and status not in RANKS:
            raise TaskError(400, f"status must be {ALL} or one of {', '.join(RANKS)}, got {status!r}")
        statuses = [status] if status else [str(name) for name in RANKS]
        position = (
            TaskCursor.decode(cursor, status, statuses, self.seal) if cursor else TaskCursor.first(statuses, status)
        )
        reads = [_StatusRead(name, after) for name, after in position.after.items()]
        before = position.before
        wanted = max(1, min(limit, MAX_PAGE))
        items: list[dict[str, Any]] = []
        read = 0
        while True:
            lacking, fresh = wanted - len(items), 0
            needing = [stream for stream in reads if not stream.read and stream.more]
            if needing and (read == 0 or read + len(needing) <= LISTING_READS):  # the budget, shared out
                each = max(1, min(lacking, (LISTING_READS - read) // len(needing)))
                fresh = sum(self._read(stream, where, each, before) for stream in needing)
            read += fresh
            taken = _merge(reads, lacking)
            if taken:
                before = str(taken[-1]["created_at"]["S"])
            items += self.records(where, taken)
            done = not any(stream.open for stream in reads)
            if done or len(items) >= wanted or read >= LISTING_READS or not (taken or fresh):
                break
        after = {stream.status: stream.after for stream in reads if stream.open}
        return {
            "tasks": [task_view(item) for item in items],
            "next_cursor": TaskCursor(after, before, status).encode(self.seal) if after else None,
        }

    def _read(self, stream: _StatusRead, where: TaskFilter, limit: int, before: str | None) -> int:
        """One read of a status's index, after its last entry taken; a status not read from yet is read
        from the listing's last task on (`before`), or from its newest. A cursor DynamoDB cannot take
        is a 400. Returns how many entries it read."""
        until = where.until if stream.after is not None or before is None else min(before, where.until or before)
        try:
            answer = self.tasks.page(stream.status, limit, stream.after, since=where.since, until=until)
        except self.tasks.client.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ValidationException":
                raise TaskError(400, NOT_OURS) from None
            raise
        except ParamValidationError:
            raise TaskError(400, NOT_OURS) from None
        stream.read.extend(answer.get("Items", []))
        stream.more = answer.get("LastEvaluatedKey") is not None
        return len(answer.get("Items", []))

    def records(self, where: TaskFilter, found: Sequence[dict[str, Any]]) -> Sequence[dict[str, Any]]:
        """The records of the index entries taken, in their order, those `where` admits and the caller
        sees."""
        ids = [entry["id"]["S"] for entry in found]
        try:
            records = self.tasks.get_many(ids)
            admitted = {task_id: record for task_id, record in records.items() if where.admits(record)}
            seen = self.ownership.seen(admitted)
        except BatchIncompleteError as exc:  # a page must not leave tasks out unnoticed
            raise TaskError(503, f"{exc}; ask for this page again") from exc
        return [admitted[task_id] for task_id in ids if task_id in seen]


def _merge(reads: list[_StatusRead], most: int) -> list[dict[str, Any]]:
    """Up to `most` index entries, newest first across the statuses' reads, each taken from its read,
    which then goes on after it. It stops early when a status has run out of entries read but its index
    holds more: the next of them may be newer than any other status's, so it must be read first."""
    taken: list[dict[str, Any]] = []
    while len(taken) < most and not any(not stream.read and stream.more for stream in reads):
        ready = [stream for stream in reads if stream.read]
        if not ready:
            break
        newest = max(ready, key=lambda stream: str(stream.read[0]["created_at"]["S"]))
        entry = newest.read.popleft()
        newest.after = entry
        taken.append(entry)
    return taken
