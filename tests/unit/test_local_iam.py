"""The local endpoint's IAM decisions: what a grant of the mesh's own shapes allows and refuses."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import boto3
import pytest
from botocore.serialize import create_serializer

from asya_local.endpoint.moto_iam import (
    Request,
    decide,
    request_context,
    request_contexts,
    trusted_services,
    trusts,
)

TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/ledger"
QUEUE = "arn:aws:sqs:us-east-1:123456789012:asya-ns-infer"


def policy(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def allow(action: str | list[str], resource: str | list[str], **extra: Any) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": action, "Resource": resource, **extra}


OWN_KEYS = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["asya-ns#*"]}}


@pytest.mark.parametrize(
    ("request_", "allowed"),
    [
        (Request("sqs:SendMessage", (QUEUE,), {}), True),
        (Request("sqs:sendmessage", (QUEUE,), {}), True),  # action names are case-insensitive
        (Request("sqs:SendMessage", (QUEUE.replace("infer", "post"),), {}), False),
        (Request("sqs:DeleteMessage", (QUEUE,), {}), False),
        (Request("dynamodb:GetItem", (TABLE,), {"dynamodb:leadingkeys": ("asya-ns#e1",)}), True),
        (Request("dynamodb:GetItem", (TABLE,), {"dynamodb:leadingkeys": ("other#e1",)}), False),
        (Request("dynamodb:GetItem", (TABLE, TABLE + "2"), {}), False),  # every table must be allowed
    ],
)
def test_allow_needs_action_resource_and_conditions(request_: Request, allowed: bool) -> None:
    documents = [
        policy(
            allow("sqs:SendMessage", "arn:aws:sqs:*:*:asya-ns-i*"), allow("dynamodb:GetItem", TABLE, Condition=OWN_KEYS)
        )
    ]
    assert decide(documents, request_) is allowed


def test_an_allow_whose_condition_fails_does_not_deny_what_another_statement_allows() -> None:
    documents = [policy(allow("dynamodb:GetItem", TABLE, Condition=OWN_KEYS)), policy(allow("dynamodb:*", TABLE))]
    assert decide(documents, Request("dynamodb:GetItem", (TABLE,), {"dynamodb:leadingkeys": ("task-1",)}))


def test_an_explicit_deny_wins() -> None:
    deny = {"Effect": "Deny", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::b/*"}
    documents = [policy(allow("s3:*", "*"), deny)]
    assert not decide(documents, Request("s3:PutObject", ("arn:aws:s3:::b/k",), {}))
    assert decide(documents, Request("s3:GetObject", ("arn:aws:s3:::b/k",), {}))


def test_a_prefix_condition_refuses_a_listing_without_or_outside_the_prefix() -> None:
    documents = [policy(allow("s3:ListBucket", "arn:aws:s3:::b", Condition={"StringLike": {"s3:prefix": ["in/*"]}}))]
    listing = "arn:aws:s3:::b"
    assert decide(documents, Request("s3:ListBucket", (listing,), {"s3:prefix": ("in/x/",)}))
    assert not decide(documents, Request("s3:ListBucket", (listing,), {"s3:prefix": ("out/",)}))
    assert not decide(documents, Request("s3:ListBucket", (listing,), {}))


def test_request_context_names_the_table_the_index_and_the_leading_keys() -> None:
    body = json.dumps({"TableName": "ledger", "IndexName": "open", "Key": {"pk": {"S": "x"}}}).encode()
    found = request_context("dynamodb", "Query", "*", body=body, path="/", region="us-east-1", account="123456789012")
    assert found.resources == (f"{TABLE}/index/open",)
    batch = json.dumps({"RequestItems": {"ledger": {"Keys": []}, "other": {"Keys": []}}}).encode()
    found = request_context(
        "dynamodb", "BatchGetItem", "*", body=batch, path="/", region="us-east-1", account="123456789012"
    )
    assert found.resources == (TABLE, TABLE.replace("ledger", "other"))


def test_batch_operations_are_authorized_under_their_iam_action() -> None:
    found = request_context("sqs", "SendMessageBatch", QUEUE, body=b"", path="/", region="r", account="a")
    assert found.action == "sqs:SendMessage"


def test_x_ray_operations_are_authorized_under_their_iam_action() -> None:
    """moto names them by their path: a role granted `xray:PutTraceSegments` (Lambda's active tracing)
    may write segments locally, as on AWS, and one without may not."""
    found = request_context("xray", "TraceSegments", "*", body=b"{}", path="/TraceSegments", region="r", account="a")
    assert found.action == "xray:PutTraceSegments"
    granted = json.dumps({"Statement": [{"Effect": "Allow", "Action": ["xray:PutTraceSegments"], "Resource": "*"}]})
    assert decide([granted], found)
    assert not decide([json.dumps({"Statement": []})], found)


def test_a_transaction_is_authorized_action_by_action_as_the_operations_it_stands_for() -> None:
    """TransactWriteItems has no IAM action of its own: a role allowed UpdateItem on the table may
    update in a transaction, and one allowed only on another table may not."""
    update = {"TableName": "ledger", "Key": {"pk": {"S": "x"}}, "UpdateExpression": "SET a = :a"}
    check = {"TableName": "other", "Key": {"pk": {"S": "y"}}, "ConditionExpression": "attribute_exists(pk)"}
    body = json.dumps({"TransactItems": [{"Update": update}, {"ConditionCheck": check}]}).encode()
    found = request_contexts("dynamodb", "TransactWriteItems", "*", body=body, path="/", region="r", account="a")
    ledger, other = (f"arn:aws:dynamodb:r:a:table/{name}" for name in ("ledger", "other"))
    assert [(request.action, request.resources) for request in found] == [
        ("dynamodb:UpdateItem", (ledger,)),
        ("dynamodb:ConditionCheckItem", (other,)),
    ]
    both = [policy(allow("dynamodb:UpdateItem", ledger), allow("dynamodb:ConditionCheckItem", other))]
    assert all(decide(both, request) for request in found)
    updates_only = [policy(allow("dynamodb:UpdateItem", "arn:aws:dynamodb:r:a:table/*"))]
    assert [decide(updates_only, request) for request in found] == [True, False]
    assert not decide(both, Request("dynamodb:TransactWriteItems", ("*",), {}))  # never granted as such


def test_job_runs_are_resources_of_their_application() -> None:
    found = request_context(
        "emr-serverless", "GetJobRun", "*", body=b"", path="/applications/app1/jobruns/run1", region="r", account="a"
    )
    assert found.resources == ("arn:aws:emr-serverless:r:a:/applications/app1/jobruns/run1",)


def test_a_user_pool_request_is_authorized_on_the_pool_it_names() -> None:
    """The gateway may make app clients of the mesh's pool alone (`asya_gateway.oauth`), as on AWS."""
    pool = "arn:aws:cognito-idp:r:a:userpool/r_mesh"
    granted = [policy(allow(["cognito-idp:CreateUserPoolClient", "cognito-idp:ListUserPoolClients"], pool))]
    for pool_id, allowed in (("r_mesh", True), ("r_other", False)):
        body = json.dumps({"UserPoolId": pool_id, "ClientName": "mcp-host"}).encode()
        found = request_context(
            "cognito-idp", "CreateUserPoolClient", "*", body=body, path="/", region="r", account="a"
        )
        assert found.resources == (f"arn:aws:cognito-idp:r:a:userpool/{pool_id}",)
        assert decide(granted, found) is allowed


def test_a_service_role_is_assumed_only_by_the_administrator_standing_in_for_the_service() -> None:
    trust = policy({"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"})
    caller = "arn:aws:iam::123456789012:user/someone"
    assert trusted_services(trust) == {"lambda.amazonaws.com"}
    assert trusts(trust, caller, stands_in_for_services=True)
    assert not trusts(trust, caller, stands_in_for_services=False)


@pytest.mark.parametrize("protocol", ["smithy-rpc-v2-cbor", "json", "query"])
def test_metric_data_is_put_only_in_the_namespace_a_grant_names(protocol: str) -> None:
    """x-backlog's grant (`asya_cdk.container_backlog`): `cloudwatch:PutMetricData` on `*` with a
    `cloudwatch:namespace` condition. moto names the operation `monitoring:`; the namespace is read
    from the request in each protocol a botocore may speak to CloudWatch."""
    operation = boto3.client("cloudwatch", region_name="us-east-1").meta.service_model.operation_model("PutMetricData")
    grant = allow("cloudwatch:PutMetricData", "*", Condition={"StringEquals": {"cloudwatch:namespace": "Asya"}})

    def put(namespace: str) -> Request:
        params = {"Namespace": namespace, "MetricData": [{"MetricName": "Backlog", "Value": 3.0}]}
        body = create_serializer(protocol).serialize_to_request(params, operation)["body"]
        if isinstance(body, dict):  # the query protocol's form, as botocore encodes it when it sends
            body = urlencode(body)
        body = body.encode() if isinstance(body, str) else bytes(body)
        return request_context("monitoring", "PutMetricData", "*", body=body, path="/", region="r", account="a")

    assert put("Asya").action == "cloudwatch:PutMetricData"
    assert decide([policy(grant)], put("Asya"))
    assert not decide([policy(grant)], put("Other")), "another namespace is refused, as on AWS"
    assert not decide([policy(allow("monitoring:PutMetricData", "*"))], put("Asya")), "IAM's prefix is cloudwatch"
