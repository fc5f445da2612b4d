"""Task records: one DynamoDB item per envelope id, moved forward only (docs/status.md).

Every writer (gateway, sidecar, crew, backstop) goes through `TaskStore`: the record's statuses and
their order are in `asya.task_record`, the counting of a fan-out's branches in `asya.task_counting`,
the deadline backstop's sweep in `asya.task_expiry`, the reads and the writes they share in
`asya.task_table`. A task without branches becomes terminal with a single write.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from asya.dedup import Claim, HopClaim
from asya.dynamo import BatchIncompleteError, from_item, to_item
from asya.envelope import Route, parse_rfc3339, rfc3339, utc_now
from asya.join_failure import JOIN_FAILED_COUNT, JOIN_FAILED_LATER
from asya.reasons import Reason
from asya.short_ids import lookup_keys, lookup_sets
from asya.task_attributes import CLAIM_REFUSAL
from asya.task_counting import BranchCounting
from asya.task_expiry import DeadlineExpiry
from asya.task_record import OPEN, WATCH_SECONDS, Ending, Rank, Report, Tally, TaskStatus, progress_of
from asya.task_table import HOP_HISTORY, STATUS_RANK, aliases


def _refused(record: Mapping[str, Any], position: int, attempt: int) -> HopClaim:
    """Why a hop's claim was refused, from the record as read right after the refusal."""
    if record.get("rank", 0) > Rank.RUNNING:
        return HopClaim(Claim.HALTED, halted=str(record.get("status")))
    if (record.get("hop_position", -1), record.get("hop_attempt", 0)) == (position, attempt):
        return HopClaim(Claim.IN_PROGRESS, held_until=int(record.get("hop_held_until", 0)))
    return HopClaim(Claim.DUPLICATE)


