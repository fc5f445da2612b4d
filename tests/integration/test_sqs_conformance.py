"""The SQS behaviours the mesh relies on, against the local endpoint's process over HTTP: moto with
`apply_depth_fix()` applied (and IAM off: these tests are about SQS's behaviour).

Each test makes its own queues. Counts are (ApproximateNumberOfMessages, ...NotVisible, ...Delayed).
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.exceptions import ClientError

from asya.transport import OutgoingMessage, SqsTransport
from asya_local import admin_key

if TYPE_CHECKING:
    from types_boto3_sqs.client import SQSClient

pytestmark = pytest.mark.integration

MIB = 1_048_576


def _client(endpoint: str) -> SQSClient:
    return boto3.client(
        "sqs",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=admin_key.credentials(endpoint)["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=admin_key.credentials(endpoint)["AWS_SECRET_ACCESS_KEY"],
    )


@pytest.fixture(scope="module")
def sqs(patched_endpoint: str) -> SQSClient:
    return _client(patched_endpoint)


def _queue(sqs: SQSClient, **attributes: str) -> str:
    return sqs.create_queue(QueueName=f"conf-{uuid.uuid4().hex[:12]}", Attributes=attributes)["QueueUrl"]  # type: ignore[arg-type]


def _counts(sqs: SQSClient, url: str) -> tuple[int, int, int]:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return (
        int(attributes["ApproximateNumberOfMessages"]),
        int(attributes["ApproximateNumberOfMessagesNotVisible"]),
        int(attributes["ApproximateNumberOfMessagesDelayed"]),
    )


def _receive(sqs: SQSClient, url: str, **kwargs: Any) -> list[Any]:
    messages: list[Any] = sqs.receive_message(
        QueueUrl=url, MessageSystemAttributeNames=["ApproximateReceiveCount"], **kwargs
    ).get("Messages", [])
    return messages


def _error_code(error: pytest.ExceptionInfo[ClientError]) -> str:
    return str(error.value.response.get("Error", {}).get("Code"))


def test_send_receive_delete(sqs: SQSClient) -> None:
    url = _queue(sqs)
    sent = sqs.send_message(QueueUrl=url, MessageBody="hello")
    assert _counts(sqs, url) == (1, 0, 0)

    [message] = _receive(sqs, url, MaxNumberOfMessages=10)
    assert (message["Body"], message["MessageId"]) == ("hello", sent["MessageId"])
    assert message["MD5OfBody"] == sent["MD5OfMessageBody"]
    assert message["Attributes"]["ApproximateReceiveCount"] == "1"
    assert _counts(sqs, url) == (0, 1, 0)

    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    assert _counts(sqs, url) == (0, 0, 0)
    assert _receive(sqs, url) == []
    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])  # deleting again is harmless
    with pytest.raises(ClientError) as error:
        sqs.delete_message(QueueUrl=url, ReceiptHandle="not-a-receipt-handle")
    assert _error_code(error) == "ReceiptHandleIsInvalid"


def test_batch_send_and_delete(sqs: SQSClient) -> None:
    url = _queue(sqs)
    entries: Any = [{"Id": f"m{i}", "MessageBody": f"body-{i}"} for i in range(10)]
    response = sqs.send_message_batch(QueueUrl=url, Entries=entries)
    assert sorted(e["Id"] for e in response["Successful"]) == sorted(f"m{i}" for i in range(10))
    assert response.get("Failed", []) == []
    assert _counts(sqs, url) == (10, 0, 0)

    messages = _receive(sqs, url, MaxNumberOfMessages=10)
    assert sorted(m["Body"] for m in messages) == sorted(f"body-{i}" for i in range(10))
    assert _counts(sqs, url) == (0, 10, 0)
    deletes: Any = [{"Id": f"d{i}", "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages[:9])]
    deletes.append({"Id": "bad", "ReceiptHandle": "not-a-receipt-handle"})
    result = sqs.delete_message_batch(QueueUrl=url, Entries=deletes)
    assert len(result["Successful"]) == 9
    assert [(f["Id"], f["Code"]) for f in result["Failed"]] == [("bad", "ReceiptHandleIsInvalid")]
    assert _counts(sqs, url) == (0, 1, 0)


def test_message_size_limit(sqs: SQSClient) -> None:
    """1 MiB is the limit. moto (like SQS) rejects a whole batch whose bodies exceed it together: an oversized entry
    fails alone only when sent in a batch of its own, which is how the mesh's `SqsTransport` chunks."""
    url = _queue(sqs)
    sqs.send_message(QueueUrl=url, MessageBody="x" * MIB)
    with pytest.raises(ClientError) as error:
        sqs.send_message(QueueUrl=url, MessageBody="x" * (MIB + 1))
    assert _error_code(error) == "InvalidParameterValue"
    assert _counts(sqs, url) == (1, 0, 0)
    sqs.purge_queue(QueueUrl=url)

    bodies = {f"m{i}": f"small-{i}" for i in range(10)}
    bodies["m3"] = "x" * (MIB + 1)
    entries: Any = [{"Id": key, "MessageBody": body} for key, body in bodies.items()]
    with pytest.raises(ClientError) as error:
        sqs.send_message_batch(QueueUrl=url, Entries=entries)
    assert _error_code(error).endswith("BatchRequestTooLong")  # AWS.SimpleQueueService.BatchRequestTooLong
    assert _counts(sqs, url) == (0, 0, 0), "nothing of a rejected batch is enqueued"

    queue_name = url.rsplit("/", 1)[-1]
    failed = SqsTransport(sqs).send(queue_name, [OutgoingMessage(key, body) for key, body in bodies.items()])
    assert failed == {"m3"}
    received: list[str] = []
    while messages := _receive(sqs, url, MaxNumberOfMessages=10):
        received += [m["Body"] for m in messages]
    assert sorted(received) == sorted(body for key, body in bodies.items() if key != "m3")


