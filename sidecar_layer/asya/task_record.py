"""A task record: the statuses and their order, and what a record says (docs/status.md).

Every transition is a conditional write (`asya.task_store`), so concurrent or late updates can never
move a task backwards:

    pending(0) < running(1) < paused(2) < succeeded | failed | canceled(3)

A stale update fails its condition and is dropped silently; a terminal status is never overwritten;
`running` may repeat (with progress that never decreases); only a resume moves `paused` → `running`.

Watching: a watcher marks the record (`watched_until`, epoch seconds, `watch`), and the stream
consumer logs a status event only for a change made while a mark held (`watched`): a task nobody
follows costs no event-log writes (docs/status.md, "Following a task live").
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, IntEnum, StrEnum
from typing import Any

from asya.envelope import Phase, parse_rfc3339, rfc3339
from asya.fans import FanCounts
from asya.headers import REDRIVE_HEADER, ROOT_HEADER, STEALTH_HEADER
from asya.names import PAUSE

OPEN = "open"  # `open_shard` value: the task is in the deadline index until it ends or pauses
# How long one watch mark keeps a task's status changes flowing into its event log; a watcher renews
# it once less than half is left, so a long follow costs one write per half of this.
WATCH_SECONDS = 600


class Ending(Enum):
    """What `TaskStore.finish` did with an envelope's end."""

    RECORDED = "recorded"  # written where the record shows it (or will, for a root still waiting for branches)
    ALREADY = "already"  # an earlier delivery of the same envelope had recorded it: nothing to do
    LATE = "late"  # the task had ended otherwise first (canceled, timed out): none of the details were kept


class Rank(IntEnum):
    PENDING = 0
    RUNNING = 1
    PAUSED = 2
    TERMINAL = 3


class TaskStatus(StrEnum):
    """A task record's `status`: where the task stands as a whole (each envelope's `Phase` says where
    that envelope is). Only moves up its `rank`, except `paused` back to `running` (docs/status.md)."""

    PENDING = "pending"
    RUNNING = "running"
    PAUSED = "paused"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELED = "canceled"

    @property
    def rank(self) -> Rank:
        return RANKS[self]


TERMINAL = (TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.CANCELED)
RANKS = {
    TaskStatus.PENDING: Rank.PENDING,
    TaskStatus.RUNNING: Rank.RUNNING,
    TaskStatus.PAUSED: Rank.PAUSED,
} | dict.fromkeys(TERMINAL, Rank.TERMINAL)

# The statuses that stop a task's envelopes at their next hop (the pre-flight check: a Lambda actor's
# sidecar, a Spark actor's dispatcher), and the phase each envelope then ends with.
HALTING: dict[str, Phase] = {TaskStatus.CANCELED: Phase.CANCELED, TaskStatus.PAUSED: Phase.PAUSED}


def stealthy(headers: Mapping[str, Any]) -> bool:
    """`x-asya-mesh-status: off` turns off status reporting and the pre-flight check for an envelope."""
    return str(headers.get(STEALTH_HEADER, "")).lower() == "off"


def root_of(envelope_id: str, headers: Mapping[str, Any]) -> str:
    root = headers.get(ROOT_HEADER)
    return root if isinstance(root, str) and root else envelope_id


def redrives(headers: Mapping[str, Any]) -> int:
    """The envelope's redrive count (`REDRIVE_HEADER`), 0 if it was never redriven."""
    count = headers.get(REDRIVE_HEADER)
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 0


def progress_of(route: Mapping[str, Any]) -> float:
    """Progress (docs/spec/envelope.md, "The route") for a route as it leaves an actor: actors done over
    actors in the whole route."""
    done = len(route["prev"])
    total = done + (1 if route["curr"] else 0) + len(route["next"])
    return round(100.0 * done / total, 2) if total else 100.0


