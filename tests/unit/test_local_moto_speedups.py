"""The local endpoint's shortcuts through moto's DynamoDB (`asya_local.endpoint.moto_expressions`, and the
`GetRecords` answer of `asya_local.endpoint.moto_streams`) answer as moto did: each request keeps its own
values though the parsed expression is shared, the checks still refuse what DynamoDB refuses, and
stream records read back as they were written. (A moto server, as the local stack runs: moto's
in-process mode does not route DynamoDB Streams calls.)"""

from __future__ import annotations

import datetime
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.server import ThreadedMotoServer

from asya_local.endpoint import moto_expressions
from asya_local.endpoint.moto_expressions import apply_expression_speedups
from asya_local.endpoint.moto_streams import apply_stream_fix
from asya_local.stack import free_port, local_client

CLAIM = "SET hop_position = :position, actor = :actor, hops = list_append(if_not_exists(hops, :none), :hop)"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    apply_expression_speedups()
    apply_stream_fix()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    url = f"http://127.0.0.1:{server._port}"
    try:
        yield url
    finally:
        reset(url)  # moto's state is the process's: leave none to the next test's server
        server.stop()


def reset(endpoint: str) -> None:
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=10).close()


@pytest.fixture
def table(endpoint: str) -> Any:
    reset(endpoint)
    client = local_client("dynamodb", endpoint)
    client.create_table(
        TableName="tasks",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    return client


def claim(client: Any, task: str, position: int, actor: str) -> None:
    client.update_item(
        TableName="tasks",
        Key={"id": {"S": task}},
        UpdateExpression=CLAIM,
        ConditionExpression="attribute_not_exists(hop_position) OR hop_position < :position",
        ExpressionAttributeValues={
            ":position": {"N": str(position)},
            ":actor": {"S": actor},
            ":none": {"L": []},
            ":hop": {"L": [{"N": str(position)}]},
        },
    )


def item(client: Any, task: str) -> dict[str, Any]:
    found: dict[str, Any] = client.get_item(TableName="tasks", Key={"id": {"S": task}}, ConsistentRead=True)["Item"]
    return found


def test_one_parsed_expression_serves_every_request_each_with_its_own_values(table: Any) -> None:
    claim(table, "a", 0, "prep")
    parsed, lexed = moto_expressions._parsed.cache_info(), moto_expressions._lexed.cache_info()
    claim(table, "b", 0, "infer")
    claim(table, "a", 1, "post")
    assert moto_expressions._parsed.cache_info().misses == parsed.misses  # not parsed again
    assert moto_expressions._lexed.cache_info().misses == lexed.misses
    assert item(table, "a")["actor"] == {"S": "post"}
    assert item(table, "a")["hops"] == {"L": [{"N": "0"}, {"N": "1"}]}
    assert item(table, "b")["actor"] == {"S": "infer"}
    assert item(table, "b")["hops"] == {"L": [{"N": "0"}]}
    with pytest.raises(table.exceptions.ConditionalCheckFailedException):
        claim(table, "a", 1, "again")
    assert item(table, "a")["hops"] == {"L": [{"N": "0"}, {"N": "1"}]}


@pytest.mark.parametrize(
    ("expression", "refusal"),
    [
        ("SET a = :v SET b = :v", 'The "SET" section can only be used once'),
        ("ADD a :n ADD b :n", 'The "ADD" section can only be used once'),
        ("REMOVE a REMOVE b", 'The "REMOVE" section can only be used once'),
        ("SET a = :v, b = :v, a = :v", r"Two document paths overlap .* path one: \[a\], path two: \[a\]"),
        ("SET b = :v, a.c = :v REMOVE a", r"Two document paths overlap .* path one: \[a, c\], path two: \[a\]"),
    ],
)
def test_an_expression_dynamodb_refuses_is_still_refused(table: Any, expression: str, refusal: str) -> None:
    values = {key: value for key, value in {":v": {"S": "x"}, ":n": {"N": "1"}}.items() if key in expression}
    with pytest.raises(ClientError, match=refusal):
        table.update_item(
            TableName="tasks",
            Key={"id": {"S": "a"}},
            UpdateExpression=expression,
            **({"ExpressionAttributeValues": values} if values else {}),
        )


def test_a_condition_that_does_not_lex_is_refused_every_time(endpoint: str) -> None:
    for _ in range(2):  # a failed lexing is not kept
        with pytest.raises(ValueError, match="Cannot parse condition starting at:;"):
            ConditionExpressionParser("attribute_not_exists(id) ;", None, None).parse()


def test_stream_records_read_back_as_written(endpoint: str, table: Any) -> None:
    table.put_item(TableName="tasks", Item={"id": {"S": "a"}, "blob": {"B": b"\x00\xff"}, "n": {"N": "1.5"}})
    claim(table, "a", 0, "prep")
    streams = local_client("dynamodbstreams", endpoint)
    arn = table.describe_table(TableName="tasks")["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    answer = streams.get_records(ShardIterator=iterator["ShardIterator"], Limit=10)
    inserted, modified = (record["dynamodb"] for record in answer["Records"])
    assert [record["eventName"] for record in answer["Records"]] == ["INSERT", "MODIFY"]
    assert inserted["NewImage"] == {"id": {"S": "a"}, "blob": {"B": b"\x00\xff"}, "n": {"N": "1.5"}}
    assert "OldImage" not in inserted
    assert modified["OldImage"] == inserted["NewImage"]
    assert modified["NewImage"]["hops"] == {"L": [{"N": "0"}]}
    assert modified["Keys"] == {"id": {"S": "a"}}
    assert int(modified["SequenceNumber"]) > int(inserted["SequenceNumber"])
    age = datetime.datetime.now(datetime.UTC) - modified["ApproximateCreationDateTime"]
    assert datetime.timedelta(0) <= age < datetime.timedelta(minutes=1)
    later = streams.get_records(ShardIterator=answer["NextShardIterator"])
    assert later["Records"] == []
