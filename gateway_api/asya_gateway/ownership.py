"""Which tasks a caller sees (docs/callers.md, "Each caller's tasks").

A task belongs to the caller that created it: the gateway writes `owner` into the record it creates.
A fan-out branch's record is created by the actor that runs it, which does not know the owner, and
carrying the owner on every hop (a header, and a field in each hop's write) would cost every hop for
what only a read needs: so a branch belongs to its root's owner, and the root's owner is read when
a branch is asked for (one read of the root's id and owner, for a caller who is not an admin). An
x-sump entry belongs to its envelope's task, whose root the entry names.

A caller who may not see a task is answered as if it did not exist (`TaskService`): the same 404, so
that task ids do not leak.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from asya.task_store import TaskStore
from asya_gateway.callers import OWNER_ATTRIBUTE, Caller


def root_id(record: Mapping[str, Any]) -> str:
    """The task whose owner owns this record: its root's for a branch, its own otherwise."""
    return str(record.get("root_id") or record["id"])


class Ownership:
    """What one caller sees of the tasks table. An admin sees everything without a read."""

    def __init__(self, tasks: TaskStore, caller: Caller) -> None:
        self.tasks = tasks
        self.caller = caller

    def sees(self, record: Mapping[str, Any]) -> bool:
        """Whether the caller sees this task record; a branch's root is read for its owner."""
        if self.caller.admin:
            return True
        if not record.get("root_id"):
            return self.caller.sees(record.get(OWNER_ATTRIBUTE))
        return root_id(record) in self.seen_roots([root_id(record)])

    def seen(self, records: Mapping[str, Mapping[str, Any]]) -> set[str]:
        """The ids of the records (by id) the caller sees: the roots among them by their own owner, and
        the branches by their roots', those not among the records read in one batch."""
        if self.caller.admin:
            return set(records)
        known = {
            task_id: record.get(OWNER_ATTRIBUTE) for task_id, record in records.items() if not record.get("root_id")
        }
        missing = {root_id(record) for record in records.values()} - set(known)
        owners = {**known, **(self.tasks.owners(missing) if missing else {})}
        return {task_id for task_id, record in records.items() if self.caller.sees(owners.get(root_id(record)))}

    def seen_roots(self, root_ids: Iterable[str]) -> set[str]:
        """Of these roots (an x-sump entry's `task_id`), those the caller sees, read in one batch."""
        wanted = set(root_ids)
        if self.caller.admin:
            return wanted
        return {task_id for task_id, owner in self.tasks.owners(wanted).items() if self.caller.sees(owner)}