def hop_times(item: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A record's hops (`TaskStore.claim_hop`'s history) as people read them: the actor (from the
    route's position), the attempt, when it was claimed, and how long until the next hop was claimed
    (for the last, until the task ended; None while it runs). A hop claimed again after its holder
    died appears twice. A person's wait at x-pause (`TaskStore.pause` starts it) is a line of its own,
    `waiting`, from the pause to the next hop's claim after the resume."""
    route = item.get("route") or {}
    visited = [*route.get("prev", []), route.get("curr") or ""]
    history = [entry for entry in item.get("hops") or [] if isinstance(entry, list) and len(entry) == 3]
    ended = parse_rfc3339(item.get("updated_at")) if item.get("rank", 0) >= Rank.TERMINAL else None
    times = []
    for index, (position, attempt, claimed) in enumerate(history):
        after = history[index + 1][2] if index + 1 < len(history) else None
        until = after / 1000 if after is not None else ended.timestamp() if ended is not None else None
        actor = visited[position] if 0 <= position < len(visited) else ""
        times.append(
            {
                "actor": actor,
                "waiting": actor == PAUSE,
                "attempt": attempt,
                "started_at": rfc3339(dt.datetime.fromtimestamp(claimed / 1000, dt.UTC)),
                "seconds": None if until is None else round(max(0.0, until - claimed / 1000), 3),
            }
        )
    return times


def watched(item: Mapping[str, Any]) -> bool:
    """Whether a record's change (stamped `updated_at` by every visible write) was made while a
    watcher's mark held. The change's own time, not the reader's, so a stream consumer running late
    still logs what a watcher was there for."""
    until = item.get("watched_until")
    changed = parse_rfc3339(item.get("updated_at"))
    return isinstance(until, int | float) and changed is not None and changed.timestamp() <= until


def watch_lapses_soon(item: Mapping[str, Any], now: dt.datetime) -> bool:
    """Whether a watcher should renew its mark: missing, or less than half of `WATCH_SECONDS` left."""
    until = item.get("watched_until")
    return not isinstance(until, int | float) or until - now.timestamp() < WATCH_SECONDS / 2


@dataclass(frozen=True, slots=True)
class Report:
    """One progress point of one envelope at one actor."""

    task_id: str
    actor: str
    route: dict[str, Any]
    phase: str
    progress: float
    attempt: int = 1
    parent_id: str | None = None
    root_id: str | None = None
    bucket: str | None = None  # a branch counted in a bucket (`asya.fans`): which


@dataclass(slots=True)
class Tally:
    """The branch endings of one crew batch, counted on their roots after the batch: one write per
    root rather than one per branch (one per bucket, for branches counted in buckets). `seen` holds
    each root as a write of this batch returned it (the count of its own ending, usually in the same
    batch), from which the count can tell that it ends the root and end it in the same write."""

    # (root, bucket or None) -> {member: outcome}
    pending: dict[tuple[str, str | None], dict[str, str]] = field(default_factory=dict)
    seen: dict[str, dict[str, Any]] = field(default_factory=dict)  # root -> record, as last written

    def add(self, root_id: str, member: str, outcome: str, bucket: str | None = None) -> None:
        self.pending.setdefault((root_id, bucket), {})[member] = outcome


def root_outcome(root: Mapping[str, Any]) -> TaskStatus:
    """How a root whose envelopes all ended ends: failed if any failed, else canceled if any was (its
    own ids' counts, and those of its closed buckets)."""
    fans = FanCounts.of(root.get("fans"))
    if root.get("n_failed") or fans.outcome(TaskStatus.FAILED):
        return TaskStatus.FAILED
    return TaskStatus.CANCELED if root.get("n_canceled") or fans.outcome(TaskStatus.CANCELED) else TaskStatus.SUCCEEDED


def root_ending(root: Mapping[str, Any], final: str) -> dict[str, Any]:
    """What the root's final write copies from its own ending: its result, and its reason, error and
    the actor it ended at if that is how the root ended (a join that failed: the join's actor, not the
    last actor whose hop was claimed), with the join's place in its hops (`unclaimed_hop`)."""
    failed_itself = ("reason", "error", "actor", "unclaimed_hop")
    kept = ("result", "output", "route") + (failed_itself if root.get("own_outcome") == final else ())
    return {name: root.get(f"own_{name}") for name in kept}
