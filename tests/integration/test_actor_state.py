"""An actor's state on the local stack (docs/actors.md, "State"): kept across tasks, not written twice by
a hop whose worker was killed after the write, and out of reach of another actor's role."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from asya_local.roles import LAMBDA, local_client, role_environment
from tests.support.stack import RunningMesh

pytestmark = pytest.mark.integration

TABLE = "asya-itest-actor-state"


def _stored(running_mesh: RunningMesh, key: str) -> dict[str, Any]:
    item: dict[str, Any] = running_mesh.stack.client("dynamodb").get_item(
        TableName=TABLE, Key={"key": {"S": key}}, ConsistentRead=True
    )["Item"]
    return item


def test_an_actor_counts_its_calls_across_tasks(running_mesh: RunningMesh) -> None:
    key = f"calls-{uuid.uuid4().hex[:6]}"
    counts = []
    for _ in range(3):
        task_id = f"count-{uuid.uuid4().hex[:8]}"
        running_mesh.send(["counter", "post"], {"key": key}, task_id)
        result = running_mesh.result(task_id)
        assert result["outcome"] == "succeeded", result
        counts.append(result["envelope"]["payload"]["count"])
    assert counts == [1, 2, 3]
    stored = _stored(running_mesh, f"counter#{key}")
    assert (stored["value"], stored["version"]) == ({"S": "3"}, {"N": "3"})


@pytest.mark.timeout(180)
def test_a_worker_killed_after_its_state_write_does_not_count_twice(running_mesh: RunningMesh, tmp_path: Path) -> None:
    key = f"killed-{uuid.uuid4().hex[:6]}"
    died = tmp_path / "died"
    task_id = f"kill-{uuid.uuid4().hex[:8]}"
    running_mesh.send(["counter", "post"], {"key": key, "die_once": str(died)}, task_id)
    result = running_mesh.result(task_id, timeout=90)  # after the 18 s visibility timeout
    assert died.exists(), "the first run's worker was killed after its write"
    assert result["outcome"] == "succeeded", result
    stored = _stored(running_mesh, f"counter#{key}")
    assert (stored["value"], stored["version"]) == ({"S": "1"}, {"N": "1"}), "the rerun did not write again"


def test_a_large_value_is_kept_in_the_state_bucket_under_the_actors_prefix(running_mesh: RunningMesh) -> None:
    key = f"large-{uuid.uuid4().hex[:6]}"
    for size in (400_000, 500_000):  # the second write replaces the first one's object
        task_id = f"large-{uuid.uuid4().hex[:8]}"
        running_mesh.send(["tally", "post"], {"key": key, "size": size}, task_id)
        result = running_mesh.result(task_id)
        assert result["outcome"] == "succeeded", running_mesh.errors()
        assert result["envelope"]["payload"]["read"] == size
    stored = _stored(running_mesh, f"tally#{key}")
    assert (stored["version"], "value" in stored) == ({"N": "2"}, False)
    stack = running_mesh.stack
    function = stack.client("lambda").get_function(FunctionName=f"asya-{stack.namespace}-tally")["Configuration"]
    bucket = function["Environment"]["Variables"]["ASYA_STATE_BUCKET"]
    ref = stored["ref"]["S"]
    assert ref.startswith("tally/")
    listed = stack.client("s3").list_objects_v2(Bucket=bucket, Prefix=ref.rsplit("/", 1)[0]).get("Contents", [])
    assert [(o["Key"], o["Size"]) for o in listed] == [(ref, 500_002)], "the item's object, the replaced one gone"


def _denied(call: Any, **arguments: Any) -> bool:
    try:
        call(**arguments)
    except ClientError as error:
        return error.response["ResponseMetadata"]["HTTPStatusCode"] == 403 and "AccessDenied" in str(error)
    return False


def test_an_actors_role_cannot_read_or_write_another_actors_state(running_mesh: RunningMesh) -> None:
    stack = running_mesh.stack
    function = stack.client("lambda").get_function(FunctionName=f"asya-{stack.namespace}-tally")["Configuration"]
    credentials = role_environment(stack.client, function["Role"], LAMBDA, "tally-snoop")
    dynamodb = local_client("dynamodb", stack.endpoint, credentials)
    own, counters = {"key": {"S": "tally#k"}}, {"key": {"S": "counter#k"}}

    dynamodb.put_item(TableName=TABLE, Item={**own, "version": {"N": "1"}, "value": {"S": "1"}})
    assert dynamodb.get_item(TableName=TABLE, Key=own)["Item"]["value"] == {"S": "1"}, "its own keys"
    assert _denied(dynamodb.get_item, TableName=TABLE, Key=counters)
    assert _denied(dynamodb.put_item, TableName=TABLE, Item={**counters, "version": {"N": "9"}})
    assert _denied(dynamodb.delete_item, TableName=TABLE, Key=own), "no deletes: a delete is a tombstone put"
    assert _denied(dynamodb.scan, TableName=TABLE), "no listing every actor's keys"

    s3, bucket = (
        local_client("s3", stack.endpoint, credentials),
        function["Environment"]["Variables"]["ASYA_STATE_BUCKET"],
    )
    s3.put_object(Bucket=bucket, Key="tally/k/large.json", Body=b"[1]")
    assert s3.get_object(Bucket=bucket, Key="tally/k/large.json")["Body"].read() == b"[1]", "its own large values"
    assert _denied(s3.put_object, Bucket=bucket, Key="counter/k/large.json", Body=b"[2]")
    assert _denied(s3.get_object, Bucket=bucket, Key="counter/k/large.json")
    assert _denied(s3.list_objects_v2, Bucket=bucket), "no listing"
    post = stack.client("lambda").get_function(FunctionName=f"asya-{stack.namespace}-post")["Configuration"]["Role"]
    stateless = local_client("dynamodb", stack.endpoint, role_environment(stack.client, post, LAMBDA, "post-snoop"))
    assert _denied(stateless.get_item, TableName=TABLE, Key=own), "an actor without state: nothing"
