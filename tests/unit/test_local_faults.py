"""The local stack's fault injection: what a function's AWS calls see, and how a spec is read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError

from asya_local.functions.faults import AwsFaults, FaultSpec, FaultSpecError, WorkerFaults, load_faults

NOWHERE = "http://127.0.0.1:9"  # nothing listens: every answer below comes from the fault hooks


def client_with(service: str, **aws: float) -> Any:
    client = boto3.client(
        service,  # type: ignore[call-overload]
        endpoint_url=NOWHERE,
        region_name="us-east-1",
        aws_access_key_id="k",
        aws_secret_access_key="s",
        config=Config(retries={"mode": "standard", "max_attempts": 1}),
    )
    WorkerFaults(FaultSpec(aws=AwsFaults(**aws)), "test").attach(client)
    return client


@pytest.mark.parametrize(
    ("service", "call", "code"),
    [
        ("sqs", lambda c: c.get_queue_url(QueueName="q"), "ThrottlingException"),
        (
            "dynamodb",
            lambda c: c.get_item(TableName="t", Key={"id": {"S": "x"}}),
            "ProvisionedThroughputExceededException",
        ),
        ("s3", lambda c: c.get_object(Bucket="b", Key="k"), "SlowDown"),
    ],
)
def test_throttled_calls_fail_with_the_services_own_code(service: str, call: Any, code: str) -> None:
    with pytest.raises(ClientError) as raised:
        call(client_with(service, throttle=1.0))
    assert raised.value.response["Error"]["Code"] == code


def test_server_errors_and_resets() -> None:
    with pytest.raises(ClientError) as raised:
        client_with("sqs", server_error=1.0).get_queue_url(QueueName="q")
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    with pytest.raises(ConnectionClosedError):
        client_with("sqs", reset=1.0).get_queue_url(QueueName="q")


def test_a_batch_whose_entries_all_fail_is_answered_without_a_request() -> None:
    sqs = client_with("sqs", partial_batch=1.0)
    response = sqs.send_message_batch(QueueUrl=f"{NOWHERE}/123/q", Entries=[{"Id": "e0", "MessageBody": "{}"}])
    assert [entry["Id"] for entry in response["Failed"]] == ["e0"]
    dynamodb = client_with("dynamodb", partial_batch=1.0)
    item = {"PutRequest": {"Item": {"id": {"S": "x"}}}}
    response = dynamodb.batch_write_item(RequestItems={"t": [item]})
    assert response["UnprocessedItems"] == {"t": [item]}


def test_the_same_seed_gives_a_worker_the_same_decisions() -> None:
    spec = FaultSpec(seed=7, duplicate_delivery_rate=0.5)
    batch = [{"MessageId": str(n)} for n in range(5)]

    def decisions(stream: str) -> list[Any]:
        faults = WorkerFaults(spec, stream)
        return [faults.released(batch) for _ in range(20)]

    assert decisions("7:f:1") == decisions("7:f:1")
    assert decisions("7:f:1") != decisions("7:f:2")


def test_a_spec_is_read_from_a_file_or_inline_and_a_wrong_one_names_the_file_and_field(tmp_path: Path) -> None:
    spec = load_faults("{seed: 3, aws: {throttle: 0.02}, restart_every: {stream: 30s}}")
    assert (spec.seed, spec.aws.throttle, spec.restart_every.stream) == (3, 0.02, 30.0)
    wrong = tmp_path / "faults.yaml"
    wrong.write_text("aws: {throttle: 0.6, reset: 0.6}\n")
    with pytest.raises(FaultSpecError, match=r"faults.yaml: aws: throttle \+ server_error"):
        load_faults(str(wrong))
    wrong.write_text("aws:\n  throttle: 0.1\n reset: 0.1\n")
    with pytest.raises(FaultSpecError, match=f'in "{wrong}", line 3'):
        load_faults(str(wrong))