def test_delay_seconds_per_message_and_queue_default(sqs: SQSClient) -> None:
    url = _queue(sqs, DelaySeconds="1")
    started = time.monotonic()
    sqs.send_message(QueueUrl=url, MessageBody="now", DelaySeconds=0)
    sqs.send_message(QueueUrl=url, MessageBody="queue-default")
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "a", "MessageBody": "explicit", "DelaySeconds": 2}])
    assert _counts(sqs, url) == (1, 0, 2)
    assert [m["Body"] for m in _receive(sqs, url, MaxNumberOfMessages=10, VisibilityTimeout=0)] == ["now"]

    time.sleep(max(0.0, started + 1.2 - time.monotonic()))
    assert _counts(sqs, url) == (2, 0, 1)
    assert sorted(m["Body"] for m in _receive(sqs, url, MaxNumberOfMessages=10, VisibilityTimeout=0)) == [
        "now",
        "queue-default",
    ]

    time.sleep(max(0.0, started + 2.2 - time.monotonic()))
    assert _counts(sqs, url) == (3, 0, 0)
    received = _receive(sqs, url, MaxNumberOfMessages=10, VisibilityTimeout=30)
    assert sorted(m["Body"] for m in received) == ["explicit", "now", "queue-default"]
    assert _counts(sqs, url) == (0, 3, 0)


def test_visibility_timeout_redelivers_with_receive_count(sqs: SQSClient) -> None:
    url = _queue(sqs, VisibilityTimeout="1")
    sqs.send_message(QueueUrl=url, MessageBody="work")
    [first] = _receive(sqs, url)
    assert first["Attributes"]["ApproximateReceiveCount"] == "1"
    assert _counts(sqs, url) == (0, 1, 0)
    assert _receive(sqs, url) == []

    time.sleep(1.1)
    assert _counts(sqs, url) == (1, 0, 0)
    [second] = _receive(sqs, url, VisibilityTimeout=30)
    assert second["MessageId"] == first["MessageId"]
    assert second["ReceiptHandle"] != first["ReceiptHandle"]
    assert second["Attributes"]["ApproximateReceiveCount"] == "2"
    assert _counts(sqs, url) == (0, 1, 0)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=second["ReceiptHandle"])
    assert _counts(sqs, url) == (0, 0, 0)


def test_change_message_visibility(sqs: SQSClient) -> None:
    url = _queue(sqs)
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(3)])
    messages = _receive(sqs, url, MaxNumberOfMessages=10, VisibilityTimeout=30)
    assert len(messages) == 3
    assert _counts(sqs, url) == (0, 3, 0)

    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=messages[0]["ReceiptHandle"], VisibilityTimeout=0)
    assert _counts(sqs, url) == (1, 2, 0)
    [again] = _receive(sqs, url, MaxNumberOfMessages=10, VisibilityTimeout=30)
    assert again["MessageId"] == messages[0]["MessageId"]
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"

    entries: Any = [
        {"Id": "one", "ReceiptHandle": messages[1]["ReceiptHandle"], "VisibilityTimeout": 0},
        {"Id": "two", "ReceiptHandle": messages[2]["ReceiptHandle"], "VisibilityTimeout": 60},
        {"Id": "bad", "ReceiptHandle": "not-a-receipt-handle", "VisibilityTimeout": 0},
    ]
    result = sqs.change_message_visibility_batch(QueueUrl=url, Entries=entries)
    assert sorted(s["Id"] for s in result["Successful"]) == ["one", "two"]
    assert [(f["Id"], f["Code"]) for f in result["Failed"]] == [("bad", "ReceiptHandleIsInvalid")]
    assert _counts(sqs, url) == (1, 2, 0)
    assert [m["Body"] for m in _receive(sqs, url, MaxNumberOfMessages=10)] == ["m1"]
    with pytest.raises(ClientError) as error:
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle="not-a-receipt-handle", VisibilityTimeout=0)
    assert _error_code(error) == "ReceiptHandleIsInvalid"


