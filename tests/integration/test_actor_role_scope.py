"""An actor's role sees only its hop (security review, finding 4), on the local endpoint as on AWS:
with the credentials Lambda would give the `prep` actor, a task record is read only by naming the
hop's attributes, and neither its input nor its owner can be read or written; its queue grants name
no x-resume. The hops of a pipeline still run under the same role."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from asya_local.roles import LAMBDA, local_client, role_environment
from tests.support.stack import RunningMesh

pytestmark = pytest.mark.integration


def _denied(call: Any, **arguments: Any) -> bool:
    try:
        call(**arguments)
    except ClientError as error:  # the endpoint answers a JSON protocol's refusal in IAM's XML: a 403
        return error.response["ResponseMetadata"]["HTTPStatusCode"] == 403 and "AccessDenied" in str(error)
    return False


def test_an_actors_role_reads_and_writes_only_its_hops_attributes(running_mesh: RunningMesh) -> None:
    task_id = f"scope-{uuid.uuid4().hex[:8]}"
    running_mesh.send(["prep", "infer", "post"], {"n": 1}, task_id)
    assert running_mesh.result(task_id)["outcome"] == "succeeded", "the hops' own writes are granted"
    stack = running_mesh.stack
    role = stack.client("lambda").get_function(FunctionName=f"asya-{stack.namespace}-prep")["Configuration"]["Role"]
    credentials = role_environment(stack.client, role, LAMBDA, "prep-snoop")
    dynamodb = local_client("dynamodb", stack.endpoint, credentials)
    table, key = stack.outputs["TasksTable"], {"id": {"S": task_id}}

    assert _denied(dynamodb.get_item, TableName=table, Key=key), "the whole record"
    named = {"ExpressionAttributeNames": {"#i": "input"}, "ProjectionExpression": "#i"}
    assert _denied(dynamodb.get_item, TableName=table, Key=key, **named)
    owner = {"UpdateExpression": "SET #o = :o", "ExpressionAttributeNames": {"#o": "owner"}}
    assert _denied(
        dynamodb.update_item, TableName=table, Key=key, ExpressionAttributeValues={":o": {"S": "jwt:bob"}}, **owner
    )
    status = {"ExpressionAttributeNames": {"#s": "status"}, "ProjectionExpression": "id, #s"}
    assert dynamodb.get_item(TableName=table, Key=key, **status)["Item"]["status"] == {"S": "succeeded"}

    sqs = local_client("sqs", stack.endpoint, credentials)
    resume = running_mesh.queue_url("x-resume")
    assert _denied(sqs.send_message, QueueUrl=resume, MessageBody="{}"), "only a person's answer resumes a task"
