"""What a join that gave up (`JoinFailed`, `asya.gathering`) says, and how it is counted to the end.

The join gives up at the arrival that makes more branches failed than its `on_failure` tolerates, and
sends its failure then: the branches still on their way are not in it. Each one that fails after that
is counted on the record of the joined envelope (`into`, the root's own id for a join of the root's
fan) by its own arrival: `JOIN_FAILED_COUNT`, the fan's failed branches as the joins table counted
them when it arrived (written only when larger, so a redelivery, or an arrival that comes before a
later one's, changes nothing), and, for the first `FAILED_BRANCHES_NAMED` failures of the fan, the
branch in `JOIN_FAILED_LATER` (a set: a redelivery adds nothing). Either may be written before or
after x-sink records the join's failure; the gateway's view (`recounted`) says the two together:
"2 of 3 branches failed", naming each. Only failures cost these writes: a fan that succeeds, or a
failed join whose branches have all arrived, writes nothing more.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

FAILED_BRANCHES = "failed_branches"  # the error's failed branches: id, place, actor, type, message
FAILED_BRANCHES_NAMED = 10  # the first ten, as the gateway shows them; the message says how many failed
FAILED_COUNT = "failed_count"  # the error's count of failed branches when the join gave up
JOIN_FAILED_COUNT = "join_failed"  # the record's count of the fan's failed branches, once larger
JOIN_FAILED_LATER = "join_failed_later"  # the record's branches that failed after the join gave up
MESSAGE_CHARS = 300  # of a failed branch's message, as the join's error names it


def headline(failed: int, width: int) -> str:
    return f"{failed} of {width} branches failed"


def failed_branch(document: Mapping[str, Any], slot: int, width: int) -> dict[str, Any]:
    """One failed branch as the join's error names it: its id and place counted from 1 ("branch 2
    of 3"), so that the gateway can show its own record, and the actor it failed at with its handler's
    own error type and message (the reason only when there is no type), for the message, and for the
    joined envelope's own branch, whose record is the join's."""
    status = document.get("status") or {}
    error = status.get("error") or {}
    kind = error.get("type") or status.get("reason") or status.get("phase") or "failed"
    message = str(error.get("message") or status.get("reason") or "")[:MESSAGE_CHARS]
    named = {"id": document.get("id"), "branch": slot + 1, "width": width, "actor": status.get("actor")}
    return {**named, "type": kind, "message": message}


def said(branch: Mapping[str, Any]) -> str:
    """ "branch 2 of 3 (<id>) ValueError: review 2 has no text"."""
    return f"branch {branch['branch']} of {branch['width']} ({branch['id']}) {branch['type']}: {branch['message']}"


def join_failure_message(failed: int, width: int, on_failure: str, branches: Iterable[Mapping[str, Any]]) -> str:
    """The join's error message: how many failed, the policy, and each named branch's error."""
    return f"{headline(failed, width)} (on_failure: {on_failure}): " + "; ".join(said(branch) for branch in branches)


def later_entry(branch: Mapping[str, Any]) -> str:
    """A branch as `JOIN_FAILED_LATER` holds it: JSON with sorted keys, so that the same branch is
    the same member of the set however often it is added."""
    return orjson.dumps(branch, option=orjson.OPT_SORT_KEYS).decode()


def recounted(error: dict[str, Any], record: Mapping[str, Any]) -> dict[str, Any]:
    """A join's error with the failures that came after it gave up: the count the record holds (or the
    branches it names, if more), those branches named beside the first ones, and the message said
    again with them. An error of a join that gave up for another reason (its fan too wide) has no
    count, and is left as it is."""
    named = error.get(FAILED_BRANCHES)
    counted = error.get(FAILED_COUNT)
    later = record.get(JOIN_FAILED_LATER) or ()
    if not isinstance(named, list) or not isinstance(counted, int) or not (later or record.get(JOIN_FAILED_COUNT)):
        return error
    places = {branch.get("branch") for branch in named if isinstance(branch, dict)}
    more = [branch for branch in map(orjson.loads, later) if branch.get("branch") not in places]
    more.sort(key=lambda branch: int(branch.get("branch") or 0))
    failed = max(counted + len(more), int(record.get(JOIN_FAILED_COUNT) or 0))
    if failed == counted:
        return error
    width = next((int(branch["width"]) for branch in [*named, *more] if "width" in branch), failed)
    prefix = headline(counted, width)
    message = str(error.get("message") or "")
    told = [message.replace(prefix, headline(failed, width), 1), *(said(branch) for branch in more)]
    return {**error, "message": "; ".join(told), FAILED_COUNT: failed, FAILED_BRANCHES: [*named, *more]}
