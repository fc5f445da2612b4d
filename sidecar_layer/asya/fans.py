"""Wide fan-outs: their branches counted in small buckets beside the root's record, which stays small.

A root counts its branches in its own record while they are few (`branch_ids` and `done_ids`, string
sets, `asya.task_counting`). Each id costs 72 bytes there, a DynamoDB item is at most 400 KB, and a write is
billed by the whole item: past about 5,500 branches the root could not be written at all, and long
before that every count cost tens of write units. So a root keeps at most `INLINE_BRANCHES` ids, and a
fan-out that does not fit registers its branches in buckets of at most `BUCKET_BRANCHES`: items of
their own in the tasks table (`<first branch id>#fan`) that count their branches as the root counts
its own. A bucket whose branches have all ended is closed into the root's fan counter
(`<root id>#fans`: branches registered in buckets, buckets still open, outcomes of the closed ones).

Opening a bucket (registering it) and closing it change the bucket and the counter in one
transaction, so no redelivery can add a bucket twice. The root's own record is never in a
transaction: a plain write to an item a transaction holds fails (`TransactionConflictException`,
which botocore does not retry), and every hop of the root's own envelope writes its record. Instead
the root keeps a copy of the counter (`fans`), written after every change of it and refused when the
root already holds a later version, so a late copy never replaces a newer one. The root ends when its
own ids are all counted and its copy shows no bucket open; the write that makes that true, a count or
a copy, returns the record and ends it. A copy is written before the branches it registers are sent,
so it can never show a bucket closed that has a branch running.

Which bucket a branch is in travels with it, in the header `x-asya-fan-bucket` (the first branch id of
its bucket), set by the sidecar after registering (`with_bucket`), and in its record (`fan_bucket`).
"""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from asya.dynamo import from_item, transact, update_arguments
from asya.headers import FAN_HEADER

if TYPE_CHECKING:
    from types_boto3_dynamodb.client import DynamoDBClient

INLINE_BRANCHES = 50  # branch ids a root keeps itself (3.6 KB with their counts)
BUCKET_BRANCHES = 50  # branch ids in one bucket: a count there costs at most 4 write units
BUCKETS_PER_TRANSACTION = 24  # with the counter, 25 of TransactWriteItems' 100 actions (and ~90 KB of 4 MB)
FAN_ROOT = "fan_root"  # marks a bucket or a counter: an item of the tasks table that is not a task
COUNTER_DAYS = 30  # a counter outlives its last close by this much: a paused branch may resume late
OUTCOMES = ("succeeded", "failed", "canceled")


def bucket_key(bucket: str) -> str:
    return f"{bucket}#fan"


def counter_key(root_id: str) -> str:
    return f"{root_id}#fans"


def is_fan_item(item: Mapping[str, Any]) -> bool:
    return FAN_ROOT in item


def bucket_of(headers: Mapping[str, Any]) -> str | None:
    """The bucket an envelope's header names, if it names one."""
    bucket = headers.get(FAN_HEADER)
    return bucket if isinstance(bucket, str) and bucket else None


# What naming a bucket adds to a branch's body at most (its value is a branch id, a UUID): the room
# the sidecar leaves below the SQS limit when it writes a branch's body.
HEADER_ROOM = len(orjson.dumps({FAN_HEADER: "0" * 36}))


def with_bucket(body: str, bucket: str) -> str:
    """An envelope body as serialized, now naming its branch's bucket. A branch's body is written
    before its registration says where it is counted; the sidecar leaves room for this header."""
    document = orjson.loads(body)
    document["headers"][FAN_HEADER] = bucket
    return orjson.dumps(document).decode()


