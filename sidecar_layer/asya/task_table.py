"""The tasks table: reading task records, and the conditional writes every transition is made of,
among them the one that ends a record (`_terminal`), which every way of ending shares."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from asya.clients import LazyClient
from asya.dynamo import DEFAULT_BACKOFF, Backoff, batch_get, from_item, update_arguments
from asya.envelope import rfc3339, utc_now
from asya.fans import FanBuckets, is_fan_item
from asya.names import BY_ID_PREFIX, BY_STATUS
from asya.short_ids import ID_HEAD, ID_HEAD_LENGTH, ID_LOWER, lookup_sets, lowered
from asya.task_record import Rank

if TYPE_CHECKING:
    from types_boto3_dynamodb.client import DynamoDBClient

# A record's attributes whose names DynamoDB reserves: an expression names each through its alias.
_RESERVED = ("status", "rank", "route", "result", "output", "error", "reason")
STATUS_RANK = {"#s": "status", "#r": "rank"}  # the aliases every transition's expression uses
HOP_HISTORY = "hops = list_append(if_not_exists(hops, :no_hops), :hop)"  # a hop's [position, attempt, ms]
# An ending's hop that claimed none ([position, attempt, ms]), added to the record's hops by the write
# that ends it: a join that gave up on its branches, whose gathering is not a hop (`asya.joins`).
UNCLAIMED_HOP = "unclaimed_hop"


def aliases(*attributes: str) -> dict[str, str]:
    """`#<name>` for each of `attributes` (reserved words), with the status and rank aliases."""
    return STATUS_RANK | {f"#{name}": name for name in attributes}


class TaskTable:
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
        return FanBuckets(self.client, self.table, self.ttl_seconds)

    def get(self, task_id: str) -> dict[str, Any] | None:
        """The task's record; None for an unknown id, and for a fan bucket's or counter's (not a task)."""
        response = self.client.get_item(TableName=self.table, Key={"id": {"S": task_id}}, ConsistentRead=True)
        item = response.get("Item")
        return from_item(item) if item is not None and not is_fan_item(item) else None

    def read(self, task_id: str, attributes: Iterable[str]) -> dict[str, Any]:
        """Only these attributes of the task's record (empty for an unknown id), strongly consistent: what
        an actor's role may read (`asya.task_attributes`) is a named few, never the whole record."""
        names = {f"#a{index}": name for index, name in enumerate(attributes)}
        response = self.client.get_item(
            TableName=self.table,
            Key={"id": {"S": task_id}},
            ConsistentRead=True,
            ProjectionExpression=", ".join(names),
            ExpressionAttributeNames=names,
        )
        return from_item(response.get("Item", {}))

    def get_many(self, task_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Whole records by id (missing ids are absent), for listings read through a keys-only index.
        A listing must not leave tasks out unnoticed: ids DynamoDB leaves unprocessed after the bounded
        retries raise `BatchIncompleteError` (the gateway answers 503, and the client asks again)."""
        return {item["id"]["S"]: from_item(item) for item in self._batch_get(task_ids, ConsistentRead=True)}

    def owners(self, task_ids: Iterable[str]) -> dict[str, str | None]:
        """Whom each task belongs to (`owner`: the gateway's caller that created it; None for a task
        started without the gateway), by id (missing ids are absent). Eventually consistent and only
        the id and owner read (half a read unit per record): an owner is written with the record and
        never changes."""
        found = self._batch_get(task_ids, ProjectionExpression="id, #o", ExpressionAttributeNames={"#o": "owner"})
        return {item["id"]["S"]: item["owner"]["S"] if "owner" in item else None for item in found}

    def page(
        self,
        status: str,
        limit: int,
        start: Mapping[str, Any] | None = None,
        *,
        since: str | None = None,
        until: str | None = None,
    ) -> Any:
        """One read of a listing, as DynamoDB answers it (`Items`, `LastEvaluatedKey`, `Count`): the
        tasks of one `status`, newest first, created from `since` to `until` (both kept) if given, from
        the status index, which keeps their keys only (`get_many` reads the records; a hop's update then
        writes no index entry). `start`: where the previous read stopped."""
        key = "#s = :status"
        values: dict[str, Any] = {":status": {"S": status}}
        if since and until:
            key += " AND created_at BETWEEN :since AND :until"
        elif since or until:
            key += f" AND created_at {'>=' if since else '<='} {':since' if since else ':until'}"
        values |= {f":{name}": {"S": value} for name, value in (("since", since), ("until", until)) if value}
        started: dict[str, Any] = {"ExclusiveStartKey": start} if start else {}
        return self.client.query(
            TableName=self.table,
            IndexName=BY_STATUS,
            KeyConditionExpression=key,
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues=values,
            ScanIndexForward=False,
            Limit=limit,
            **started,
        )

    def starting_with(self, prefix: str, limit: int, start: Mapping[str, Any] | None = None) -> Any:
        """One read of the id-prefix index, as DynamoDB answers it (`Items`: keys only, `LastEvaluatedKey`):
        the tasks whose id starts with `prefix`, whatever its case, in the order of their lowercased ids.
        `prefix` has at least `ID_HEAD_LENGTH` characters (the index's partition is that many)."""
        folded = lowered(prefix)
        started: dict[str, Any] = {"ExclusiveStartKey": start} if start else {}
        return self.client.query(
            TableName=self.table,
            IndexName=BY_ID_PREFIX,
            KeyConditionExpression=f"{ID_HEAD} = :head AND begins_with({ID_LOWER}, :prefix)",
            ExpressionAttributeValues={":head": {"S": folded[:ID_HEAD_LENGTH]}, ":prefix": {"S": folded}},
            Limit=limit,
            **started,
        )

    def _batch_get(self, task_ids: Iterable[str], **options: Any) -> list[dict[str, Any]]:
        keys = [{"id": {"S": task_id}} for task_id in sorted(set(task_ids))]
        return batch_get(self.client, self.table, keys, backoff=self.backoff, **options)

    def _terminal(self, task_id: str, outcome: str, details: dict[str, Any]) -> bool:
        sets, values, names = self._terminal_sets(outcome, details)
        found, keys = lookup_sets(task_id)  # a branch canceled or ended before any hop claimed it
        sets += found
        values |= keys
        return self._update(
            task_id,
            f"SET {', '.join(sets)} REMOVE open_shard",
            "attribute_not_exists(#r) OR #r < :terminal",
            values,
            names=names,
        )

    def _terminal_sets(self, outcome: str, details: dict[str, Any]) -> tuple[list[str], dict[str, Any], dict[str, str]]:
        """What ends a record: the SET clauses, their values and the aliases they use."""
        now = utc_now()
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
        reserved = []
        for name, value in details.items():
            if name == UNCLAIMED_HOP:
                if value is not None:
                    values |= {":hop": [value], ":no_hops": []}
                    sets.append(HOP_HISTORY)
            elif value is not None:
                values[f":{name}"] = value
                sets.append(f"#{name} = :{name}" if name in _RESERVED else f"{name} = :{name}")
                reserved += [name] if name in _RESERVED else []
        return sets, values, aliases(*reserved)

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

    def renew_claim(self, task_id: str, position: int, attempt: int, held_until_ms: int, until_ms: int) -> bool:
        """Move a hop's claim on to `until_ms` if it is still the one written with `held_until_ms`
        (`asya.claim_leases`): the same hop, attempt and hold, so another delivery's claim is never
        taken over. Returns whether it was."""
        values = {":until": until_ms, ":position": position, ":attempt": attempt, ":held": held_until_ms}
        condition = "hop_position = :position AND hop_attempt = :attempt AND hop_held_until = :held"
        update = self._update_arguments(task_id, "SET hop_held_until = :until", condition, values, {})
        return self._write(self.client.update_item, **update)

    def _update_arguments(
        self, task_id: str, update: str, condition: str | None, values: dict[str, Any], names: dict[str, str]
    ) -> dict[str, Any]:
        """One `UpdateItem` on a task record; `names`: the aliases its expressions use, each named."""
        return update_arguments(self.table, task_id, update, values, condition=condition, names=names)

    def _write(self, call: Any, **arguments: Any) -> bool:
        try:
            call(**arguments)
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True
