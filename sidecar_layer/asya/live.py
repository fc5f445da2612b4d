"""The live event log of each task: what its watchers receive, in order (FLY: docs/actors.md;
streaming: docs/status.md).

`status` events are appended by the gateway's stream consumer whenever a task record changes; `fly`
events are appended by the sidecar straight from the handler. Neither is status: the task record is
the truth, and the log only exists so that watchers (SSE locally, long-poll batches on AWS) can follow
a task from a cursor. Items expire after a day.

A cursor (`seq`) is the nanosecond arrival time, zero-padded so it sorts as a string, plus a random
suffix so two writers never collide; one writer's events keep their order.

Several writers append to one task's log (the stream consumer, each actor's sidecar), each stamping
`seq` from its own clock just before its write lands. A reader that handed out an event with a later
`seq` before an earlier-stamped write had landed would move its cursor past that event for good. So
readers only take events that have *settled*: stamped at least `SETTLE_SECONDS` ago, longer than a
write can take to land, retries included (plus the clocks' skew). A watcher sees each event that much
later, and never misses one.

That bound holds because the log's writes have one of their own: its client makes no retries of its
own (botocore's standard retries back off up to 20 s between attempts) and gives up on a call after
`CONNECT_SECONDS` + `READ_SECONDS`, and what DynamoDB leaves unprocessed is sent again at most
`WRITE_BACKOFF.attempts` times in all. An append that does not land within that is an error its
caller sees (the stream consumer's batch fails and comes again, re-stamped); a FLY event is let go.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from asya.clients import LazyClient
from asya.dynamo import Backoff, BatchIncompleteError, batch_write

if TYPE_CHECKING:
    from types_boto3_dynamodb.client import DynamoDBClient

STATUS = "status"
FLY = "fly"
CONNECT_SECONDS = 0.5  # a call to DynamoDB connects within this, or fails
READ_SECONDS = 1.0  # and is answered within this, or fails: no botocore retry after either
WRITE_BACKOFF = Backoff(attempts=2, base=0.05, cap=0.1, budget=0.1)  # what DynamoDB leaves unprocessed
CLOCK_SKEW_SECONDS = 0.5  # between two writers' clocks (NTP keeps Lambda's within milliseconds)
# the latest an append can land after its events were stamped: every call of it at its longest, and the
# waits between them, and the writers' clocks apart
SETTLE_SECONDS = WRITE_BACKOFF.attempts * (CONNECT_SECONDS + READ_SECONDS) + WRITE_BACKOFF.budget + CLOCK_SKEW_SECONDS
# A cursor as `EventLog.next_seq` writes it (20 digits of nanoseconds, a writer's suffix), or "0" for a
# task's whole log: what a reader may hand back, anchored for OpenAPI's `pattern`.
CURSOR_PATTERN = r"^(0|[0-9]{20}(-[0-9a-f]{1,32})?)$"


class EventsNotAppendedError(Exception):
    """Events of one `append` that are not in the log; `missing` holds their positions in its input."""

    def __init__(self, message: str, missing: list[int]) -> None:
        super().__init__(message)
        self.missing = missing


@dataclass(frozen=True, slots=True)
class Event:
    task_id: str
    seq: str
    kind: str
    data: Any


class EventLog:
    client: LazyClient[DynamoDBClient] = LazyClient(
        "dynamodb",
        retries={"mode": "standard", "total_max_attempts": 1},
        connect_timeout=CONNECT_SECONDS,
        read_timeout=READ_SECONDS,
    )

    def __init__(
        self,
        table: str,
        ttl_seconds: int = 86_400,
        client: DynamoDBClient | None = None,
        backoff: Backoff = WRITE_BACKOFF,
    ) -> None:
        self.table = table
        self.ttl_seconds = ttl_seconds
        self._client = client
        self.backoff = backoff
        self._last_ns = 0
        self._lock = threading.Lock()
        self._suffix = secrets.token_hex(3)

    def next_seq(self) -> str:
        with self._lock:
            self._last_ns = max(time.time_ns(), self._last_ns + 1)
            return f"{self._last_ns:020d}-{self._suffix}"

    def append(self, events: Iterable[tuple[str, str, Any]]) -> list[Event]:
        """Append `(task_id, kind, data)` events in order, 25 to a `BatchWriteItem`. Events DynamoDB
        still leaves unprocessed after the bounded retries raise `EventsNotAppendedError`: the caller decides
        whether that fails its work (the stream consumer) or is logged and let go (a FLY event)."""
        appended = [Event(task_id, self.next_seq(), kind, data) for task_id, kind, data in events]
        expires = str(int(time.time()) + self.ttl_seconds)
        requests: list[dict[str, Any]] = [
            {
                "PutRequest": {
                    "Item": {
                        "task_id": {"S": event.task_id},
                        "seq": {"S": event.seq},
                        "kind": {"S": event.kind},
                        "data": {"S": orjson.dumps(event.data).decode()},
                        "expires_at": {"N": expires},
                    }
                }
            }
            for event in appended
        ]
        try:
            batch_write(self.client, self.table, requests, backoff=self.backoff)
        except BatchIncompleteError as error:
            unwritten = {request["PutRequest"]["Item"]["seq"]["S"] for request in error.remaining}
            missing = [position for position, event in enumerate(appended) if event.seq in unwritten]
            raise EventsNotAppendedError(str(error), missing) from error
        return appended

    def after(self, task_id: str, cursor: str | None, limit: int = 100, *, now_ns: int | None = None) -> list[Event]:
        """Settled events after `cursor` (from the start without one), oldest first."""
        settled = f"{(now_ns or time.time_ns()) - int(SETTLE_SECONDS * 1e9):020d}"
        if cursor is not None and cursor > settled:
            return []  # nothing has settled after it yet; DynamoDB refuses a BETWEEN whose bounds are reversed
        values: Any = {":id": {"S": task_id}, ":settled": {"S": settled}, ":cursor": {"S": cursor or "0"}}
        response = self.client.query(
            TableName=self.table,
            KeyConditionExpression="task_id = :id AND seq BETWEEN :cursor AND :settled",
            ExpressionAttributeValues=values,
            Limit=limit,
            ConsistentRead=True,
        )
        return [
            Event(task_id, item["seq"]["S"], item["kind"]["S"], orjson.loads(item["data"]["S"]))
            for item in response.get("Items", [])
            if item["seq"]["S"] != cursor  # BETWEEN includes the cursor's own event
        ]

    def latest(self, task_id: str) -> str | None:
        """The newest cursor of a task, so a new watcher starts after what the current status shows."""
        response = self.client.query(
            TableName=self.table,
            KeyConditionExpression="task_id = :id",
            ExpressionAttributeValues={":id": {"S": task_id}},
            ScanIndexForward=False,
            Limit=1,
            ProjectionExpression="seq",
            ConsistentRead=True,
        )
        items = response.get("Items", [])
        return items[0]["seq"]["S"] if items else None
