"""The local endpoint's shortcuts through moto's DynamoDB (`asya_local.endpoint.moto_expressions`, and the
`GetRecords` answer of `asya_local.endpoint.moto_streams`) answer as moto did: each request keeps its own
values though the parsed expression is shared, the checks still refuse what DynamoDB refuses, and
stream records read back as they were written. (A moto server, as the local stack runs: moto's
in-process mode does not route DynamoDB Streams calls.)"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.dynamodb.models.dynamo_type import DynamoType, Item

from asya_local.endpoint import moto_expressions
from asya_local.endpoint.moto_expressions import apply_expression_speedups
from asya_local.endpoint.moto_streams import apply_stream_fix
from asya_local.roles import local_client
from tests.support.moto_server import fresh_table, moto_server

CLAIM = "SET hop_position = :position, actor = :actor, hops = list_append(if_not_exists(hops, :none), :hop)"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    apply_expression_speedups()
    apply_stream_fix()
    with moto_server() as url:
        yield url


@pytest.fixture
def table(endpoint: str) -> Any:
    return fresh_table(endpoint, "tasks")


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
    parsed, condition = moto_expressions._parsed.cache_info(), moto_expressions._condition_template.cache_info()
    claim(table, "b", 0, "infer")
    claim(table, "a", 1, "post")
    assert moto_expressions._parsed.cache_info().misses == parsed.misses  # not parsed again
    assert moto_expressions._condition_template.cache_info().misses == condition.misses
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
    for _ in range(2):  # a failed parse is not kept
        with pytest.raises(ValueError, match="Cannot parse condition starting at:;"):
            ConditionExpressionParser("attribute_not_exists(id) ;", {}, {}).parse()


CONDITIONS = [
    "(attribute_not_exists(#r) OR #r <= :rank) AND (attribute_not_exists(hop_position) OR hop_position < :p"
    " OR (hop_position = :p AND (hop_attempt < :a OR (hop_attempt = :a AND held < :now))))",
    "attribute_type(#r, :type) AND size(tags) > :n AND NOT contains(tags, :tag)",
    "#r BETWEEN :low AND :high OR hop_position IN (:p, :a)",
    "begins_with(actor, :prefix) AND route.curr = :actor AND hops[0] = :p",
]
ITEMS: list[dict[str, Any]] = [
    {"id": {"S": "a"}},
    {"id": {"S": "a"}, "rank": {"N": "2"}, "hop_position": {"N": "1"}, "hop_attempt": {"N": "1"}, "held": {"N": "5"}},
    {"id": {"S": "a"}, "rank": {"N": "7"}, "tags": {"SS": ["x", "y"]}, "actor": {"S": "prep"}},
    {"id": {"S": "a"}, "rank": {"S": "7"}, "route": {"M": {"curr": {"S": "prep"}}}, "hops": {"L": [{"N": "1"}]}},
]


def values(seed: int) -> dict[str, dict[str, str]]:
    return {
        ":rank": {"N": str(seed)},
        ":p": {"N": str(seed % 3)},
        ":a": {"N": str(seed % 2)},
        ":now": {"N": str(seed * 2)},
        ":type": {"S": "NS"[seed % 2]},
        ":n": {"N": str(seed % 3)},
        ":tag": {"S": "xyz"[seed % 3]},
        ":low": {"N": str(seed - 2)},
        ":high": {"N": str(seed + 1)},
        ":prefix": {"S": "pr"[: seed % 3]},
        ":actor": {"S": ["prep", "infer"][seed % 2]},
    }


def decide(condition: Any, found: Item) -> object:
    """What the condition says of the item, or the error it raises (moto refuses some comparisons)."""
    try:
        return bool(condition.expr(found))
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)


def test_a_kept_condition_decides_as_moto_parses_it_with_each_requests_values(endpoint: str) -> None:
    """The kept tree with this request's values decides every item as moto's own parse does."""
    names = {"#r": "rank"}
    for expression in CONDITIONS:
        for seed in range(8):
            given = {key: value for key, value in values(seed).items() if key in expression}
            kept = ConditionExpressionParser(expression, names, given)
            own = ConditionExpressionParser(expression, names, given)
            condition, reference = kept.parse(), moto_expressions._PARSE_CONDITION(own)
            for attributes in ITEMS:
                found = Item(DynamoType(attributes["id"]), None, attributes)
                assert decide(condition, found) == decide(reference, found), (expression, seed, attributes)
            assert (kept.expr_attr_names_found, kept.expr_attr_values_found) == (
                own.expr_attr_names_found,
                own.expr_attr_values_found,
            )
    assert moto_expressions._condition_template.cache_info().currsize >= len(CONDITIONS)


@pytest.mark.parametrize(
    ("names", "given", "refusal"),
    [
        ({}, {":p": {"N": "1"}}, "#r"),  # a name the expression uses is missing
        ({"#r": "rank"}, {}, ":p"),  # a value the expression uses is missing
    ],
)
def test_a_condition_missing_a_name_or_value_is_refused_as_moto_refuses_it(
    endpoint: str, names: dict[str, str], given: dict[str, Any], refusal: str
) -> None:
    for _ in range(2):
        with pytest.raises(KeyError, match=refusal):
            ConditionExpressionParser("#r < :p", names, given).parse()


def test_updates_walk_the_tree_as_moto_does(table: Any) -> None:
    """Nested paths, functions, arithmetic, REMOVE, ADD and DELETE through the patched walks."""
    table.put_item(
        TableName="tasks",
        Item={
            "id": {"S": "a"},
            "n": {"N": "1"},
            "m": {"M": {"x": {"N": "1"}}},
            "tags": {"SS": ["a", "b"]},
            "gone": {"S": "x"},
        },
    )
    table.update_item(
        TableName="tasks",
        Key={"id": {"S": "a"}},
        UpdateExpression="SET n = n + :one, m.x = m.x - :one, #l = list_append(if_not_exists(#l, :none), :l), "
        "m.y = :s REMOVE gone ADD tally :one DELETE tags :a",
        ExpressionAttributeNames={"#l": "list"},
        ExpressionAttributeValues={
            ":one": {"N": "1"},
            ":none": {"L": []},
            ":l": {"L": [{"S": "z"}]},
            ":s": {"S": "new"},
            ":a": {"SS": ["a"]},
        },
    )
    assert item(table, "a") == {
        "id": {"S": "a"},
        "n": {"N": "2"},
        "m": {"M": {"x": {"N": "0"}, "y": {"S": "new"}}},
        "list": {"L": [{"S": "z"}]},
        "tally": {"N": "1"},
        "tags": {"SS": ["b"]},
    }
    with pytest.raises(ClientError, match=r"Cannot update attribute id\. This attribute is part of the key"):
        table.update_item(
            TableName="tasks",
            Key={"id": {"S": "a"}},
            UpdateExpression="SET id = :s",
            ExpressionAttributeValues={":s": {"S": "b"}},
        )
    with pytest.raises(ClientError, match="unused in expressions"):
        table.update_item(
            TableName="tasks",
            Key={"id": {"S": "a"}},
            UpdateExpression="SET n = :one",
            ConditionExpression="n > :one",
            ExpressionAttributeValues={":one": {"N": "1"}, ":spare": {"N": "2"}},
        )


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
