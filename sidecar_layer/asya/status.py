"""Task records: one DynamoDB item per envelope id, moved forward only (docs/status.md).

Every writer (gateway, sidecar, crew, backstop) goes through `TaskStore`, and every transition is a
conditional write, so concurrent or late updates can never move a task backwards:

    pending(0) < running(1) < paused(2) < succeeded | failed | canceled(3)

A stale update fails its condition and is dropped silently; a terminal status is never overwritten;
`running` may repeat (with progress that never decreases); only a resume moves `paused` → `running`.

Watching: a watcher marks the record (`watched_until`, epoch seconds, `watch`), and the stream
consumer logs a status event only for a change made while a mark held (`watched`): a task nobody
follows costs no event-log writes (docs/status.md, "Following a task live").

Fan-out: every branch (child envelope) is registered on the **root** task before it is sent
(`branch_ids`), and every branch that ends is added to the root's `done_ids` once (a string set, so a
redelivered x-sink cannot count twice). The root becomes terminal when its own envelope and every
branch are done. A task without branches becomes terminal with a single write. The crew counts the
branches that end in one of its batches together (`Tally`): one write per root, which also ends the
root when they are the last. A root keeps at most `asya.fans.INLINE_BRANCHES` ids itself; the
branches of a fan-out that does not fit are counted in buckets beside it (`asya.fans`), and the root
holds a copy of their counter (`fans`).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import Enum, IntEnum, StrEnum
from typing import TYPE_CHECKING, Any, Literal

from asya.clients import LazyClient
from asya.dedup import Claim, HopClaim
from asya.dynamo import DEFAULT_BACKOFF, Backoff, BatchIncompleteError, batch_get
from asya.envelope import rfc3339
from asya.fans import INLINE_BRANCHES, FanBuckets, FanCounts, assign, is_fan_item
from asya.headers import REDRIVE_HEADER, ROOT_HEADER, STEALTH_HEADER
from asya.names import BY_DEADLINE
from asya.reasons import Reason

if TYPE_CHECKING:
    from types_boto3_dynamodb.client import DynamoDBClient

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
    died appears twice."""
    route = item.get("route") or {}
    visited = [*route.get("prev", []), route.get("curr") or ""]
    history = [entry for entry in item.get("hops") or [] if isinstance(entry, list) and len(entry) == 3]
    ended = _parse(item.get("updated_at")) if item.get("rank", 0) >= Rank.TERMINAL else None
    times = []
    for index, (position, attempt, claimed) in enumerate(history):
        after = history[index + 1][2] if index + 1 < len(history) else None
        until = after / 1000 if after is not None else ended.timestamp() if ended is not None else None
        times.append(
            {
                "actor": visited[position] if 0 <= position < len(visited) else "",
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
    changed = _parse(item.get("updated_at"))
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


def _refused(record: Mapping[str, Any], position: int, attempt: int) -> HopClaim:
    """Why a hop's claim was refused, from the record as it was (DynamoDB returns it with the refusal)."""
    if record.get("rank", 0) > Rank.RUNNING:
        return HopClaim(Claim.HALTED, halted=str(record.get("status")))
    if (record.get("hop_position", -1), record.get("hop_attempt", 0)) == (position, attempt):
        return HopClaim(Claim.IN_PROGRESS, held_until=int(record.get("hop_held_until", 0)))
    return HopClaim(Claim.DUPLICATE)


class TaskStore:
    client: LazyClient[DynamoDBClient] = LazyClient("dynamodb")

    def __init__(
        self,
        table: str,
        ttl_seconds: int = 7 * 86_400,
        client: DynamoDBClient | None = None,
        backoff: Backoff = DEFAULT_BACKOFF,
        output_ttl_seconds: int = 0,
    ) -> None:
        """`output_ttl_seconds`: how long a record that holds its task's result (`output`, kept by
        x-sink instead of an S3 object) stays, if longer than `ttl_seconds`: the results' retention."""
        self.table = table
        self.ttl_seconds = ttl_seconds
        self.output_ttl_seconds = output_ttl_seconds
        self._client = client
        self.backoff = backoff

    @property
    def fans(self) -> FanBuckets:
        """The buckets of wide fan-outs, in this table (`asya.fans`)."""
        return FanBuckets(self.client, self.table, self.ttl_seconds, to_item, from_item)

    # -- creating -------------------------------------------------------------------------------------

    def create(self, item: dict[str, Any]) -> dict[str, Any] | None:
        """A new task as the gateway starts it: the record as written, None if the id is taken. The
        record is what a read would return right after, so the gateway answers without reading it
        back (a strongly consistent read per task, a quarter of a 4-hop task's read units)."""
        now = rfc3339(_now())
        record = {
            "status": TaskStatus.PENDING,
            "rank": int(Rank.PENDING),
            "progress": 0,
            "created_at": now,
            "updated_at": now,
        }
        record.update(item)
        if record.get("deadline_at"):
            record["open_shard"] = OPEN
        written = to_item(record)
        created = self._write(
            self.client.put_item, TableName=self.table, Item=written, ConditionExpression="attribute_not_exists(id)"
        )
        return from_item(written) if created else None

    # -- moving forward -------------------------------------------------------------------------------

    def report(self, report: Report, deadline_at: str | None = None, *, hop: int | None = None) -> bool:
        """`running` at an actor, with progress that never decreases. Creates the record if the envelope
        was not started through the gateway, so every task is visible. `hop`: the route position of a
        hop that starts here without a claim (a Spark batch's job), kept in the history as a claim is."""
        sets, values = self._running_sets(report, deadline_at)
        if hop is not None:
            sets.append(HOP_HISTORY)
            values |= {":hop": [[hop, report.attempt, int(_now().timestamp() * 1000)]], ":no_hops": []}
        return self._update(
            report.task_id,
            "SET " + ", ".join(sets),
            "attribute_not_exists(id) OR #r < :rank OR (#r = :rank AND progress <= :progress)",
            values,
            names={"#s": "status", "#r": "rank", "#route": "route"},
        )

    def claim_hop(self, report: Report, position: int, held_until_ms: int) -> HopClaim:
        """Claim one hop of a tracked envelope and report it `running` there, in one conditional write
        (docs/status.md, "One write per hop"). The record keeps the furthest hop claimed (route
        position, then attempt) and until when its delivery holds it (`held_until_ms`, epoch ms: the
        end of that delivery's invocation). A delivery may claim a hop further on, or the same hop
        once its holder's invocation has ended without the task moving on (it died: run it again).
        A hop already passed is a duplicate; a hop held is in progress; a paused or ended task is
        halted. The next hop's claim is what marks this one done, so a hop costs one write.

        The same write appends the hop to the record's history (`hops`: [position, attempt, epoch ms
        claimed], about 17 bytes each), which is what shows each hop's time (`hop_times`)."""
        sets, values = self._running_sets(report, None)
        now_ms = int(_now().timestamp() * 1000)
        sets += ["hop_position = :position", "hop_attempt = :attempt", "hop_held_until = :held"]
        sets.append(HOP_HISTORY)
        values |= {":position": position, ":held": held_until_ms, ":now_ms": now_ms}
        values |= {":hop": [[position, report.attempt, now_ms]], ":no_hops": []}
        condition = (
            "(attribute_not_exists(#r) OR #r <= :rank) AND (attribute_not_exists(hop_position)"
            " OR hop_position < :position OR (hop_position = :position AND (hop_attempt < :attempt"
            " OR (hop_attempt = :attempt AND hop_held_until < :now_ms))))"
        )
        update = "SET " + ", ".join(sets)
        arguments = self._update_arguments(report.task_id, update, condition, values, {"#s": "status", "#r": "rank"})
        try:
            self.client.update_item(**arguments, ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except self.client.exceptions.ConditionalCheckFailedException as exc:
            held = from_item(exc.response.get("Item", {}))  # type: ignore[arg-type]
            return _refused(held, position, report.attempt)
        return HopClaim(Claim.NEW)

    @staticmethod
    def _running_sets(report: Report, deadline_at: str | None) -> tuple[list[str], dict[str, Any]]:
        now = rfc3339(_now())
        values: dict[str, Any] = {
            ":running": TaskStatus.RUNNING,
            ":rank": int(Rank.RUNNING),
            ":phase": report.phase,
            ":actor": report.actor,
            ":route": report.route,
            ":attempt": report.attempt,
            ":progress": report.progress,
            ":now": now,
        }
        sets = [
            "#s = :running",
            "#r = :rank",
            "phase = :phase",
            "actor = :actor",
            "#route = :route",
            "attempt = :attempt",
            "progress = :progress",
            "updated_at = :now",
            "created_at = if_not_exists(created_at, :now)",
        ]
        kept = (("parent_id", report.parent_id), ("root_id", report.root_id), ("fan_bucket", report.bucket))
        for name, value in (*kept, ("deadline_at", deadline_at)):
            if value:
                values[f":{name}"] = value
                sets.append(f"{name} = if_not_exists({name}, :{name})")
        if deadline_at:
            values[":open"] = OPEN
            sets.append("open_shard = if_not_exists(open_shard, :open)")
        return sets, values

    def register_branches(self, root_id: str, branch_ids: Iterable[str]) -> dict[str, str]:
        """Add fan-out children to the root before they are sent, so it cannot finish without them:
        in the root's own record while it keeps fewer than `INLINE_BRANCHES`, else in buckets, whose
        counter the root then holds a copy of (`asya.fans`). Returns each branch's bucket, for those
        registered in one (the header they must carry). The same branches registered again (the hop
        run again) go where they went the first time: the root's ids never shrink, so a fan-out that
        did not fit still does not, and one that did is found there."""
        ids = list(dict.fromkeys(branch_ids))
        if not ids:
            return {}
        values = {":ids": set(ids), ":now": rfc3339(_now()), ":room": INLINE_BRANCHES - len(ids), ":first": ids[0]}
        kept = "attribute_not_exists(branch_ids) OR size(branch_ids) <= :room OR contains(branch_ids, :first)"
        adding = "ADD branch_ids :ids SET updated_at = :now"
        if len(ids) <= INLINE_BRANCHES and self._update(root_id, adding, kept, values):
            return {}
        assigned = assign(ids)
        self.fans.register(root_id, assigned, _now())
        self._copy_fans(root_id)
        return assigned

    def _copy_fans(self, root_id: str) -> dict[str, Any] | None:
        """The root's copy of its fan counter brought up to date; the root as the write left it, None
        if it held this version or a later one already (or is gone)."""
        counts = self.fans.counts(root_id)
        return self._update_returning(
            root_id,
            "SET fans = :fans, updated_at = :now",
            "attribute_exists(id) AND (attribute_not_exists(fans) OR fans.v < :v)",
            {":fans": counts.as_copy(), ":v": counts.version, ":now": rfc3339(_now())},
            {},
        )

    def pause(self, task_id: str, pause: dict[str, Any], now: dt.datetime) -> dict[str, Any] | None:
        """`paused` with its prompt; the deadline clock stops (the time left is kept, the task leaves the
        deadline index). Returns the task as it now is, or None if it could not pause."""
        item = self.get(task_id)
        if item is None or item.get("rank", 0) >= Rank.PAUSED:
            return None
        values: dict[str, Any] = {
            ":paused": TaskStatus.PAUSED,
            ":rank": int(Rank.PAUSED),
            ":pause": pause,
            ":now": rfc3339(now),
        }
        sets = ["#s = :paused", "#r = :rank", "pause = :pause", "updated_at = :now", "phase = :paused"]
        deadline = _parse(item.get("deadline_at"))
        if deadline is not None:
            values[":left"] = max(0, int((deadline - now).total_seconds() * 1000))
            sets.append("paused_remaining_ms = :left")
        return self._move(task_id, sets, "open_shard, deadline_at", "#r < :rank", values)

    def resume(self, item: dict[str, Any], now: dt.datetime) -> dict[str, Any] | None:
        """`paused` → `running` (the one backward move docs/status.md allows); the deadline restarts with the
        time that was left. `item` is the task as the caller already read it (the gateway must check it
        before resuming); the write still only happens if the task is paused. Returns the task, or None
        if it was not paused."""
        if item.get("status") != TaskStatus.PAUSED:
            return None
        task_id = item["id"]
        values: dict[str, Any] = {
            ":running": TaskStatus.RUNNING,
            ":rank": int(Rank.RUNNING),
            ":paused": TaskStatus.PAUSED,
        }
        values[":now"] = rfc3339(now)
        sets = ["#s = :running", "#r = :rank", "updated_at = :now", "phase = :resumed"]
        values[":resumed"] = "resumed"
        if item.get("paused_remaining_ms") is not None:
            deadline = now + dt.timedelta(milliseconds=float(item["paused_remaining_ms"]))
            values[":deadline"] = rfc3339(deadline)
            values[":open"] = OPEN
            sets += ["deadline_at = :deadline", "open_shard = :open"]
        return self._move(task_id, sets, "pause, paused_remaining_ms", "#s = :paused", values)

    def _move(
        self, task_id: str, sets: list[str], removed: str, condition: str, values: dict[str, Any]
    ) -> dict[str, Any] | None:
        """A pause or a resume: SET `sets` and REMOVE `removed` if `condition` holds; the task after."""
        names = {"#s": "status", "#r": "rank"}
        return self._update_returning(task_id, f"SET {', '.join(sets)} REMOVE {removed}", condition, values, names)

    def watch(self, task_id: str, now: dt.datetime) -> dict[str, Any] | None:
        """Mark the task watched for `WATCH_SECONDS` from `now`; returns the record as it is after the
        mark (None if the task is unknown). Every change after it reaches the event log, and the record
        returned holds every change before it, so a new watcher that starts from it misses nothing.
        The mark is bookkeeping: `updated_at` is left alone and watchers are not told of it."""
        return self._update_returning(
            task_id,
            "SET watched_until = :until",
            "attribute_exists(id)",
            {":until": int(now.timestamp()) + WATCH_SECONDS},
            {},
        )

    # -- ending ---------------------------------------------------------------------------------------

    def finish(
        self,
        task_id: str,
        root_id: str,
        outcome: str,
        details: dict[str, Any],
        parent_id: str | None = None,
        *,
        fanned_out: bool = False,
        tally: Tally | None = None,
        bucket: str | None = None,
    ) -> Ending:
        """One envelope ended (x-sink, x-sump). `details` holds what the record shows: the result's
        location or the result itself (`output`), error, reason, actor, route. Safe to repeat: each
        branch counts once, and a repeat answers `ALREADY`. `fanned_out`: the envelope says its task
        has branches (it carries the root header), so the write that ends a task alone is not tried.
        `tally`: a branch whose record this call ends is counted on its root later, by `count`.
        `bucket`: the branch is counted in this bucket, not in its root's record (`asya.fans`)."""
        if task_id == root_id:
            if not fanned_out and self._finish_alone(task_id, outcome, details):
                return Ending.RECORDED
            own = {**details, "outcome": outcome}
            if self._ends_root(root_id, {task_id: outcome}, own):
                return Ending.RECORDED
            root = self._close_branch(root_id, {task_id: outcome}, own)
            if root is None:
                return Ending.ALREADY
            if tally is not None:
                tally.seen[root_id] = root
            # kept as the root's own ending, which its final write copies (now, if nothing else is open)
            return Ending.RECORDED if root.get("rank", 0) < Rank.TERMINAL else Ending.LATE
        written = self._terminal(task_id, outcome, {**details, "parent_id": parent_id, "root_id": root_id})
        if written and tally is not None:
            tally.add(root_id, task_id, outcome, bucket)
            return Ending.RECORDED
        if bucket is not None:
            counted = self._count_in_bucket(root_id, bucket, {task_id: outcome})
        else:
            counted = self._close_branch(root_id, {task_id: outcome}, {}) is not None
        if written:
            return Ending.RECORDED
        if counted and not self._ended_by(task_id, outcome):
            return Ending.LATE
        return Ending.ALREADY

    def finish_gathered(self, task_id: str, outcome: str, details: dict[str, Any]) -> bool:
        """A branch gathered by a join ends (`asya.joins`): its record alone, since the join, not the
        root, accounts for it. Safe to repeat: a terminal record is never written again."""
        return self._terminal(task_id, outcome, details)

    def _ended_by(self, task_id: str, outcome: str) -> bool:
        """Whether the branch's record already holds this ending with its result: an earlier delivery
        wrote it and stopped before the root counted the branch. Read only on that rare path, it tells
        a redelivery (nothing to keep again) from an ending that came too late (the result goes to S3)."""
        record = self.get(task_id) or {}
        return record.get("status") == outcome and ("output" in record or "result" in record)

    def _finish_alone(self, task_id: str, outcome: str, details: dict[str, Any]) -> bool:
        """The common case, in one write: a task with no branches ends with its own envelope."""
        sets, values = self._terminal_sets(outcome, details)
        values[":me"] = {task_id}
        values[":me_id"] = task_id
        values[":one"] = 1
        return self._update(
            task_id,
            f"SET {', '.join(sets)} ADD done_ids :me, n_{outcome} :one REMOVE open_shard",
            "(attribute_not_exists(#r) OR #r < :terminal) AND attribute_not_exists(branch_ids)"
            " AND attribute_not_exists(fans) AND NOT contains(done_ids, :me_id)",
            values,
            names={"#s": "status", "#r": "rank"},
        )

    def _terminal(self, task_id: str, outcome: str, details: dict[str, Any]) -> bool:
        sets, values = self._terminal_sets(outcome, details)
        return self._update(
            task_id,
            f"SET {', '.join(sets)} REMOVE open_shard",
            "attribute_not_exists(#r) OR #r < :terminal",
            values,
            names={"#s": "status", "#r": "rank"},
        )

    def _terminal_sets(self, outcome: str, details: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
        now = _now()
        ttl = self.ttl_seconds if details.get("output") is None else max(self.ttl_seconds, self.output_ttl_seconds)
        values: dict[str, Any] = {
            ":status": outcome,
            ":terminal": int(Rank.TERMINAL),
            ":now": rfc3339(now),
            ":expires": int(now.timestamp()) + ttl,
            ":done": 100,
        }
        sets = [
            "#s = :status",
            "#r = :terminal",
            "updated_at = :now",
            "created_at = if_not_exists(created_at, :now)",
            "expires_at = :expires",
            "progress = :done",
            "phase = :status",
        ]
        for name, value in details.items():
            if value is not None:
                values[f":{name}"] = value
                sets.append(f"#{name} = :{name}" if name in _RESERVED else f"{name} = :{name}")
        return sets, values

    def count(
        self,
        root_id: str,
        members: Mapping[str, str],
        seen: Mapping[str, Any] | None = None,
        bucket: str | None = None,
    ) -> None:
        """Count branches that ended (`{member: outcome}`, from a `Tally`) on their root, ending the root
        when they were the last. `seen`: the root as a write of this batch left it; when it shows that
        these members are all the root waits for, one write counts them and ends the root. `bucket`:
        the members are counted there instead (`asya.fans`). Safe to repeat: a member counted before
        is not counted again."""
        if bucket is None and seen is not None and self._count_and_end(root_id, members, seen):
            return
        for chunk in _chunks(sorted(members.items()), _MEMBERS_PER_WRITE):
            if bucket is None:
                self._close_branch(root_id, dict(chunk), {})
            else:
                self._count_in_bucket(root_id, bucket, dict(chunk))

    def _count_in_bucket(self, root_id: str, bucket: str, members: Mapping[str, str]) -> bool:
        """Count `members` in their bucket once; the last of a bucket closes it into the root's counter,
        whose copy on the root is then brought up to date, which ends the root if nothing else is
        open. Whether they were counted now (False: one had been before; each of several is then
        counted on its own). A bucket found complete again (a redelivery of its last count) is closed
        and copied again, which changes nothing if the first delivery got that far."""
        found = self.fans.count(bucket, members)
        counted = found is not None
        if found is None:
            if len(members) > 1:
                for member, outcome in members.items():
                    self._count_in_bucket(root_id, bucket, {member: outcome})
                return False
            found = self.fans.read(bucket)
        if found is None or not found.complete:
            return counted
        if not found.closed:
            self.fans.close(root_id, found, _now())
        root = self._copy_fans(root_id)
        if root is not None:
            self._end_if_done(root_id, root)
        return counted

    def _ends_root(self, root_id: str, members: Mapping[str, str], own: Mapping[str, Any]) -> bool:
        """The root's own ending, when its branches have all ended (as they usually have: a fan-out
        sends its own envelope after its branches), counted and ending the root in one write. A
        strongly consistent read tells: it costs a fifth of the write it saves."""
        root = self.get(root_id)
        if root is None:
            return False
        kept = {f"own_{name}": value for name, value in own.items() if name in _OWN and value is not None}
        return self._count_and_end(root_id, members, {**root, **kept})

    def _count_and_end(self, root_id: str, members: Mapping[str, str], seen: Mapping[str, Any]) -> bool:
        """One write that counts `members` and ends the root, if `seen` says they are the last. The
        condition holds it to that: the root is not ended, none of the members is counted, and it has
        as many counted and registered as `seen` shows (a count or a registration since would change a
        size; a redrive takes a failed member off, and nothing adds one back within a batch)."""
        done, branches = set(seen.get("done_ids", ())), set(seen.get("branch_ids", ()))
        fans = FanCounts.of(seen.get("fans"))
        if (
            seen.get("rank", 0) >= Rank.TERMINAL
            or len(members) > _MEMBERS_PER_WRITE
            or done & members.keys()
            or len(done | members.keys()) < len(branches) + 1
            or fans.open
        ):
            return False
        counted = Counter(members.values())
        final = _root_outcome(
            {f"n_{outcome}": seen.get(f"n_{outcome}", 0) + counted[outcome] for outcome in TERMINAL}
            | {"fans": seen.get("fans")}
        )
        sets, values = self._terminal_sets(final, _root_ending(seen, final))
        if seen.get("own_outcome") is not None:  # how the root's own envelope ended, which results show
            values[":own_outcome"] = seen["own_outcome"]
            sets.append("own_outcome = :own_outcome")
        adds, condition = self._member_terms(members, values)
        as_seen = []
        for name, seen_set in (("done_ids", done), ("branch_ids", branches)):
            if seen_set:
                values[f":seen_{name}"] = len(seen_set)
                as_seen.append(f"size({name}) = :seen_{name}")
            else:
                as_seen.append(f"attribute_not_exists({name})")
        if fans.version:  # no bucket opened or closed since the root was seen
            values[":fans_v"] = fans.version
            as_seen.append("fans.v = :fans_v")
        else:
            as_seen.append("attribute_not_exists(fans)")
        return self._update(
            root_id,
            f"SET {', '.join(sets)} ADD {adds} REMOVE open_shard",
            f"(attribute_not_exists(#r) OR #r < :terminal) AND {' AND '.join(as_seen)} AND {condition}",
            values,
            names={"#s": "status", "#r": "rank"},
        )

    @staticmethod
    def _member_terms(members: Mapping[str, str], values: dict[str, Any]) -> tuple[str, str]:
        """The ADD clause that counts `members` by outcome, and the condition that none is counted yet."""
        values[":ms"] = set(members)
        by_outcome = Counter(members.values())
        values |= {f":n_{outcome}": n for outcome, n in by_outcome.items()}
        values |= {f":m{i}": member for i, member in enumerate(sorted(members))}
        adds = ", ".join(["done_ids :ms", *(f"n_{outcome} :n_{outcome}" for outcome in sorted(by_outcome))])
        return adds, " AND ".join(f"NOT contains(done_ids, :m{i})" for i in range(len(members)))

    def _close_branch(self, root_id: str, members: Mapping[str, str], own: dict[str, Any]) -> dict[str, Any] | None:
        """Count `members` (`{member: outcome}`) on the root once, and end the root when they were the
        last; returns the root as the count left it, or None if a member had been counted before (then
        each of several is counted on its own)."""
        values: dict[str, Any] = {":now": rfc3339(_now())}
        sets = ["updated_at = :now"]
        for name, value in own.items():  # the root's own envelope: keep its result until the root ends
            if value is not None and name in _OWN:
                values[f":{name}"] = value
                sets.append(f"own_{name} = :{name}")
        adds, condition = self._member_terms(members, values)
        counted = self._update_returning(root_id, f"ADD {adds} SET {', '.join(sets)}", condition, values, {})
        if counted is None and len(members) > 1:  # a redelivery among them: count the others
            for member, outcome in members.items():
                self._close_branch(root_id, {member: outcome}, {})
            return None
        root = counted or self.get(root_id)  # already counted (a redelivery): finish the root if left undone
        if root is not None:
            self._end_if_done(root_id, root)
        return counted

    def _end_if_done(self, root_id: str, root: Mapping[str, Any]) -> None:
        """End the root if the record as a write left it shows nothing open: its own ids all counted
        and, in the copy of its fan counter, no bucket open. Of the writes that count, the last one
        to land sees that (each returns the record as it left it)."""
        open_ids = len(root.get("branch_ids", ())) + 1 - len(root.get("done_ids", ()))
        if root.get("rank", 0) < Rank.TERMINAL and open_ids <= 0 and not FanCounts.of(root.get("fans")).open:
            final = _root_outcome(root)
            self._terminal(root_id, final, _root_ending(root, final))

    def reopen(
        self, task_id: str, root_id: str, actor: str, count: int, bucket: str | None = None
    ) -> dict[str, Any] | None:
        """A failed envelope redriven from x-sump: its task goes back from `failed` to `running` at
        `actor` (the one move back besides a resume), and its ending is taken off its root's count, so
        the root ends again only when the redriven envelope does. The redriven envelope runs without a
        deadline (it had passed, or would soon: the operator decides when to redrive). Safe to repeat:
        the root's count is taken off once (`done_ids` no longer holds the envelope), and the record
        moves once per redrive `count`. A branch counted in a bucket is taken out of it, and its root
        set running again. Returns the task's record as it then is, None if there is no record."""
        now = rfc3339(_now())
        values: dict[str, Any] = {":running": TaskStatus.RUNNING, ":rank": int(Rank.RUNNING), ":now": now}
        running = "SET #s = :running, #r = :rank, updated_at = :now REMOVE expires_at"
        names = {"#s": "status", "#r": "rank"}
        if bucket is not None:  # the bucket first, as the root's ids below
            if self.fans.reopen(root_id, bucket, task_id, _now()):
                self._update(root_id, running, "#s = :failed", values | {":failed": TaskStatus.FAILED}, names)
                self._copy_fans(root_id)
        else:
            values |= {":m": {task_id}, ":m_id": task_id, ":less": -1}
            self._update(  # the root first: a branch reopened but still counted could never count again
                root_id, f"DELETE done_ids :m ADD n_failed :less {running}", "contains(done_ids, :m_id)", values, names
            )
        values = {":running": TaskStatus.RUNNING, ":rank": int(Rank.RUNNING), ":now": now, ":failed": TaskStatus.FAILED}
        values |= {":actor": actor, ":phase": "redriven", ":count": count}
        return self._update_returning(  # a task without branches is its own root: running already
            task_id,
            "SET #s = :running, #r = :rank, updated_at = :now, actor = :actor, phase = :phase, redrives = :count"
            " REMOVE expires_at, #reason, #error, #result, #output, hop_position, hop_attempt, hop_held_until,"
            " deadline_at",
            "(#s = :failed OR #s = :running) AND (attribute_not_exists(redrives) OR redrives < :count)",
            values,
            {"#s": "status", "#r": "rank"},
        ) or self.get(task_id)

    def cancel(self, task_id: str) -> dict[str, Any] | None:
        """Cancel a task and, through the root's branch list, its fan-out children. Idempotent: an
        already terminal task is returned as it is. None if the task is unknown."""
        item = self.get(task_id)
        if item is None:
            return None
        if item.get("rank", 0) < Rank.TERMINAL:
            self._terminal(task_id, TaskStatus.CANCELED, {"reason": Reason.CANCELED.value})
        for child in sorted(item.get("branch_ids", ())):
            self._terminal(child, TaskStatus.CANCELED, {"reason": Reason.CANCELED.value, "root_id": task_id})
        return self.get(task_id)

    def expire(self, now: dt.datetime, limit: int = 500) -> list[str]:
        """The deadline backstop: fail every open task whose deadline passed. Driven by the table (a
        sparse index of open tasks by deadline), not by timers, so it survives any restart."""
        expired: list[str] = []
        paginator = self.client.get_paginator("query")
        pages = paginator.paginate(
            TableName=self.table,
            IndexName=BY_DEADLINE,
            KeyConditionExpression="open_shard = :open AND deadline_at < :now",
            ExpressionAttributeValues={":open": {"S": OPEN}, ":now": {"S": rfc3339(now)}},
        )
        for page in pages:
            for key in page.get("Items", []):
                task_id = key["id"]["S"]
                message = "the task's deadline passed before it finished (gateway backstop)"
                if self._update(
                    task_id,
                    *self._expire_update(now, message),
                    names={"#s": "status", "#r": "rank"},
                ):
                    expired.append(task_id)
                if len(expired) >= limit:
                    return expired
        return expired

    def _expire_update(self, now: dt.datetime, message: str) -> tuple[str, str, dict[str, Any]]:
        sets, values = self._terminal_sets(
            TaskStatus.FAILED, {"reason": Reason.TIMEOUT.value, "error": {"message": message}}
        )
        values[":deadline_now"] = rfc3339(now)
        values[":paused_rank"] = int(Rank.PAUSED)
        return (
            f"SET {', '.join(sets)} REMOVE open_shard",
            "#r < :paused_rank AND deadline_at < :deadline_now",
            values,
        )

    # -- reading --------------------------------------------------------------------------------------

    def get(self, task_id: str) -> dict[str, Any] | None:
        """The task's record; None for an unknown id, and for a fan bucket's or counter's (not a task)."""
        response = self.client.get_item(TableName=self.table, Key={"id": {"S": task_id}}, ConsistentRead=True)
        item = response.get("Item")
        return from_item(item) if item is not None and not is_fan_item(item) else None

    def statuses(
        self, task_ids: Iterable[str], unread: Callable[[BatchIncompleteError], None] | None = None
    ) -> dict[str, str]:
        """Pre-flight: the status of many tasks in one `BatchGetItem` per 100 ids (one per SQS batch).
        Advisory: if DynamoDB still leaves ids unprocessed after the bounded retries, `unread` is told
        (the caller logs it) and the statuses that were read are returned; the hops of the unread tasks
        run, and their next hop checks again. Without `unread`, `BatchIncompleteError` is raised."""
        try:
            items = self._batch_get(task_ids, ProjectionExpression="id, #s", ExpressionAttributeNames={"#s": "status"})
        except BatchIncompleteError as error:
            if unread is None:
                raise
            unread(error)
            items = error.read
        return {item["id"]["S"]: item["status"]["S"] for item in items if "status" in item}

    def get_many(self, task_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Whole records by id (missing ids are absent), for listings read through a keys-only index.
        A listing must not leave tasks out unnoticed: ids DynamoDB leaves unprocessed after the bounded
        retries raise `BatchIncompleteError` (the gateway answers 503, and the client asks again)."""
        return {item["id"]["S"]: from_item(item) for item in self._batch_get(task_ids, ConsistentRead=True)}

    def _batch_get(self, task_ids: Iterable[str], **options: Any) -> list[dict[str, Any]]:
        keys = [{"id": {"S": task_id}} for task_id in sorted(set(task_ids))]
        return batch_get(self.client, self.table, keys, backoff=self.backoff, **options)

    # -- plumbing -------------------------------------------------------------------------------------

    def _update(
        self,
        task_id: str,
        update: str,
        condition: str | None,
        values: dict[str, Any],
        names: dict[str, str] | None = None,
    ) -> bool:
        return self._update_returning(task_id, update, condition, values, names or {}, returns="NONE") is not None

    def _update_returning(
        self,
        task_id: str,
        update: str,
        condition: str | None,
        values: dict[str, Any],
        names: dict[str, str],
        *,
        returns: Literal["ALL_NEW", "NONE"] = "ALL_NEW",
    ) -> dict[str, Any] | None:
        arguments = self._update_arguments(task_id, update, condition, values, names)
        try:
            response = self.client.update_item(**arguments, ReturnValues=returns)
        except self.client.exceptions.ConditionalCheckFailedException:
            return None
        return from_item(response.get("Attributes", {}))

    def _update_arguments(
        self, task_id: str, update: str, condition: str | None, values: dict[str, Any], names: dict[str, str]
    ) -> dict[str, Any]:
        """One `UpdateItem` on a task record, the reserved attribute names its expression uses mapped."""
        names = {**names, **{f"#{name}": name for name in _RESERVED if f"#{name}" in update}}
        arguments: dict[str, Any] = {
            "TableName": self.table,
            "Key": {"id": {"S": task_id}},
            "UpdateExpression": update,
            "ExpressionAttributeValues": to_item(values),
        }
        if condition:
            arguments["ConditionExpression"] = condition
        if names:
            arguments["ExpressionAttributeNames"] = names
        return arguments

    def _write(self, call: Any, **arguments: Any) -> bool:
        try:
            call(**arguments)
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True


_RESERVED = ("status", "rank", "route", "result", "output", "error", "reason")
HOP_HISTORY = "hops = list_append(if_not_exists(hops, :no_hops), :hop)"  # a hop's [position, attempt, ms]
# a fan-out root's own ending, kept until its branches end (`own_outcome`: how its own envelope ended)
_OWN = ("outcome", "result", "output", "route", "error", "reason")


_MEMBERS_PER_WRITE = 25  # keeps a count's condition well inside DynamoDB's 4 KB expression limit


def _root_outcome(root: Mapping[str, Any]) -> TaskStatus:
    """How a root whose envelopes all ended ends: failed if any failed, else canceled if any was (its
    own ids' counts, and those of its closed buckets)."""
    fans = FanCounts.of(root.get("fans"))
    if root.get("n_failed") or fans.outcome(TaskStatus.FAILED):
        return TaskStatus.FAILED
    return TaskStatus.CANCELED if root.get("n_canceled") or fans.outcome(TaskStatus.CANCELED) else TaskStatus.SUCCEEDED


def _root_ending(root: Mapping[str, Any], final: str) -> dict[str, Any]:
    """What the root's final write copies from its own ending: its result, and its reason and error
    if that is how the root ended."""
    kept = ("result", "output", "route") + (("reason", "error") if root.get("own_outcome") == final else ())
    return {name: root.get(f"own_{name}") for name in kept}


def _chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    return (items[start : start + size] for start in range(0, len(items), size))


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _parse(text: Any) -> dt.datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        return None


# -- DynamoDB's typed JSON, both ways (boto3's TypeSerializer wants Decimals and rejects floats) --------


def to_item(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: _typed(value) for key, value in values.items()}


def _typed(value: Any) -> dict[str, Any]:
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int | float | Decimal):
        return {"N": repr(value) if isinstance(value, float) else str(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, set | frozenset):
        return {"SS": sorted(value)}
    if isinstance(value, Mapping):
        return {"M": to_item(value)}
    if isinstance(value, list | tuple):
        return {"L": [_typed(item) for item in value]}
    raise TypeError(f"cannot store {type(value).__name__} in a task record")


def from_item(item: Mapping[str, Any]) -> dict[str, Any]:
    return {key: _plain(value) for key, value in item.items()}


def _plain(typed: Mapping[str, Any]) -> Any:
    (kind, value), *_ = typed.items()
    if kind in {"S", "BOOL"}:
        return value
    if kind == "N":
        number = Decimal(value)
        return int(number) if number == number.to_integral_value() else float(number)
    if kind == "NULL":
        return None
    if kind == "SS":
        return set(value)
    if kind == "M":
        return from_item(value)
    if kind == "L":
        return [_plain(item) for item in value]
    return value
