"""What a client sees of a task: the record without its bookkeeping, branch counts made explicit."""

from __future__ import annotations

from typing import Any

import orjson

from asya.fans import OUTCOMES, FanCounts
from asya.task_record import TERMINAL, TaskStatus, hop_times

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
)
MAX_LISTED_BRANCHES = 100


def task_view(item: dict[str, Any]) -> dict[str, Any]:
    view = {name: item[name] for name in _SHOWN if item.get(name) is not None}
    if isinstance(item.get("output"), str):  # x-sink kept a small result in the record (JSON text)
        view["output"] = orjson.loads(item["output"])
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
    return view
