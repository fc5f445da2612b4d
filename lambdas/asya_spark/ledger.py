"""The Spark batches table: every batch from staging to routing, and which batch owns each hop.

Items (partition key `pk`, all under `<namespace>#<actor>#`, so IAM scopes an actor to its own):

- a **batch**: `...#batch#<id>`, with `state` (`staged` → `started` → `routed`), the job run id, the
  canceled/paused tasks it was staged with, and while it is open an `open_actor` attribute that puts
  it in the sparse `open` index the reconciler reads;
- a **hop claim**: `...#hop#<envelope id>#<position>#<attempt>[#<redrives>]` (or `...#msg#<message id>` for a
  body that is not an envelope) → the batch that carries it. A redelivered message whose hop is already
  claimed by another batch is dropped from the new one: that batch will route it. Claims expire with
  the longest time a message can stay in a queue.

Routing is guarded by a lease (`lease_until`), taken with a conditional write: the job-state event
and the reconciler may both arrive for the same batch, and only one of them may send its envelopes.

One more item, `...#hold`, exists only while the actor's application is being stopped for a deploy
(`asya_spark.stopper`): until its `until`, neither the dispatcher nor the reconciler starts a job, since
StartJobRun on a stopped application starts it again (auto start) and EMR Serverless would then refuse
the update the stop was for. Batches staged meanwhile wait in the table, not in the queue.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from asya.clients import LazyClient
from asya.dynamo import DEFAULT_BACKOFF, Backoff, batch_get, batch_write

if TYPE_CHECKING:
    from types_boto3_dynamodb.client import DynamoDBClient

OPEN_INDEX = "open"
HOLD = "hold"  # the key suffix of the actor's start hold
CLAIM_TTL_SECONDS = 15 * 86_400  # SQS keeps a message at most 14 days


class State:
    STAGED = "staged"
    STARTED = "started"
    ROUTED = "routed"


@dataclass(frozen=True, slots=True)
class Batch:
    batch_id: str
    state: str
    size: int
    staged_at: float
    job_run_id: str | None = None
    known: dict[str, str] = field(default_factory=dict)


def key_prefix(namespace: str, actor: str) -> str:
    return f"{namespace}#{actor}#"


class BatchLedger:
    client: LazyClient[DynamoDBClient] = LazyClient("dynamodb")

    def __init__(
        self,
        table: str,
        namespace: str,
        actor: str,
        client: DynamoDBClient | None = None,
        backoff: Backoff = DEFAULT_BACKOFF,
    ) -> None:
        self.table = table
        self.prefix = key_prefix(namespace, actor)
        self._client = client
        self.backoff = backoff

    # hop claims

    def claimed(self, claims: Iterable[str]) -> dict[str, str]:
        """Which of these claims are held already, and by which batch. Claims DynamoDB leaves unread
        after the bounded retries raise `BatchIncompleteError`: an unread claim may be another batch's, so
        the dispatcher fails and its SQS batch is delivered again."""
        keys = [{"pk": {"S": self.prefix + claim}} for claim in dict.fromkeys(claims)]
        items = batch_get(self.client, self.table, keys, backoff=self.backoff, ProjectionExpression="pk, batch_id")
        return {item["pk"]["S"].removeprefix(self.prefix): item["batch_id"]["S"] for item in items}

    def claim(self, claims: Iterable[str], batch_id: str) -> None:
        """Claim these hops for a batch. Claims DynamoDB leaves unwritten after the bounded retries
        raise `BatchIncompleteError`, and the dispatcher fails; the batch is staged already, so its
        redelivery (or the reconciler) starts the job. A hop whose claim is missing may then also be
        carried by a regrouped batch: run twice, never lost."""
        expires = str(int(time.time()) + CLAIM_TTL_SECONDS)
        requests = [
            {
                "PutRequest": {
                    "Item": {"pk": {"S": self.prefix + c}, "batch_id": {"S": batch_id}, "expires_at": {"N": expires}}
                }
            }
            for c in dict.fromkeys(claims)
        ]
        batch_write(self.client, self.table, requests, backoff=self.backoff)

    # batches

    def stage(self, batch_id: str, size: int, known: dict[str, str]) -> Batch:
        """Record a new batch (or return the one already recorded under this id)."""
        now = time.time()
        item: Any = {
            "pk": {"S": self._batch_key(batch_id)},
            "batch_id": {"S": batch_id},
            "state": {"S": State.STAGED},
            "size": {"N": str(size)},
            "staged_at": {"N": f"{now:.3f}"},
            "known": {"S": orjson.dumps(known).decode()},
            "open_actor": {"S": self.prefix},
        }
        try:
            self.client.put_item(TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(pk)")
        except self.client.exceptions.ConditionalCheckFailedException:
            existing = self.get(batch_id)
            assert existing is not None  # batches are never deleted
            return existing
        return Batch(batch_id, State.STAGED, size, now, None, known)

    def get(self, batch_id: str) -> Batch | None:
        item = self.client.get_item(
            TableName=self.table, Key={"pk": {"S": self._batch_key(batch_id)}}, ConsistentRead=True
        )
        return _batch(item["Item"]) if "Item" in item else None

    def started(self, batch_id: str, job_run_id: str) -> None:
        self.client.update_item(
            TableName=self.table,
            Key={"pk": {"S": self._batch_key(batch_id)}},
            UpdateExpression="SET #state = :started, job_run_id = :run",
            ConditionExpression="#state IN (:staged, :started)",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues={
                ":started": {"S": State.STARTED},
                ":staged": {"S": State.STAGED},
                ":run": {"S": job_run_id},
            },
        )

    def open_batches(self) -> Iterator[Batch]:
        """Every batch of this actor that has not been routed yet, oldest first."""
        pages: Any = self.client.get_paginator("query").paginate(
            TableName=self.table,
            IndexName=OPEN_INDEX,
            KeyConditionExpression="open_actor = :actor",
            ExpressionAttributeValues={":actor": {"S": self.prefix}},
        )
        for page in pages:
            for item in page.get("Items", []):
                yield _batch(item)

    def lease(self, batch_id: str, seconds: float) -> bool:
        """Take the right to route this batch for `seconds`; False if it is routed or leased elsewhere."""
        now = time.time()
        try:
            self.client.update_item(
                TableName=self.table,
                Key={"pk": {"S": self._batch_key(batch_id)}},
                UpdateExpression="SET lease_until = :until",
                ConditionExpression="#state = :started AND (attribute_not_exists(lease_until) OR lease_until < :now)",
                ExpressionAttributeNames={"#state": "state"},
                ExpressionAttributeValues={
                    ":started": {"S": State.STARTED},
                    ":now": {"N": f"{now:.3f}"},
                    ":until": {"N": f"{now + seconds:.3f}"},
                },
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def release(self, batch_id: str) -> None:
        """Give the lease back after a routing that could not finish, so the next attempt need not wait."""
        self.client.update_item(
            TableName=self.table, Key={"pk": {"S": self._batch_key(batch_id)}}, UpdateExpression="REMOVE lease_until"
        )

    def routed(self, batch_id: str, outcome: str) -> None:
        """The batch's envelopes are all sent: it leaves the open index for good."""
        self.client.update_item(
            TableName=self.table,
            Key={"pk": {"S": self._batch_key(batch_id)}},
            UpdateExpression="SET #state = :routed, outcome = :outcome REMOVE open_actor, lease_until",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues={":routed": {"S": State.ROUTED}, ":outcome": {"S": outcome}},
        )

    # the start hold

    def hold(self, application_id: str, until: float) -> None:
        """No job of this actor starts on application `application_id` before `until` (epoch seconds)
        unless `lift` comes first. A hold whose lifter never runs (a deploy rolled back) lapses by itself;
        one for another application (one being replaced) holds nothing back."""
        self.client.put_item(
            TableName=self.table,
            Item={
                "pk": {"S": self.prefix + HOLD},
                "application_id": {"S": application_id},
                "until": {"N": f"{until:.3f}"},
                "expires_at": {"N": str(int(until) + 86_400)},  # DynamoDB's TTL removes it a day later
            },
        )

    def lift(self) -> None:
        self.client.delete_item(TableName=self.table, Key={"pk": {"S": self.prefix + HOLD}})

    def held(self, application_id: str) -> bool:
        """Whether job starts on this application are on hold now (read consistently: a hold written a
        moment ago counts)."""
        item = self.client.get_item(
            TableName=self.table, Key={"pk": {"S": self.prefix + HOLD}}, ConsistentRead=True
        ).get("Item")
        return (
            item is not None
            and item["application_id"]["S"] == application_id
            and float(item["until"]["N"]) > time.time()
        )

    def _batch_key(self, batch_id: str) -> str:
        return f"{self.prefix}batch#{batch_id}"


def _batch(item: dict[str, Any]) -> Batch:
    return Batch(
        batch_id=item["batch_id"]["S"],
        state=item["state"]["S"],
        size=int(item["size"]["N"]),
        staged_at=float(item["staged_at"]["N"]),
        job_run_id=item.get("job_run_id", {}).get("S"),
        known=orjson.loads(item.get("known", {}).get("S", "{}")),
    )
