"""The local endpoint writes DynamoDB's item answers directly (`asya_local.endpoint.moto_items`): every
answer is the one moto's serializer writes, binary values, sets, empty maps, missing items and
pages included."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from moto.dynamodb.responses import DynamoHandler

from asya_local.endpoint import moto_items
from asya_local.roles import local_client
from tests.support.moto_server import create_id_table, moto_server

ITEM = {
    "id": {"S": "a"},
    "b": {"B": b"\x00\xff"},
    "bs": {"BS": [b"\x01", b"\x02"]},
    "n": {"N": "1.50"},
    "ns": {"NS": ["1", "2"]},
    "ss": {"SS": ["x"]},
    "t": {"BOOL": True},
    "z": {"NULL": True},
    "l": {"L": [{"S": "q"}, {"M": {"k": {"B": b"\x03"}}}]},
    "m": {"M": {"e": {"M": {}}, "el": {"L": []}}},
}


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, list[tuple[str, Any, Any]]]]:
    """A table on a moto server whose DynamoDB answers are written both ways: each operation the
    direct answer served, with the serializer's answer beside it."""
    written: list[tuple[str, Any, Any]] = []

    def both(handler: DynamoHandler, action_result: Any) -> Any:
        serialized = moto_items._SERIALIZED(handler, action_result)
        direct = moto_items._serialized(handler, action_result)
        written.append((handler._get_action(), serialized, direct))
        return direct

    monkeypatch.setattr(DynamoHandler, "serialized", both)
    with moto_server() as url:
        client = local_client("dynamodb", url)
        create_id_table(client, "t")
        yield client, written


def test_item_answers_are_the_serializers(answers: tuple[Any, list[tuple[str, Any, Any]]]) -> None:
    client, written = answers
    client.put_item(TableName="t", Item=ITEM)
    client.put_item(TableName="t", Item={**ITEM, "id": {"S": "b"}}, ReturnValues="ALL_OLD")
    client.put_item(
        TableName="t", Item={**ITEM, "id": {"S": "b"}}, ReturnValues="ALL_OLD", ReturnConsumedCapacity="TOTAL"
    )
    assert client.get_item(TableName="t", Key={"id": {"S": "a"}})["Item"] == ITEM
    assert "Item" not in client.get_item(TableName="t", Key={"id": {"S": "missing"}})
    keys = [{"id": {"S": key}} for key in ("a", "b", "missing")]
    assert len(client.batch_get_item(RequestItems={"t": {"Keys": keys}})["Responses"]["t"]) == 2
    client.batch_get_item(RequestItems={"t": {"Keys": keys[:1], "ProjectionExpression": "id, b"}})
    for returned in ("NONE", "ALL_OLD", "ALL_NEW", "UPDATED_OLD", "UPDATED_NEW"):
        client.update_item(
            TableName="t",
            Key={"id": {"S": "a"}},
            UpdateExpression="SET n = n + :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
            ReturnValues=returned,
        )
    client.query(TableName="t", KeyConditionExpression="id = :a", ExpressionAttributeValues={":a": {"S": "a"}})
    assert "LastEvaluatedKey" in client.scan(TableName="t", Limit=1)
    client.scan(TableName="t", Select="COUNT")
    client.transact_get_items(TransactItems=[{"Get": {"TableName": "t", "Key": {"id": {"S": "a"}}}}])
    client.delete_item(TableName="t", Key={"id": {"S": "b"}}, ReturnValues="ALL_OLD")  # left to the serializer
    operations = {operation for operation, _, _ in written}
    assert operations >= moto_items.ITEM_OPERATIONS
    for operation, (status, headers, body), (direct_status, direct_headers, direct_body) in written:
        assert (direct_status, json.loads(direct_body)) == (status, json.loads(body)), operation
        assert direct_headers["Content-Type"] == headers["Content-Type"], operation
