"""The local endpoint applies a conditional write atomically, as DynamoDB does (`asya_local.endpoint.moto_dynamodb`):
of two claims racing for one hop, one wins. Reading the item is slowed here to hold open the window
between moto's check and its write that a busy server opens by chance."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.models.table import Table

from asya_local.endpoint.moto_dynamodb import apply_dynamodb_lock


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    apply_dynamodb_lock()
    read = Table.get_item

    def slow_read(self: Table, *args: Any, **kwargs: Any) -> Any:
        found = read(self, *args, **kwargs)
        time.sleep(0.2)
        return found

    with mock_aws():
        client = boto3.client("dynamodb")
        client.create_table(
            TableName="ledger",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        monkeypatch.setattr(Table, "get_item", slow_read)
        yield client


def test_of_two_racing_claims_one_wins(table: Any) -> None:
    outcomes: list[str] = []

    def claim(worker: str) -> None:
        try:
            table.put_item(
                TableName="ledger",
                Item={"id": {"S": "env-1#judge#2#1"}, "by": {"S": worker}},
                ConditionExpression="attribute_not_exists(id)",
            )
            outcomes.append("won")
        except table.exceptions.ConditionalCheckFailedException:
            outcomes.append("lost")

    racers = [threading.Thread(target=claim, args=(name,)) for name in ("first", "second")]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    assert sorted(outcomes) == ["lost", "won"]
