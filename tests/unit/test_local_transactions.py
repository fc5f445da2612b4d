"""The local endpoint runs a DynamoDB transaction all or nothing on its items, with every condition
checked against the items as they were before it (`asya_local.endpoint.moto_transactions`, which
replaces moto's copies of whole tables with copies of the items written; what that saves is measured
by `python -m bench.wide_fan`). Asked of the endpoint's process, which applies it, over HTTP (moto's
in-process mode does not route DynamoDB Streams)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from asya_local.roles import local_client
from asya_local.testing.moto_server import fresh_table


@pytest.fixture
def table(patched_endpoint: str) -> Any:
    client = fresh_table(patched_endpoint, "t")
    client.put_item(TableName="t", Item={"id": {"S": "a"}, "n": {"N": "1"}})
    return client


def update(key: str, expression: str, condition: str | None = None, **values: Any) -> dict[str, Any]:
    action: dict[str, Any] = {"TableName": "t", "Key": {"id": {"S": key}}, "UpdateExpression": expression}
    if values:
        action["ExpressionAttributeValues"] = {f":{name}": value for name, value in values.items()}
    if condition:
        action["ConditionExpression"] = condition
    return {"Update": action}


def item(client: Any, key: str) -> Any:
    """The item under `key` (typed JSON), None if there is none."""
    return client.get_item(TableName="t", Key={"id": {"S": key}}).get("Item")


def changes(client: Any, endpoint: str) -> list[str]:
    """The table's stream, as its consumer reads it: each change's event and key."""
    streams = local_client("dynamodbstreams", endpoint)
    arn = client.describe_table(TableName="t")["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    records = streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"]
    return [f"{record['eventName']} {record['dynamodb']['Keys']['id']['S']}" for record in records]


def test_a_cancelled_transaction_writes_nothing_and_names_each_actions_reason(
    table: Any, patched_endpoint: str
) -> None:
    """Its stream shows nothing either: no action is applied before every condition is checked."""
    with pytest.raises(ClientError) as cancelled:
        table.transact_write_items(
            TransactItems=[
                update("a", "ADD n :one", one={"N": "1"}),
                update("b", "SET n = :one", "attribute_exists(id)", one={"N": "1"}),
            ]
        )
    reasons = [reason["Code"] for reason in cancelled.value.response["CancellationReasons"]]
    assert reasons == ["None", "ConditionalCheckFailed"]
    assert (item(table, "a"), item(table, "b")) == ({"id": {"S": "a"}, "n": {"N": "1"}}, None)
    assert changes(table, patched_endpoint) == ["INSERT a"]


def test_an_action_that_fails_while_applied_puts_back_those_before_it(table: Any) -> None:
    with pytest.raises(ClientError, match="maximum allowed size"):
        table.transact_write_items(
            TransactItems=[
                update("a", "ADD n :one", one={"N": "1"}),
                update("c", "SET n = :one", one={"N": "1"}),
                update("b", "SET big = :big", big={"S": "x" * 410_000}),
            ]
        )
    assert (item(table, "a"), item(table, "b"), item(table, "c")) == ({"id": {"S": "a"}, "n": {"N": "1"}}, None, None)


def test_a_transaction_that_holds_commits_every_action(table: Any) -> None:
    table.transact_write_items(
        TransactItems=[
            update("a", "ADD n :one", "n = :one", one={"N": "1"}),
            update("b", "SET n = :one", "attribute_not_exists(id)", one={"N": "1"}),
        ]
    )
    assert (item(table, "a"), item(table, "b")) == (
        {"id": {"S": "a"}, "n": {"N": "2"}},
        {"id": {"S": "b"}, "n": {"N": "1"}},
    )
