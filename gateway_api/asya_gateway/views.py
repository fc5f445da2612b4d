"""What a client sees of a task: the record without its bookkeeping, branch counts made explicit, and
a failure said plainly.

A fan-out root whose own envelope ended well but whose branches did not is failed (or canceled) by
them: its view says so (`reason` `BranchFailed`, an `error` counting them) and does not show its own
envelope's output as the task's result. Which branches failed, and why, the gateway adds
(`failed_branches`, `TaskService`). A traceback is shown with the handler's frames first: the frames of
the mesh's own machinery and of installed libraries around them are folded into one line each run.
No fan-out root shows its own envelope's output as the task's result (`asya.root_result`).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from asya.fans import OUTCOMES, FanCounts
from asya.join_failure import recounted
from asya.reasons import Reason
from asya.root_result import not_succeeded, set_own_envelope_apart
from asya.task_record import TERMINAL, TaskStatus, hop_times
from asya_gateway.task_input import input_view

_SHOWN = (
    "id",
    "parent_id",
    "root_id",
    "flow",
    "status",
    "phase",
    "progress",
    "actor",
    "route",
    "attempt",
    "created_at",
    "updated_at",
    "deadline_at",
    "result",
    "reason",
    "error",
    "pause",
    "redrives",
    "joined_into",  # a branch a join gathered: the envelope its result went on in
    "rerun_of",  # a task run again: the task it runs again
    "program_version",  # a task of a flow program: the program it runs (docs/flows.md, "Versions")
    "owner",  # whom the task belongs to: the caller that created it (docs/callers.md); a branch, its root's
    "created_by",  # the role session that created it, when its owner is the role (docs/callers.md)
)
MAX_LISTED_BRANCHES = 100
BRANCH_FAILED = "BranchFailed"
# a frame of the mesh's machinery or of an installed library, not of the actor's own code
_FRAMEWORK_FRAME = re.compile(r'^  File ".*(/asya(_[a-z_]+)?/|/site-packages/|/lib/python3\.\d+/|<frozen )')


def task_view(item: dict[str, Any]) -> dict[str, Any]:
    view = {name: item[name] for name in _SHOWN if item.get(name) is not None}
    if isinstance(item.get("output"), str) and not failed(item):  # x-sink kept a small result (JSON text)
        view["output"] = orjson.loads(item["output"])
    view.update(input_view(item))  # what the task was started with (`asya_gateway.task_input`)
    view.setdefault("status", TaskStatus.PENDING.value)
    view.setdefault("progress", 0)
    view["terminal"] = view["status"] in TERMINAL
    if item.get("hops"):
        view["hops"] = hop_times(item)
    branches = item.get("branch_ids") or set()
    fans = FanCounts.of(item.get("fans"))  # a wide fan-out's branches, counted by bucket (`asya.fans`)
    if branches or fans.branches:
        total = len(branches) + fans.branches + 1
        ended = {outcome: item.get(f"n_{outcome}", 0) + fans.outcome(outcome) for outcome in OUTCOMES}
        view["branches"] = {"total": total, "open": max(0, total - sum(ended.values())), **ended}
        view["branch_ids"] = sorted(branches)[:MAX_LISTED_BRANCHES]
        set_own_envelope_apart(view)
        if _ended_by_branches(item, view):
            _failed_by_branches(view)
    if view.get("reason") == Reason.JOIN_FAILED and isinstance(view.get("error"), dict):
        view["error"] = recounted(view["error"], item)  # with the branches that failed after it gave up
    if isinstance(view.get("error"), dict) and isinstance(view["error"].get("traceback"), str):
        view["error"] = {**view["error"], "traceback": fold_traceback(view["error"]["traceback"])}
    return view


def failed(item: dict[str, Any]) -> bool:
    """Whether the task's own envelope failed (a fan-out root's as `own_outcome` says, whose branches
    may have failed it while it ended well): what x-sink kept of it is then its error payload
    (`{error, details, original_payload}`), which the view's `reason` and `error` say, not a result."""
    return (item.get("own_outcome") or item.get("status")) == TaskStatus.FAILED


def _ended_by_branches(item: dict[str, Any], view: dict[str, Any]) -> bool:
    """Whether a root ended failed or canceled by its branches alone: its own envelope ended otherwise,
    and nothing ended it with a reason of its own (a cancel, a deadline)."""
    badly = view["terminal"] and view["status"] != TaskStatus.SUCCEEDED
    return badly and item.get("own_outcome") != view["status"] and not item.get("reason")


def _failed_by_branches(view: dict[str, Any]) -> None:
    """The root ended failed (or canceled) because branches did: say so."""
    view["reason"] = BRANCH_FAILED
    view["error"] = {"message": not_succeeded(view["branches"]), "type": None}


def fold_traceback(trace: str) -> str:
    """The traceback with each run of frames outside the actor's code folded into one line."""
    lines, folded = trace.splitlines(), []
    index = 0
    while index < len(lines):
        if not _FRAMEWORK_FRAME.match(lines[index]):
            folded.append(lines[index])
            index += 1
            continue
        start = index
        while index < len(lines) and (
            _FRAMEWORK_FRAME.match(lines[index]) or (index > start and lines[index].startswith("    "))
        ):
            index += 1
        frames = sum(1 for line in lines[start:index] if line.startswith('  File "'))
        folded.append(f"  ... {frames} frame{'s' if frames != 1 else ''} of the mesh and its libraries")
    return "\n".join(folded)
