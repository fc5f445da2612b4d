"""Tasks found by the start of their id, whatever its case: what a short id names (`GET /mesh?id_prefix=`,
docs/status.md, "Finding a task by the start of its id").

A person copies the 8 characters a table shows, or types them in capitals, and means one task among
every task it may see, however old. Each record carries the keys of the tasks table's `by-id-prefix`
index (`asya.short_ids`), so a prefix is a query of one partition of it, keys only, in the order of
the lowercased ids: the records of the entries read are read as a listing reads its page, and the
caller is shown those it sees (its own, and branches of its own roots; an admin every one). A caller
who is not an admin may have to read past other callers' tasks: up to `PREFIX_READS` index entries.

The task whose id is the prefix itself comes first, read by its key: an id shorter than the index's
head, and a record written before the index existed, are found by their whole id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from asya.short_ids import ID_HEAD_LENGTH
from asya_gateway.listing import TaskFilter, TaskListing
from asya_gateway.task_error import TaskError
from asya_gateway.views import task_view

PREFIX_READS = 100  # index entries one search reads at most


def refuse_filters(given: Mapping[str, Any]) -> None:
    """An id prefix finds a task whatever its status, flow or age: a listing's filters given with it
    would narrow what a person typed an id for, so they are a 400 that names them."""
    named = [name for name, value in given.items() if value]
    if named:
        raise TaskError(400, f"id_prefix: give it without {', '.join(named)} (it finds tasks by their id alone)")


def tasks_starting_with(listing: TaskListing, given: str, limit: int) -> dict[str, Any]:
    """The tasks the caller sees whose id starts with `given`, whatever its case, the one whose id it is
    first, then by id, at most `limit` (`tasks`, as a listing's page); `more`: whether more may
    match. A prefix shorter than `ID_HEAD_LENGTH` finds only the task whose whole id it is."""
    exact = listing.tasks.get(given)
    found = [exact] if exact is not None and listing.ownership.sees(exact) else []
    if len(given) < ID_HEAD_LENGTH and not found:
        raise TaskError(
            400, f"id_prefix: give at least {ID_HEAD_LENGTH} characters of a task's id, or its whole id (got {given!r})"
        )
    start: Mapping[str, Any] | None = None
    read, more = 0, len(given) >= ID_HEAD_LENGTH
    while more and len(found) <= limit and read < PREFIX_READS:
        answer = listing.tasks.starting_with(given, min(limit + 1 - len(found), PREFIX_READS - read), start)
        entries: Sequence[dict[str, Any]] = [entry for entry in answer.get("Items", []) if entry["id"]["S"] != given]
        read += len(answer.get("Items", []))
        start = answer.get("LastEvaluatedKey")
        more = start is not None
        found += listing.records(TaskFilter(), entries)
    return {
        "tasks": [task_view(item) for item in found[:limit]],
        "next_cursor": None,
        "more": len(found) > limit or more,
    }
