"""The local endpoint's shortcuts through moto's DynamoDB (`asya_local.endpoint.moto_expressions`, and the
`GetRecords` answer of `asya_local.endpoint.moto_streams`) answer as moto did: each request keeps its own
values though the parsed expression is shared, the checks still refuse what DynamoDB refuses, and
stream records read back as they were written, asked of the endpoint's process over HTTP (moto's
in-process mode does not route DynamoDB Streams calls). What a kept condition decides, and how a
condition that does not parse is refused, is moto's parser's own answer, which no request shows (the
server answers a 500): those are compared in a child Python with the speedups applied
(`tests.support.patched_moto`)."""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.dynamodb.models.dynamo_type import DynamoType, Item

from asya_local.endpoint import moto_expressions
from asya_local.roles import local_client
from asya_local.testing.moto_server import fresh_table
from tests.support.patched_moto import run_patched

CLAIM = "SET hop_position = :position, actor = :actor, hops = list_append(if_not_exists(hops, :none), :hop)"


@pytest.fixture
def table(patched_endpoint: str) -> Any:
    return fresh_table(patched_endpoint, "tasks")


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


def test_every_request_of_one_expression_keeps_its_own_values(table: Any) -> None:
    """One parsed update expression and one condition tree serve the three claims on the endpoint."""
    claim(table, "a", 0, "prep")
    claim(table, "b", 0, "infer")
    claim(table, "a", 1, "post")
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
SEEDS = range(8)
UNPARSED = [  # (condition, names, values)
    ("attribute_not_exists(id) ;", {}, {}),  # it does not lex
    ("#r < :p", {}, {":p": {"N": "1"}}),  # a name it uses is missing
    ("#r < :p", {"#r": "rank"}, {}),  # a value it uses is missing
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


def outcome(call: Callable[[], object]) -> object:
    """What the call returns, or the error it raises as `Type: message` (moto refuses some comparisons)."""
    try:
        return call()
    except (KeyError, TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"


def decide(condition: Any, attributes: dict[str, Any]) -> object:
    """What the condition says of the item, or the error it raises."""
    return outcome(lambda: bool(condition.expr(Item(DynamoType(attributes["id"]), None, attributes))))


def kept_differences() -> dict[str, Any]:
    """Run in the patched child: where a kept tree with a request's values decides an item otherwise
    than moto's own parse does, or finds other names or values (none, if it is right), out of how many
    cases, and how many trees are kept."""
    names, differing, cases = {"#r": "rank"}, [], 0
    for expression, seed in ((expression, seed) for expression in CONDITIONS for seed in SEEDS):
        given = {key: value for key, value in values(seed).items() if key in expression}
        kept = ConditionExpressionParser(expression, names, given)
        own = ConditionExpressionParser(expression, names, given)
        condition, reference = kept.parse(), moto_expressions._PARSE_CONDITION(own)
        found = (kept.expr_attr_names_found, kept.expr_attr_values_found)
        if found != (own.expr_attr_names_found, own.expr_attr_values_found):
            differing.append([expression, seed, "found", found])
        for attributes in ITEMS:
            cases += 1
            if (by_kept := decide(condition, attributes)) != (by_moto := decide(reference, attributes)):
                differing.append([expression, seed, attributes, by_kept, by_moto])
    return {"differing": differing, "cases": cases, "kept": moto_expressions._condition_template.cache_info().currsize}


def refusals() -> list[list[object]]:
    """Run in the patched child: each condition of UNPARSED parsed twice (a failed parse is not kept),
    then by moto's own parse: each time's error."""
    return [
        [
            *(outcome(ConditionExpressionParser(*unparsed).parse) for _ in range(2)),
            outcome(functools.partial(moto_expressions._PARSE_CONDITION, ConditionExpressionParser(*unparsed))),
        ]
        for unparsed in UNPARSED
    ]


@pytest.fixture(scope="module")
def parsed() -> dict[Callable[[], Any], Any]:
    """What moto's condition parser makes with the speedups applied, in a child Python."""
    return run_patched(["apply_expression_speedups"], kept_differences, refusals)


def test_a_kept_condition_decides_as_moto_parses_it_with_each_requests_values(parsed: Any) -> None:
    """The kept tree with this request's values decides every item as moto's own parse does."""
    compared = parsed[kept_differences]
    assert compared["differing"] == []
    assert compared["cases"] == len(CONDITIONS) * len(SEEDS) * len(ITEMS)
    # all but the BETWEEN one, whose operands' types moto checks while parsing: it is parsed as moto parses it
    assert compared["kept"] == len(CONDITIONS) - 1


def test_a_condition_that_does_not_parse_is_refused_as_moto_refuses_it_every_time(parsed: Any) -> None:
    assert parsed[refusals] == [
        ["ValueError: Cannot parse condition starting at:;"] * 3,
        ["KeyError: '#r'"] * 3,
        ["KeyError: ':p'"] * 3,
    ]


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


def test_stream_records_read_back_as_written(patched_endpoint: str, table: Any) -> None:
    table.put_item(TableName="tasks", Item={"id": {"S": "a"}, "blob": {"B": b"\x00\xff"}, "n": {"N": "1.5"}})
    claim(table, "a", 0, "prep")
    streams = local_client("dynamodbstreams", patched_endpoint)
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