@dataclass(frozen=True, slots=True)
class FanCounts:
    """A root's fan counter, or the root's copy of it (`fans`): how many branches its buckets hold,
    how many buckets are open, and how the branches of the closed ones ended. `version` grows with
    every change of the counter."""

    version: int = 0
    branches: int = 0
    open: int = 0
    outcomes: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, item: Mapping[str, Any] | None) -> FanCounts:
        """From a counter item or a root's `fans` (plain values); nothing is all zeros."""
        if not item:
            return cls()
        return cls(
            int(item.get("v", 0)),
            int(item.get("branches", 0)),
            int(item.get("open", 0)),
            {outcome: int(item.get(outcome, 0)) for outcome in OUTCOMES},
        )

    def as_copy(self) -> dict[str, int]:
        return {"v": self.version, "branches": self.branches, "open": self.open, **self.outcomes}

    def outcome(self, name: str) -> int:
        return self.outcomes.get(name, 0)


@dataclass(frozen=True, slots=True)
class Bucket:
    """One bucket as read or as a write left it."""

    bucket: str  # the first branch id: the header's value
    branch_ids: frozenset[str]
    done_ids: frozenset[str]
    outcomes: Mapping[str, int]
    closed: bool

    @classmethod
    def of(cls, bucket: str, item: Mapping[str, Any]) -> Bucket:
        return cls(
            bucket,
            frozenset(item.get("branch_ids", ())),
            frozenset(item.get("done_ids", ())),
            {outcome: int(item.get(f"n_{outcome}", 0)) for outcome in OUTCOMES},
            bool(item.get("closed")),
        )

    @property
    def complete(self) -> bool:
        return bool(self.branch_ids) and self.branch_ids <= self.done_ids


SECONDS_PER_BRANCH = 0.005
"""What registering and sending one branch of a wide fan-out may take on AWS, kept high: a
`SendMessageBatch` of ten branches at up to 40 ms, plus its share of a bucket's transaction and of
its body. (The local stack takes about 1 ms: `python -m bench.wide_fan`.)"""


def widest_fan(seconds: float) -> int:
    """The widest fan-out one invocation can register and send in `seconds`; never fewer than a root
    keeps itself, which costs what any hop's outputs do."""
    return max(INLINE_BRANCHES, int(seconds / SECONDS_PER_BRANCH))


def fan_too_wide(width: int, ends_at: float | None) -> str | None:
    """Why a fan-out of `width` outputs cannot be registered and sent before the invocation ends, if it
    cannot: run anyway, it would time out and run again on every delivery until SQS gave up on it, and
    the task would end as `Redriven`, hours later, without saying why."""
    if width <= INLINE_BRANCHES or ends_at is None:
        return None
    left = ends_at - time.monotonic()
    if width <= widest_fan(left):
        return None
    return (
        f"the handler returned {width:,} outputs; registering and sending them may take "
        f"{width * SECONDS_PER_BRANCH:,.0f} s ({SECONDS_PER_BRANCH * 1000:g} ms each) and this invocation "
        f"has {max(left, 0):,.0f} s left: raise the actor's function_timeout, or fan out in stages"
    )


def member_terms(members: Mapping[str, str], values: dict[str, Any]) -> tuple[str, str]:
    """How a record (a root, or a bucket) counts branch endings (`{branch: outcome}`) once: the ADD
    clause that counts them by outcome, and the condition that none is counted yet; fills `values`."""
    values[":ms"] = set(members)
    by_outcome = Counter(members.values())
    values |= {f":n_{outcome}": n for outcome, n in by_outcome.items()}
    values |= {f":m{i}": member for i, member in enumerate(sorted(members))}
    adds = ", ".join(["done_ids :ms", *(f"n_{outcome} :n_{outcome}" for outcome in sorted(by_outcome))])
    return adds, " AND ".join(f"NOT contains(done_ids, :m{i})" for i in range(len(members)))


def assign(branch_ids: Iterable[str]) -> dict[str, str]:
    """Each branch's bucket, in the order given: consecutive runs of `BUCKET_BRANCHES`, each named by
    its first id. The same ids in the same order (a hop run again) land in the same buckets."""
    ids = list(dict.fromkeys(branch_ids))
    return {branch: ids[start - start % BUCKET_BRANCHES] for start, branch in enumerate(ids)}


