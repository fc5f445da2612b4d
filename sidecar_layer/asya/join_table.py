"""The joins table (`asya-<ns>-joins`): what a join actor has gathered of each fan (`asya.joins`).

Items share a fan's partition (`fan`), sorted by `slot`:

- slot -1, the **head**: the fan's width, the slots arrived and the slots failed (number sets, so a
  redelivered arrival cannot count twice) and, once the join gave up, which slot's arrival made it;
- slot k ≥ 0: branch k as it arrived, how it ended and its envelope (`body`: the JSON the join keeps,
  its payload in S3 when large, `asya.gathering`).

An arrival costs two writes whatever the width (its slot, then its count on the head), with no read:
the head's update returns the head as it left it, or, for a redelivery, as it was. Only the arrival
that completes a fan reads it back, in one strongly consistent query. Items expire with the task
records (`expires_at`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from asya.clients import LazyClient
from asya.dynamo import from_item, to_item
from asya.envelope import Phase
from asya.joins import JoinFrame

if TYPE_CHECKING:
    from types_boto3_dynamodb.client import DynamoDBClient

HEAD = -1


class JoinMismatchError(RuntimeError):
    """A branch names a width its fan was not started with (its source ran again and fanned out
    differently): it cannot be gathered, and goes to x-sump."""


@dataclass(frozen=True, slots=True)
class Head:
    """A fan's head as an arrival left it (or, for a redelivery, found it)."""

    width: int
    arrived: frozenset[int]
    failed: frozenset[int]
    given_up_by: int | None = None

    @property
    def complete(self) -> bool:
        return len(self.arrived) >= self.width


@dataclass(frozen=True, slots=True)
class Kept:
    """A branch as the table holds it."""

    slot: int
    outcome: Phase
    body: str


class JoinTable:
    client: LazyClient[DynamoDBClient] = LazyClient("dynamodb")

    def __init__(self, table: str, ttl_seconds: int, client: DynamoDBClient | None = None) -> None:
        self.table = table
        self.ttl_seconds = ttl_seconds
        self._client = client

    def keep(self, frame: JoinFrame, outcome: Phase, body: str) -> None:
        """Keep branch `frame.slot` once (a redelivery writes nothing)."""
        item = {"fan": frame.fan, "slot": frame.slot, "outcome": outcome.value, "body": body}
        try:
            self.client.put_item(
                TableName=self.table,
                Item=to_item({**item, "expires_at": self._expires()}),
                ConditionExpression="attribute_not_exists(#fan)",
                ExpressionAttributeNames={"#fan": "fan"},
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return

    def arrive(self, frame: JoinFrame, failed: bool) -> Head:
        """Count branch `frame.slot` as arrived (and failed) on the head, once; the head as it now is."""
        slot = str(frame.slot)  # string sets: `asya.dynamo.to_item` writes sets as such
        values = {":slot": slot, ":slots": {slot}, ":width": frame.width, ":expires": self._expires()}
        update = "ADD #arrived :slots, #failed :slots" if failed else "ADD #arrived :slots"
        names = {"#arrived": "arrived", "#width": "width"} | ({"#failed": "failed"} if failed else {})
        try:
            response = self.client.update_item(
                TableName=self.table,
                Key=to_item({"fan": frame.fan, "slot": HEAD}),
                UpdateExpression=f"{update} SET #width = :width, expires_at = :expires",
                ConditionExpression="NOT contains(#arrived, :slot) AND "
                "(attribute_not_exists(#width) OR #width = :width)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=to_item(values),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except self.client.exceptions.ConditionalCheckFailedException as exc:
            head = _head(from_item(exc.response.get("Item", {})))  # type: ignore[arg-type]
            if head.width != frame.width:
                raise JoinMismatchError(
                    f"branch {frame.slot + 1} of fan {frame.fan} says width {frame.width}; the fan was started with "
                    f"{head.width}"
                ) from None
            return head
        return _head(from_item(response.get("Attributes", {})))

    def give_up(self, frame: JoinFrame) -> bool:
        """Mark the fan failed by branch `frame.slot`'s arrival: True for the arrival that did (also
        when it is delivered again), False once another had."""
        try:
            self.client.update_item(
                TableName=self.table,
                Key=to_item({"fan": frame.fan, "slot": HEAD}),
                UpdateExpression="SET given_up_by = :slot",
                ConditionExpression="attribute_not_exists(given_up_by)",
                ExpressionAttributeValues=to_item({":slot": frame.slot}),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except self.client.exceptions.ConditionalCheckFailedException as exc:
            return _head(from_item(exc.response.get("Item", {}))).given_up_by == frame.slot  # type: ignore[arg-type]
        return True

    def gathered(self, fan: str) -> list[Kept]:
        """Every branch kept for `fan`, in slot order (one strongly consistent query, paginated)."""
        pages = self.client.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="#fan = :fan AND #slot >= :first",
            ExpressionAttributeNames={"#fan": "fan", "#slot": "slot"},
            ExpressionAttributeValues=to_item({":fan": fan, ":first": 0}),
            ConsistentRead=True,
        )
        kept = [from_item(item) for page in pages for item in page.get("Items", [])]
        return [Kept(int(item["slot"]), Phase(item["outcome"]), str(item["body"])) for item in kept]

    def _expires(self) -> int:
        return int(time.time()) + self.ttl_seconds


def _head(item: dict[str, Any]) -> Head:
    given_up_by = item.get("given_up_by")
    return Head(
        width=int(item.get("width", 0)),
        arrived=frozenset(int(slot) for slot in item.get("arrived", ())),
        failed=frozenset(int(slot) for slot in item.get("failed", ())),
        given_up_by=None if given_up_by is None else int(given_up_by),
    )
