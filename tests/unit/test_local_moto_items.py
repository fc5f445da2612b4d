"""The local endpoint writes DynamoDB's item answers directly (`asya_local.endpoint.moto_items`): every
answer is the one moto's serializer writes, binary values, sets, empty maps, missing items and
pages included. The same requests go to the endpoint's process, which applies it, and to unpatched moto
on loopback in this process, and their answers are compared as written, over HTTP."""

from __future__ import annotations

import json
from typing import Any

from asya_local.endpoint.moto_items import ITEM_OPERATIONS
from asya_local.roles import local_client
from asya_local.testing.moto_server import create_id_table, moto_server, reset

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


def item_operations(client: Any) -> None:
    """Every operation that answers with items, in the shapes the mesh asks for and a few more."""
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


def answers(url: str) -> list[tuple[str, int, str, Any]]:
    """What the server at `url` answered `item_operations` on an empty table, as written: each
    operation's name, status, content type and JSON."""
    written: list[tuple[str, int, str, Any]] = []

    def keep(operation_model: Any, response_dict: dict[str, Any], **_: Any) -> None:
        headers, body = response_dict["headers"], response_dict["body"]
        written.append((operation_model.name, response_dict["status_code"], headers["Content-Type"], json.loads(body)))

    reset(url)
    client = local_client("dynamodb", url)
    create_id_table(client, "t")
    client.meta.events.register("before-parse.dynamodb", keep)
    item_operations(client)
    return written


def test_item_answers_are_the_serializers(patched_endpoint: str) -> None:
    direct = answers(patched_endpoint)
    with moto_server() as unpatched:
        serialized = answers(unpatched)
    assert {operation for operation, *_ in direct} >= ITEM_OPERATIONS
    assert len(direct) == len(serialized)
    for answer, moto_answer in zip(direct, serialized, strict=True):
        assert answer == moto_answer, answer[0]
