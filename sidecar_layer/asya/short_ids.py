"""Short ids: the first characters of a task's id, as every table shows them (8), found among every
task by the gateway, whatever their case (docs/status.md, "Finding a task by the start of its id").

A task's record carries two keys of the tasks table's `by-id-prefix` index, written by whichever
write makes the record (the gateway's create, a producer's admission, a hop's claim, an ending):
`id_head`, the first `ID_HEAD_LENGTH` characters of its id lowercased (the index's partition), and
`id_lower`, the id lowercased (its sort key). A prefix is then one query: the partition of its own
first characters, ids that begin with it. Lowercasing is for finding only: the record's `id` is the
id as it was given, and what is found is answered with it.

The head is short so that a prefix that short can be looked for, and long enough that ids spread
over many partitions (256 for UUIDs). Ids that share their first characters (named ones, `order-…`)
share a partition, which takes about 1,000 new tasks a second. A record written before the index
existed has neither key: it is found by its whole id only, until its next hop writes them.
"""

from __future__ import annotations

ID_HEAD_LENGTH = 2  # the shortest prefix the index can look for
ID_HEAD = "id_head"
ID_LOWER = "id_lower"
# a sort key is at most 1,024 bytes: 255 characters of up to 4 bytes (a task id has at most 256)
ID_LOWER_MAX = 255


def lowered(given: str) -> str:
    """A prefix or an id as the index keeps it."""
    return given.lower()[:ID_LOWER_MAX]


def lookup_keys(task_id: str) -> dict[str, str]:
    """The index's keys for a task id: its head and the lowercased id."""
    folded = lowered(task_id)
    return {ID_HEAD: folded[:ID_HEAD_LENGTH], ID_LOWER: folded}


def lookup_sets(task_id: str) -> tuple[list[str], dict[str, str]]:
    """The index's keys as an update writes them: SET clauses that keep the keys a record has (they
    never change), and their values."""
    keys = lookup_keys(task_id)
    return [f"{name} = if_not_exists({name}, :{name})" for name in keys], {
        f":{name}": value for name, value in keys.items()
    }
