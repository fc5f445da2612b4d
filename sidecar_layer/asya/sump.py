"""What x-sump kept, listed: one item per arrival in the sump table (`asya-<ns>-sump`), beside the
copy of the message in S3 (`results/<ns>/<id>/sump.json`), so that failures can be found by reason,
actor and time and redriven without listing the bucket.

An item is keyed by the envelope's id and its redrive count (`asya.headers.REDRIVE_HEADER`): a failure
that is redriven and fails again is a second item, and the first keeps what was done with it
(`redriven_at`, `redriven_to`). x-sump writes an item once (a conditional put: a redelivery adds
nothing); it expires with the results (`results.retention_days`). Listing scans the table with the
filters applied by DynamoDB: x-sump holds failures, not traffic, so a scan reads little, and no index
has to be paid for on every arrival.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from asya.clients import LazyClient
from asya.dynamo import from_item, scan_filter, to_item
from asya.envelope import rfc3339
from asya.task_record import redrives, root_of

if TYPE_CHECKING:
    from types_boto3_dynamodb.client import DynamoDBClient

MESSAGE_CHARS = 500  # of the error's message, in the listing (the kept copy has all of it)
SCAN_PAGE = 200  # items a scan reads per call, filters applied after


@dataclass(frozen=True, slots=True)
class SumpFilter:
    reason: str | None = None
    actor: str | None = None
    since: dt.datetime | None = None


def sump_entry(document: Mapping[str, Any], key: str, arrived: dt.datetime, ttl_seconds: int) -> dict[str, Any]:
    """The item for a message x-sump kept at `key`: `document` is the failure envelope as kept. It
    expires after `ttl_seconds` (the results' retention; 0: never)."""
    status, route, headers = (_mapping(document.get(name)) for name in ("status", "route", "headers"))
    error = _mapping(status.get("error"))
    envelope_id = str(document["id"])
    entry = {
        "id": envelope_id,
        "redrives": redrives(headers),
        "task_id": root_of(envelope_id, headers),
        "reason": str(status.get("reason") or "unknown"),
        "actor": str(status.get("actor") or ""),
        "at": str(route.get("curr") or ""),
        "arrived_at": rfc3339(arrived),
        "key": key,
        "error_type": str(error.get("type") or ""),
        "message": str(error.get("message") or "")[:MESSAGE_CHARS],
        "expires_at": int(arrived.timestamp()) + ttl_seconds if ttl_seconds else "",
    }
    return {name: value for name, value in entry.items() if value != ""}


def _mapping(value: Any) -> Mapping[str, Any]:
    """x-sump keeps what it is sent, however malformed: a field of the wrong type counts as empty."""
    return value if isinstance(value, dict) else {}


class SumpIndex:
    client: LazyClient[DynamoDBClient] = LazyClient("dynamodb")

    def __init__(self, table: str, client: DynamoDBClient | None = None) -> None:
        self.table = table
        self._client = client

    def add(self, entry: dict[str, Any]) -> bool:
        """Record an arrival once; False if a delivery before this one recorded it."""
        try:
            self.client.put_item(
                TableName=self.table,
                Item=to_item(entry),
                ConditionExpression="attribute_not_exists(#id)",
                ExpressionAttributeNames={"#id": "id"},
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def latest(self, envelope_id: str) -> dict[str, Any] | None:
        """The envelope's last arrival (the one a redrive starts from), None if x-sump has none."""
        found = self.client.query(
            TableName=self.table,
            KeyConditionExpression="#id = :id",
            ExpressionAttributeNames={"#id": "id"},
            ExpressionAttributeValues={":id": {"S": envelope_id}},
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=True,
        )
        items = found.get("Items", [])
        return from_item(items[0]) if items else None

    def page(
        self, where: SumpFilter, limit: int, start: dict[str, Any] | None
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """Up to `limit` arrivals that pass the filter, newest first within the page, and where the next
        page starts (None at the end). A scan reads `SCAN_PAGE` items per call until `limit` passed."""
        since = rfc3339(where.since) if where.since is not None else None
        filters = (("reason", "=", where.reason), ("actor", "=", where.actor), ("arrived_at", ">=", since))
        arguments: dict[str, Any] = {"TableName": self.table, "Limit": SCAN_PAGE, **scan_filter(filters)}
        found: list[dict[str, Any]] = []
        while True:
            if start is not None:
                arguments["ExclusiveStartKey"] = start
            answer = self.client.scan(**arguments)
            found.extend(from_item(item) for item in answer.get("Items", []))
            start = answer.get("LastEvaluatedKey")
            if start is None or len(found) >= limit:
                break
        if len(found) > limit:  # the rest of the last call's items come again from the page's last key
            found = found[:limit]
            start = {"id": {"S": found[-1]["id"]}, "redrives": {"N": str(found[-1]["redrives"])}}
        found.sort(key=lambda entry: str(entry.get("arrived_at", "")), reverse=True)
        return found, start

    def mark_redriven(self, entry: Mapping[str, Any], to: str, at: dt.datetime) -> bool:
        """Record that the arrival was redriven (to actor `to`); False if it had been already."""
        try:
            self.client.update_item(
                TableName=self.table,
                Key={"id": {"S": entry["id"]}, "redrives": {"N": str(entry["redrives"])}},
                UpdateExpression="SET #at = :at, #to = :to",
                ConditionExpression="attribute_exists(#id) AND attribute_not_exists(#at)",
                ExpressionAttributeNames={"#id": "id", "#at": "redriven_at", "#to": "redriven_to"},
                ExpressionAttributeValues={":at": {"S": rfc3339(at)}, ":to": {"S": to}},
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True
