"""The local endpoint's fine-grained DynamoDB condition keys: which attributes a request names, what
it selects and what it returns, and grants held to a list of attributes decided on them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from asya_local.endpoint.dynamodb_conditions import condition_keys, expression_attributes
from asya_local.endpoint.moto_iam import Request, decide, request_context, request_contexts

TABLE = "arn:aws:dynamodb:r:a:table/tasks"
KEY = {"id": {"S": "t1"}}
ALLOWED = ["id", "status", "rank", "hops", "fans"]
HELD = {
    "ForAllValues:StringEquals": {"dynamodb:Attributes": ALLOWED},
    "StringEqualsIfExists": {"dynamodb:Select": "SPECIFIC_ATTRIBUTES", "dynamodb:ReturnValues": ["NONE"]},
}


def policy(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def allowed(operation: str, payload: dict[str, Any], *statements: dict[str, Any]) -> bool:
    statements = statements or (
        {"Effect": "Allow", "Action": f"dynamodb:{operation}", "Resource": TABLE, "Condition": HELD},
    )
    return decide([policy(*statements)], Request(f"dynamodb:{operation}", (TABLE,), condition_keys(operation, payload)))


def test_an_expression_names_each_paths_first_element_through_its_aliases() -> None:
    update = (
        "SET #s = :s, hops = list_append(if_not_exists(hops, :none), :hop), fans.v = :v, a[0].b = :b"
        " ADD done_ids :ids REMOVE open_shard"
    )
    assert sorted(expression_attributes(update, {"#s": "status"})) == sorted(
        ["status", "hops", "hops", "fans", "a", "done_ids", "open_shard"]
    )
    condition = "attribute_not_exists(#r) OR (#r < :rank AND NOT contains(done_ids, :me)) AND size(x) BETWEEN :a AND :b"
    assert set(expression_attributes(condition, {"#r": "rank"})) == {"rank", "done_ids", "x"}


def test_a_request_names_its_key_update_condition_and_projection() -> None:
    update = {
        "Key": KEY,
        "UpdateExpression": "SET #s = :s",
        "ConditionExpression": "attribute_not_exists(#o)",
        "ExpressionAttributeNames": {"#s": "status", "#o": "owner"},
    }
    assert condition_keys("UpdateItem", update) == {
        "dynamodb:attributes": ("id", "owner", "status"),
        "dynamodb:returnvalues": ("NONE",),
    }
    assert condition_keys("GetItem", {"Key": KEY})["dynamodb:select"] == ("ALL_ATTRIBUTES",)
    projected = condition_keys(
        "GetItem", {"Key": KEY, "ProjectionExpression": "id, #s", "ExpressionAttributeNames": {"#s": "status"}}
    )
    assert projected == {"dynamodb:attributes": ("id", "status"), "dynamodb:select": ("SPECIFIC_ATTRIBUTES",)}
    batch = {"RequestItems": {"tasks": {"Keys": [KEY, {"id": {"S": "t2"}}], "ProjectionExpression": "rank"}}}
    assert condition_keys("BatchGetItem", batch) == {
        "dynamodb:attributes": ("id", "rank"),
        "dynamodb:select": ("SPECIFIC_ATTRIBUTES",),
    }
    assert condition_keys("Query", {"IndexName": "by-status"})["dynamodb:select"] == ("ALL_PROJECTED_ATTRIBUTES",)


@pytest.mark.parametrize(
    ("operation", "payload", "expected"),
    [
        ("GetItem", {"Key": KEY}, False),  # the whole record
        ("GetItem", {"Key": KEY, "ProjectionExpression": "id, #s", "ExpressionAttributeNames": {"#s": "status"}}, True),
        ("GetItem", {"Key": KEY, "ProjectionExpression": "#i", "ExpressionAttributeNames": {"#i": "input"}}, False),
        ("GetItem", {"Key": KEY, "AttributesToGet": ["owner"]}, False),
        (
            "UpdateItem",
            {"Key": KEY, "UpdateExpression": "SET #s = :s", "ExpressionAttributeNames": {"#s": "status"}},
            True,
        ),
        (
            "UpdateItem",
            {"Key": KEY, "UpdateExpression": "SET #o = :o", "ExpressionAttributeNames": {"#o": "owner"}},
            False,
        ),
        ("UpdateItem", {"Key": KEY, "UpdateExpression": "SET fans.v = :v"}, True),
        (
            "UpdateItem",
            {
                "Key": KEY,
                "UpdateExpression": "SET #r = :r",
                "ConditionExpression": "owner = :me",
                "ExpressionAttributeNames": {"#r": "rank"},
            },
            False,
        ),
        ("UpdateItem", {"Key": KEY, "UpdateExpression": "SET hops = :h", "ReturnValues": "ALL_NEW"}, False),
        ("UpdateItem", {"Key": {"pk": {"S": "x"}}, "UpdateExpression": "SET hops = :h"}, False),  # the key counts
    ],
)
def test_a_grant_held_to_attributes(operation: str, payload: dict[str, Any], expected: bool) -> None:
    assert allowed(operation, payload) is expected


def test_for_any_value_denies_a_write_naming_one_of_the_listed_attributes() -> None:
    everything = {"Effect": "Allow", "Action": "dynamodb:UpdateItem", "Resource": TABLE}
    guarded = {
        "Effect": "Deny",
        "Action": "dynamodb:UpdateItem",
        "Resource": TABLE,
        "Condition": {"ForAnyValue:StringEquals": {"dynamodb:Attributes": ["owner", "input"]}},
    }
    owner = {
        "Key": KEY,
        "UpdateExpression": "SET #o = :o, #s = :s",
        "ExpressionAttributeNames": {"#o": "owner", "#s": "status"},
    }
    assert not allowed("UpdateItem", owner, everything, guarded)
    assert allowed("UpdateItem", {"Key": KEY, "UpdateExpression": "SET output = :o"}, everything, guarded)


def test_the_endpoint_computes_the_keys_for_requests_and_transaction_actions() -> None:
    body = json.dumps({"TableName": "tasks", "Key": KEY, "UpdateExpression": "SET rank = :r"}).encode()
    found = request_context("dynamodb", "UpdateItem", "*", body=body, path="/", region="r", account="a")
    assert found.context["dynamodb:attributes"] == ("id", "rank")
    assert found.context["dynamodb:returnvalues"] == ("NONE",)
    update = {
        "TableName": "tasks",
        "Key": KEY,
        "UpdateExpression": "SET #o = :o",
        "ExpressionAttributeNames": {"#o": "owner"},
    }
    body = json.dumps({"TransactItems": [{"Update": update}]}).encode()
    [action] = request_contexts("dynamodb", "TransactWriteItems", "*", body=body, path="/", region="r", account="a")
    assert action.context["dynamodb:attributes"] == ("id", "owner")
