"""The local endpoint applies a conditional write atomically, as DynamoDB does (`asya_local.endpoint.moto_dynamodb`):
of two claims racing for one hop, one wins. Reading the item is slowed to hold open the window between
moto's check and its write that a busy server opens by chance: a change inside moto, which no request
can make, so the race runs in a child Python with the lock applied (`tests.support.patched_moto`)."""

from __future__ import annotations

import threading
import time
from typing import Any
from unittest.mock import patch

import boto3
from moto import mock_aws
from moto.dynamodb.models.table import Table

from tests.support.patched_moto import run_patched


def _slow_read(read: Any) -> Any:
    def slow_read(self: Table, *args: Any, **kwargs: Any) -> Any:
        found = read(self, *args, **kwargs)
        time.sleep(0.2)
        return found

    return slow_read


def racing_claims() -> list[str]:
    """Two claims for one hop, each on a thread of its own, against moto in this (child) process with its
    reads slowed: how each ended, sorted."""
    outcomes: list[str] = []
    with mock_aws(), patch.object(Table, "get_item", _slow_read(Table.get_item)):
        client = boto3.client("dynamodb")
        client.create_table(
            TableName="ledger",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )

        def claim(worker: str) -> None:
            try:
                client.put_item(
                    TableName="ledger",
                    Item={"id": {"S": "env-1#judge#2#1"}, "by": {"S": worker}},
                    ConditionExpression="attribute_not_exists(id)",
                )
                outcomes.append("won")
            except client.exceptions.ConditionalCheckFailedException:
                outcomes.append("lost")

        racers = [threading.Thread(target=claim, args=(name,)) for name in ("first", "second")]
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join()
    return sorted(outcomes)


def test_of_two_racing_claims_one_wins() -> None:
    raced = run_patched(["apply_dynamodb_lock"], racing_claims)
    assert raced[racing_claims] == ["lost", "won"]