class FanBuckets:
    """The buckets and counters of one tasks table."""

    def __init__(self, client: DynamoDBClient, table: str, ttl_seconds: int) -> None:
        self.client = client
        self.table = table
        self.ttl_seconds = ttl_seconds

    # -- registering ----------------------------------------------------------------------------------

    def register(self, root_id: str, assigned: Mapping[str, str], now: dt.datetime) -> None:
        """Open the buckets `assigned` names (branch -> bucket) with their branches, and add them to
        the root's counter, `BUCKETS_PER_TRANSACTION` at a time. A bucket that exists already was
        opened by an earlier run of the same hop: it is left as it is, and not added again."""
        members: dict[str, list[str]] = {}
        for branch, bucket in assigned.items():
            members.setdefault(bucket, []).append(branch)
        buckets = list(members)
        for start in range(0, len(buckets), BUCKETS_PER_TRANSACTION):
            group = {bucket: members[bucket] for bucket in buckets[start : start + BUCKETS_PER_TRANSACTION]}
            while group:
                codes = transact(self.client, [_action(update) for update in self._opening(root_id, group, now)])
                if codes is None:
                    break
                opened = [code != "ConditionalCheckFailed" for code in codes[:-1]]
                if codes[-1] != "None" or all(opened):
                    raise RuntimeError(f"fan counter of {root_id}: opening buckets refused with {codes}")
                group = {bucket: ids for (bucket, ids), fresh in zip(group.items(), opened, strict=True) if fresh}

    def _opening(self, root_id: str, group: Mapping[str, list[str]], now: dt.datetime) -> list[dict[str, Any]]:
        actions = [
            self._update(
                bucket_key(bucket),
                "SET fan_root = :root, branch_ids = :ids, created_at = :now",
                {":root": root_id, ":ids": set(ids), ":now": now.isoformat()},
                "attribute_not_exists(id)",
            )
            for bucket, ids in group.items()
        ]
        total = sum(len(ids) for ids in group.values())
        actions.append(
            self._update(
                counter_key(root_id),
                "SET fan_root = :root ADD v :one, branches :total, #open :buckets REMOVE expires_at",
                {":root": root_id, ":one": 1, ":total": total, ":buckets": len(group)},
                names={"#open": "open"},
            )
        )
        return actions

    # -- counting -------------------------------------------------------------------------------------

    def count(self, bucket: str, members: Mapping[str, str]) -> Bucket | None:
        """Count branch endings (`{branch: outcome}`) in their bucket at once; the bucket as the write
        left it, or None if one of them was counted before, or the bucket was never opened."""
        values: dict[str, Any] = {}
        adds, uncounted = member_terms(members, values)
        condition = f"attribute_exists(branch_ids) AND {uncounted}"
        try:
            response = self.client.update_item(
                **self._update(bucket_key(bucket), f"ADD {adds}", values, condition),
                ReturnValues="ALL_NEW",
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return None
        return Bucket.of(bucket, from_item(response.get("Attributes", {})))

    def read(self, bucket: str) -> Bucket | None:
        item = self._get(bucket_key(bucket))
        return Bucket.of(bucket, item) if item is not None else None

    def close(self, root_id: str, bucket: Bucket, now: dt.datetime) -> None:
        """Move a complete bucket's outcomes into the root's counter, once: the bucket is marked
        closed in the same transaction, on the condition that it is as read (a redrive may have taken
        a branch back out since). A bucket another delivery closed first is left alone."""
        values: dict[str, Any] = {":yes": True, ":expires": int(now.timestamp()) + self.ttl_seconds}
        values |= {f":n_{outcome}": bucket.outcomes.get(outcome, 0) for outcome in OUTCOMES}
        values[":done"] = len(bucket.done_ids)
        condition = " AND ".join(
            ["attribute_not_exists(closed)", "size(done_ids) = :done"]
            + [f"(attribute_not_exists(n_{o}) OR n_{o} = :n_{o})" for o in OUTCOMES]
        )
        closing = self._update(bucket_key(bucket.bucket), "SET closed = :yes, expires_at = :expires", values, condition)
        transact(self.client, [_action(closing), _action(self._counter_change(root_id, bucket.outcomes, -1, now))])

    def counts(self, root_id: str) -> FanCounts:
        """The root's counter, its counts only: an actor registering buckets reads it, and its role
        reads named attributes only (`asya.task_attributes`)."""
        names = {f"#{name}": name for name in ("v", "branches", "open", *OUTCOMES)}
        response = self.client.get_item(
            TableName=self.table,
            Key={"id": {"S": counter_key(root_id)}},
            ConsistentRead=True,
            ProjectionExpression=", ".join(names),
            ExpressionAttributeNames=names,
        )
        return FanCounts.of(from_item(response["Item"]) if "Item" in response else None)

    # -- redriving ------------------------------------------------------------------------------------

    def reopen(self, root_id: str, bucket: str, member: str, now: dt.datetime) -> bool:
        """A failed branch redriven from x-sump: taken out of its bucket's count, and a closed bucket
        opened again (its outcomes taken back out of the counter, in the same transaction). False if
        the branch was not counted (a redrive repeated). A bucket changed meanwhile is read again."""
        for _ in range(3):
            found = self.read(bucket)
            if found is None or member not in found.done_ids:
                return False
            values: dict[str, Any] = {":m": {member}, ":m_id": member, ":less": -1}
            update = "DELETE done_ids :m ADD n_failed :less"
            if not found.closed:
                condition = "contains(done_ids, :m_id) AND attribute_not_exists(closed)"
                try:
                    self.client.update_item(**self._update(bucket_key(bucket), update, values, condition))
                except self.client.exceptions.ConditionalCheckFailedException:
                    continue
                return True
            values[":done"] = len(found.done_ids)
            opening = self._update(
                bucket_key(bucket),
                f"{update} REMOVE closed, expires_at",
                values,
                "contains(done_ids, :m_id) AND attribute_exists(closed) AND size(done_ids) = :done",
            )
            taken_back = {outcome: -n for outcome, n in found.outcomes.items()}
            counter = self._counter_change(root_id, taken_back, 1, now, expires=False)
            if transact(self.client, [_action(opening), _action(counter)]) is None:
                return True
        raise RuntimeError(f"bucket {bucket} of {root_id} kept changing while its branch {member} was redriven")

    # -- plumbing -------------------------------------------------------------------------------------

    def _counter_change(
        self, root_id: str, outcomes: Mapping[str, int], open_change: int, now: dt.datetime, *, expires: bool = True
    ) -> dict[str, Any]:
        """The counter's part of a close (or, negated, of a reopen): it must exist (the registration
        made it), so a counter gone with its root is never made again half-empty."""
        values: dict[str, Any] = {":one": 1, ":open": open_change}
        adds = ["v :one", "#open :open"]
        for outcome in OUTCOMES:
            if outcomes.get(outcome):
                values[f":{outcome}"] = outcomes[outcome]
                adds.append(f"{outcome} :{outcome}")
        update = f"ADD {', '.join(adds)}"
        if expires:
            values[":expires"] = int(now.timestamp()) + max(self.ttl_seconds, COUNTER_DAYS * 86_400)
            update += " SET expires_at = :expires"
        else:
            update += " REMOVE expires_at"
        return self._update(counter_key(root_id), update, values, "attribute_exists(id)", names={"#open": "open"})

    def _update(
        self,
        key: str,
        update: str,
        values: Mapping[str, Any],
        condition: str | None = None,
        names: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        return update_arguments(self.table, key, update, values, condition=condition, names=names)

    def _get(self, key: str) -> dict[str, Any] | None:
        response = self.client.get_item(TableName=self.table, Key={"id": {"S": key}}, ConsistentRead=True)
        return from_item(response["Item"]) if "Item" in response else None


def _action(update: dict[str, Any]) -> dict[str, Any]:
    return {"Update": update}