def test_redrive_to_dead_letter_queue(sqs: SQSClient) -> None:
    dlq = _queue(sqs)
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    policy = f'{{"deadLetterTargetArn": "{dlq_arn}", "maxReceiveCount": "2"}}'
    url = _queue(sqs, RedrivePolicy=policy)
    sent = sqs.send_message(QueueUrl=url, MessageBody="poison")
    sqs.send_message(QueueUrl=url, MessageBody="fine", DelaySeconds=1)

    [first] = _receive(sqs, url, VisibilityTimeout=0)  # stays visible
    assert first["Attributes"]["ApproximateReceiveCount"] == "1"
    [second] = _receive(sqs, url, VisibilityTimeout=1)
    assert (second["MessageId"], second["Attributes"]["ApproximateReceiveCount"]) == (sent["MessageId"], "2")
    assert _counts(sqs, url) == (0, 1, 1)
    assert _counts(sqs, dlq) == (0, 0, 0)

    time.sleep(1.1)  # visible again, and "fine" is due
    assert _counts(sqs, url) == (2, 0, 0)
    received = _receive(sqs, url, MaxNumberOfMessages=10, VisibilityTimeout=30)
    assert [m["Body"] for m in received] == ["fine"], "the third receive moves poison to the DLQ instead"
    assert _counts(sqs, url) == (0, 1, 0)
    assert _counts(sqs, dlq) == (1, 0, 0)
    [dead] = _receive(sqs, dlq)
    assert (dead["MessageId"], dead["Body"]) == (sent["MessageId"], "poison")
    sqs.delete_message(QueueUrl=dlq, ReceiptHandle=dead["ReceiptHandle"])
    assert _counts(sqs, dlq) == (0, 0, 0)


def test_approximate_counts_through_a_mix(sqs: SQSClient) -> None:
    url = _queue(sqs)
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(5)])
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=60)
    assert _counts(sqs, url) == (5, 0, 1)
    taken = _receive(sqs, url, MaxNumberOfMessages=2, VisibilityTimeout=60)
    assert len(taken) == 2
    assert _counts(sqs, url) == (3, 2, 1)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=taken[0]["ReceiptHandle"])
    assert _counts(sqs, url) == (3, 1, 1)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=taken[1]["ReceiptHandle"], VisibilityTimeout=0)
    assert _counts(sqs, url) == (4, 0, 1)
    sqs.purge_queue(QueueUrl=url)
    assert _counts(sqs, url) == (0, 0, 0)
    assert _receive(sqs, url) == []
    sqs.send_message(QueueUrl=url, MessageBody="after-purge")
    assert _counts(sqs, url) == (1, 0, 0)
    assert [m["Body"] for m in _receive(sqs, url)] == ["after-purge"]


def test_long_polling_returns_when_a_message_arrives(sqs: SQSClient, patched_endpoint: str) -> None:
    url = _queue(sqs)
    started = time.monotonic()
    assert _receive(sqs, url, WaitTimeSeconds=1) == []
    assert 0.9 <= time.monotonic() - started < 3

    sender = _client(patched_endpoint)
    thread = threading.Timer(0.5, lambda: sender.send_message(QueueUrl=url, MessageBody="arrived"))
    started = time.monotonic()
    thread.start()
    messages = _receive(sqs, url, WaitTimeSeconds=5)
    elapsed = time.monotonic() - started
    thread.join()
    assert [m["Body"] for m in messages] == ["arrived"]
    assert 0.4 <= elapsed < 3


def test_depth_ten_thousand_none_lost_none_duplicated(sqs: SQSClient) -> None:
    url = _queue(sqs)
    depth = 10_000
    started = time.monotonic()
    for start in range(0, depth, 10):
        entries: Any = [{"Id": str(i), "MessageBody": f"body-{i}"} for i in range(start, start + 10)]
        assert len(sqs.send_message_batch(QueueUrl=url, Entries=entries)["Successful"]) == 10
    assert _counts(sqs, url) == (depth, 0, 0)

    bodies: list[str] = []
    while messages := _receive(sqs, url, MaxNumberOfMessages=10, VisibilityTimeout=60):
        bodies += [m["Body"] for m in messages]
        deletes: Any = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
        assert len(sqs.delete_message_batch(QueueUrl=url, Entries=deletes)["Successful"]) == len(messages)
    elapsed = time.monotonic() - started

    assert len(bodies) == depth, "no message lost or received twice"
    assert set(bodies) == {f"body-{i}" for i in range(depth)}
    assert _counts(sqs, url) == (0, 0, 0)
    # a guard against the depth collapse (unpatched moto: ~13 messages/s at this depth, over 10 minutes),
    # not a speed measure: bench/moto_sqs_depth.py measures that; 45-50 s is usual on a busy 2-core machine
    assert elapsed < 150, f"10,000 messages through took {elapsed:.1f} s"
