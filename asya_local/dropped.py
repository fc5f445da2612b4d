"""What stopping the local stack drops, said before it is dropped.

The local endpoint keeps everything in memory (moto), so a stopped stack keeps no task, no result and
nothing x-sump held; the next `asya up` starts empty. `asya up` says so at its start, and at Ctrl-C
counts what goes: the tasks (roots, as `asya tasks` lists them; branches go with them) by status, and
x-sump's entries. The count is two scans of the endpoint that is about to stop (all in memory); it is given
`COUNT_SECONDS` and, failing that or failing at all, the stop says only that nothing is kept: a count
never holds up or breaks a stop.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

from asya.task_record import TaskStatus

COUNT_SECONDS = 3.0
KEPT_NOTHING = "a local stack keeps nothing once stopped"
FRESH = "a fresh local stack: tasks and x-sump entries of earlier runs are not kept"


@dataclass(frozen=True)
class Dropped:
    """Tasks by where they stood, and x-sump's entries."""

    running: int  # pending ones included: they were about to run
    paused: int
    ended: int
    sump: int


def stopping_line(dropped: Dropped | None) -> str:
    """What `asya up` says as it stops: what goes with the stack, when it could be counted."""
    if dropped is None:
        return f"stopping: {KEPT_NOTHING}"
    tasks = [(dropped.running, "running"), (dropped.paused, "paused"), (dropped.ended, "ended")]
    parts: list[str] = []
    for count, status in tasks:
        if count:
            noun = "" if parts else (" task" if count == 1 else " tasks")
            parts.append(f"{count} {status}{noun}")
    if dropped.sump:
        parts.append(f"{dropped.sump} {'entry' if dropped.sump == 1 else 'entries'} in x-sump")
    if not parts:
        return f"stopping: no tasks, x-sump empty ({KEPT_NOTHING})"
    listed = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
    return f"stopping, dropping {listed}: {KEPT_NOTHING}"


def count_dropped(dynamodb: Any, tasks_table: str | None, sump_table: str | None) -> Dropped:
    """Count the tasks by status (roots only: a branch names its root) and x-sump's entries."""
    statuses: Counter[str] = Counter()
    if tasks_table:
        pages = dynamodb.get_paginator("scan").paginate(
            TableName=tasks_table,
            FilterExpression="attribute_not_exists(root_id)",
            ProjectionExpression="#s",
            ExpressionAttributeNames={"#s": "status"},
        )
        statuses.update(item["status"]["S"] for page in pages for item in page.get("Items", []) if "status" in item)
    sump = 0
    if sump_table:
        pages = dynamodb.get_paginator("scan").paginate(TableName=sump_table, Select="COUNT")
        sump = sum(int(page.get("Count", 0)) for page in pages)
    return Dropped(
        running=statuses[TaskStatus.PENDING] + statuses[TaskStatus.RUNNING],
        paused=statuses[TaskStatus.PAUSED],
        ended=statuses[TaskStatus.SUCCEEDED] + statuses[TaskStatus.FAILED] + statuses[TaskStatus.CANCELED],
        sump=sump,
    )


def count_in_time(dynamodb: Any, tasks_table: str | None, sump_table: str | None) -> Dropped | None:
    """`count_dropped` within `COUNT_SECONDS`, or None if it failed or took longer (it is left to end
    in its own daemon thread)."""
    counted: list[Dropped] = []

    def count() -> None:
        with contextlib.suppress(Exception):  # the stop goes on without the count
            counted.append(count_dropped(dynamodb, tasks_table, sump_table))

    thread = threading.Thread(target=count, name="asya-count-dropped", daemon=True)
    thread.start()
    thread.join(COUNT_SECONDS)
    return counted[0] if counted else None