class TaskStore(BranchCounting, DeadlineExpiry):
    def create(self, item: dict[str, Any]) -> dict[str, Any] | None:
        """A new task as the gateway starts it: the record as written, None if the id is taken. The
        record is what a read would return right after, so the gateway answers without reading it
        back (a strongly consistent read per task, a quarter of a 4-hop task's read units)."""
        now = rfc3339(utc_now())
        record = {
            "status": TaskStatus.PENDING,
            "rank": int(Rank.PENDING),
            "progress": 0,
            "created_at": now,
            "updated_at": now,
        }
        record.update(item)
        record |= lookup_keys(str(record["id"]))
        if record.get("deadline_at"):
            record["open_shard"] = OPEN
        written = to_item(record)
        created = self._write(
            self.client.put_item, TableName=self.table, Item=written, ConditionExpression="attribute_not_exists(id)"
        )
        return from_item(written) if created else None

    def admit(self, task_id: str, message_id: str) -> bool:
        """The record of a task a producer starts by sending its first envelope straight to a queue
        (`asya.admission`), made before its first hop runs: `pending`, as the gateway makes one, and
        no one's (only admins see it). False if the id is another task's: an envelope from outside the
        mesh is never a hop of an existing task. The SQS message it came in (`admitted_by`) may admit it
        again, so a redelivery of the same message is not refused; what the record already says is kept."""
        now = rfc3339(utc_now())
        sets = [
            "admitted_by = if_not_exists(admitted_by, :message)",
            "#s = if_not_exists(#s, :pending)",
            "#r = if_not_exists(#r, :rank)",
            "progress = if_not_exists(progress, :none)",
            "created_at = if_not_exists(created_at, :now)",
            "updated_at = if_not_exists(updated_at, :now)",
        ]
        values = {":message": message_id, ":pending": TaskStatus.PENDING, ":rank": int(Rank.PENDING), ":none": 0}
        found, keys = lookup_sets(task_id)
        sets += found
        values |= keys
        return self._update(
            task_id,
            "SET " + ", ".join(sets),
            "attribute_not_exists(id) OR admitted_by = :message",
            values | {":now": now},
            names=aliases(),
        )

    def report(self, report: Report, deadline_at: str | None = None, *, hop: int | None = None) -> bool:
        """`running` at an actor, with progress that never decreases, or at a hop further on than the
        last one claimed: a flow program's loop lengthens the route ahead, so the progress of a later
        hop may be lower (2/3, then 3/5), and refused it would leave the task shown at the hop before
        (a Spark batch's whole job long). Creates the record if the envelope was not started through
        the gateway, so every task is visible. `hop`: the route position of a hop that starts here
        without a claim (a Spark batch's job), kept in the history as a claim is."""
        sets, values = self._running_sets(report, deadline_at)
        values[":at"] = len(report.route.get("prev") or [])
        if hop is not None:
            sets.append(HOP_HISTORY)
            values |= {":hop": [[hop, report.attempt, int(utc_now().timestamp() * 1000)]], ":no_hops": []}
        return self._update(
            report.task_id,
            "SET " + ", ".join(sets),
            "attribute_not_exists(id) OR #r < :rank OR (#r = :rank AND (progress <= :progress OR hop_position < :at))",
            values,
            names=aliases("route"),
        )

    def claim_hop(
        self, report: Report, position: int, held_until_ms: int, *, admitted_by: str | None = None
    ) -> HopClaim:
        """Claim one hop of a tracked envelope and report it `running` there, in one conditional write
        (docs/status.md, "One write per hop"). The record keeps the furthest hop claimed (route
        position, then attempt) and until when its delivery holds it (`held_until_ms`, epoch ms: the
        end of that delivery's invocation). A delivery may claim a hop further on, or the same hop
        once its holder's invocation has ended without the task moving on (it died: run it again).
        A hop already passed is a duplicate; a hop held is in progress; a paused or ended task is
        halted. The next hop's claim is what marks this one done, so a hop costs one write.

        The same write appends the hop to the record's history (`hops`: [position, attempt, epoch ms
        claimed], about 17 bytes each), which is what shows each hop's time (`hop_times`).

        `admitted_by`: the SQS message of an envelope from outside the mesh (`asya.admission`): its claim
        makes the task's record, or finds the one that message made on an earlier delivery; a record
        another message made is `TAKEN`."""
        sets, values = self._running_sets(report, None)
        now_ms = int(utc_now().timestamp() * 1000)
        sets += ["hop_position = :position", "hop_attempt = :attempt", "hop_held_until = :held"]
        sets.append(HOP_HISTORY)
        values |= {":position": position, ":held": held_until_ms, ":now_ms": now_ms}
        values |= {":hop": [[position, report.attempt, now_ms]], ":no_hops": []}
        condition = (
            "(attribute_not_exists(#r) OR #r <= :rank) AND (attribute_not_exists(hop_position)"
            " OR hop_position < :position OR (hop_position = :position AND (hop_attempt < :attempt"
            " OR (hop_attempt = :attempt AND hop_held_until < :now_ms))))"
        )
        if admitted_by is not None:
            sets.append("admitted_by = if_not_exists(admitted_by, :message)")
            values[":message"] = admitted_by
            condition = f"(attribute_not_exists(id) OR admitted_by = :message) AND {condition}"
        update = "SET " + ", ".join(sets)
        arguments = self._update_arguments(report.task_id, update, condition, values, aliases("route"))
        try:
            self.client.update_item(**arguments)
        except self.client.exceptions.ConditionalCheckFailedException:
            # read back, not returned with the refusal: `ReturnValuesOnConditionCheckFailure` returns the
            # whole record (the caller's input too) and IAM has no condition key to hold it to less
            held = self.read(report.task_id, CLAIM_REFUSAL)
            if admitted_by is not None and held.get("admitted_by") != admitted_by:
                return HopClaim(Claim.TAKEN)
            return _refused(held, position, report.attempt)
        return HopClaim(Claim.NEW)

    @staticmethod
    def _running_sets(report: Report, deadline_at: str | None) -> tuple[list[str], dict[str, Any]]:
        now = rfc3339(utc_now())
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
        found, keys = lookup_sets(report.task_id)  # a hop's claim may be what makes the record
        sets += found
        values |= keys
        kept = (("parent_id", report.parent_id), ("root_id", report.root_id), ("fan_bucket", report.bucket))
        for name, value in (*kept, ("deadline_at", deadline_at)):
            if value:
                values[f":{name}"] = value
                sets.append(f"{name} = if_not_exists({name}, :{name})")
        if deadline_at:
            values[":open"] = OPEN
            sets.append("open_shard = if_not_exists(open_shard, :open)")
        return sets, values

    def pause(
        self,
        task_id: str,
        pause: dict[str, Any],
        now: dt.datetime,
        route: Route | None = None,
        floor: float = 0.0,
    ) -> dict[str, Any] | None:
        """`paused` with its prompt; the deadline clock stops (the time left is kept, the task leaves the
        deadline index). `route`: the envelope's route where it waits (at x-pause), which the record
        takes, with the progress it means, and which starts the person's wait in the hop history as a
        line of its own: no hop claims x-pause, so otherwise the wait would show as the previous hop's
        time and the task as 0 % done at that hop. `floor`: the least progress to show (a flow
        program's so far, `asya.flows.progress_floor`). Returns the task as it now is, or None if it
        could not pause."""
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
        deadline = parse_rfc3339(item.get("deadline_at"))
        if deadline is not None:
            values[":left"] = max(0, int((deadline - now).total_seconds() * 1000))
            sets.append("paused_remaining_ms = :left")
        if route is not None:
            where = {"prev": route.prev, "curr": route.curr, "next": route.next}
            sets += ["actor = :actor", "#route = :route", "progress = :progress", HOP_HISTORY]
            values |= {
                ":actor": route.curr,
                ":route": where,
                ":progress": max(progress_of(where), floor),
                ":no_hops": [],
            }
            values[":hop"] = [[len(route.prev), 1, int(now.timestamp() * 1000)]]
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
        names = aliases("route") if ":route" in values else STATUS_RANK
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

    def count_join_failure(self, task_id: str, failed: int, branch: str | None) -> None:
        """A branch failed after its join gave up (`asya.join_failure`): the joined envelope's record
        counts `failed`, the fan's failed branches as that arrival counted them, unless it counts more
        already, and names `branch`, when given. Safe to repeat, and in any order."""
        named = {"#later": JOIN_FAILED_LATER} if branch is not None else {}
        values: dict[str, Any] = {":count": failed} | ({":branch": {branch}} if branch is not None else {})
        counted = self._update(
            task_id,
            "SET #count = :count" + (" ADD #later :branch" if named else ""),
            "attribute_exists(id) AND (attribute_not_exists(#count) OR #count < :count)",
            values,
            names={"#count": JOIN_FAILED_COUNT, **named},
        )
        if not counted and branch is not None:  # a later arrival counted more first: named all the same
            self._update(task_id, "ADD #later :branch", "attribute_exists(id)", {":branch": {branch}}, named)

    def _ended_by(self, task_id: str, outcome: str) -> bool:
        """Whether the branch's record already holds this ending with its result: an earlier delivery
        wrote it and stopped before the root counted the branch. Read only on that rare path, it tells
        a redelivery (nothing to keep again) from an ending that came too late (the result goes to S3)."""
        record = self.get(task_id) or {}
        return record.get("status") == outcome and ("output" in record or "result" in record)

    def _finish_alone(self, task_id: str, outcome: str, details: dict[str, Any]) -> bool:
        """The common case, in one write: a task with no branches ends with its own envelope."""
        sets, values, names = self._terminal_sets(outcome, details)
        found, keys = lookup_sets(task_id)  # a task sent straight to x-sink has no record before
        sets += found
        values |= keys
        values[":me"] = {task_id}
        values[":me_id"] = task_id
        values[":one"] = 1
        return self._update(
            task_id,
            f"SET {', '.join(sets)} ADD done_ids :me, n_{outcome} :one REMOVE open_shard",
            "(attribute_not_exists(#r) OR #r < :terminal) AND attribute_not_exists(branch_ids)"
            " AND attribute_not_exists(fans) AND NOT contains(done_ids, :me_id)",
            values,
            names=names,
        )

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
        now = rfc3339(utc_now())
        values: dict[str, Any] = {":running": TaskStatus.RUNNING, ":rank": int(Rank.RUNNING), ":now": now}
        running = "SET #s = :running, #r = :rank, updated_at = :now REMOVE expires_at"
        names = STATUS_RANK
        if bucket is not None:  # the bucket first, as the root's ids below
            if self.fans.reopen(root_id, bucket, task_id, utc_now()):
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
            aliases("reason", "error", "result", "output"),
        ) or self.get(task_id)

    def cancel(self, task_id: str, item: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Cancel a task and, through the root's branch list, its fan-out children. Idempotent: an
        already terminal task is returned as it is. None if the task is unknown. `item`: the record
        as the caller just read it, not read again."""
        item = item or self.get(task_id)
        if item is None:
            return None
        if item.get("rank", 0) < Rank.TERMINAL:
            self._terminal(task_id, TaskStatus.CANCELED, {"reason": Reason.CANCELED.value})
        for child in sorted(item.get("branch_ids", ())):
            self._terminal(child, TaskStatus.CANCELED, {"reason": Reason.CANCELED.value, "root_id": task_id})
        return self.get(task_id)

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
