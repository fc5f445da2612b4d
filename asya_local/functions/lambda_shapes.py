"""What Lambda hands a function (the SQS, DynamoDB stream and EventBridge schedule event shapes, a
context object with a running clock) and what its SQS event source does with the answer.

Used wherever this machine stands in for the Lambda service (tests, the in-process mesh, the local
stack), so every one of them drives the real handler with the same shapes and rules as AWS does.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from asya.consumer.records import sqs_event

REGION = "us-east-1"
ACCOUNT = "123456789012"


@dataclass
class LambdaContext:
    """The attributes of the Lambda context object that the sidecar and Powertools read."""

    function_name: str
    timeout_seconds: float = 900.0
    memory_limit_in_mb: int = 512
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    _started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._started + self.timeout_seconds - time.monotonic()) * 1000))


def queue_arn(queue: str) -> str:
    return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{queue}"


def sqs_record(queue: str, body: str, message_id: str | None = None, receive_count: int = 1) -> dict[str, Any]:
    """One record as the SQS event source mapping delivers it."""
    now_ms = str(int(time.time() * 1000))
    return {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": str(uuid.uuid4()),
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": now_ms,
            "SenderId": ACCOUNT,
            "ApproximateFirstReceiveTimestamp": now_ms,
        },
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn(queue),
        "awsRegion": REGION,
    }


def sqs_event_from_messages(queue: str, messages: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Turn `ReceiveMessage` results into the event Lambda would receive for them (message attributes
    included: the mesh's seal is one, `asya.seal`; receive them with `MessageAttributeNames=["All"]`)."""
    return sqs_event(queue_arn(queue), messages, sender=ACCOUNT)


class FunctionTimeoutError(RuntimeError):
    """The function returned after its invocation's time had run out."""


def invoke_with_batch(
    handler: Callable[[dict[str, Any], Any], Any],
    sqs: Any,
    queue_url: str,
    messages: list[dict[str, Any]],
    context: LambdaContext,
) -> frozenset[str]:
    """Invoke the function on one received batch, then delete every message its partial batch
    response does not list; returns the ids of those it lists, left for redelivery. If the function raises, nothing is
    deleted and the exception propagates: the batch comes back after the visibility timeout. So it
    does when the function returns after its timeout (its environment was stopped and resumed):
    Lambda would have ended the invocation, which deletes nothing."""
    queue = queue_url.rsplit("/", 1)[-1]
    response = handler(sqs_event_from_messages(queue, messages), context)
    if context.get_remaining_time_in_millis() <= 0:
        raise FunctionTimeoutError(f"returned after the function's {context.timeout_seconds:g} s timeout")
    failed = frozenset(item["itemIdentifier"] for item in response["batchItemFailures"])
    done = [m for m in messages if m["MessageId"] not in failed]
    for start in range(0, len(done), 10):
        chunk = done[start : start + 10]
        entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)]
        sqs.delete_message_batch(QueueUrl=queue_url, Entries=entries)
    return failed


def dynamodb_stream_event(stream_arn: str, records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Turn `GetRecords` results into the event Lambda's DynamoDB stream event source would deliver.

    boto3 decodes what the wire carries as JSON: the creation time becomes a datetime and binary
    attributes become bytes. Lambda passes them on as JSON instead (epoch seconds, base64 text)."""
    return {
        "Records": [
            {**record, "awsRegion": REGION, "dynamodb": _as_json(record["dynamodb"]), "eventSourceARN": stream_arn}
            for record in records
        ]
    }


def _as_json(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _as_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        return [_as_json(item) for item in value]
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, datetime):
        return int(value.timestamp())
    return value


def scheduled_event(rule_arn: str) -> dict[str, Any]:
    """The event an EventBridge schedule rule sends its targets."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT,
        "time": _iso(time.time()).split(".")[0] + "Z",
        "region": REGION,
        "resources": [rule_arn],
        "detail": {},
    }


def stream_failure_record(
    function_name: str, stream_arn: str, shard_id: str, records: Sequence[Mapping[str, Any]], attempts: int
) -> dict[str, Any]:
    """What Lambda sends a stream mapping's on-failure destination for records it gave up on: where
    they are in the stream (not the records themselves)."""
    created = [_as_json(record["dynamodb"]).get("ApproximateCreationDateTime", 0) for record in records]
    return {
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": LambdaContext(function_name).invoked_function_arn,
            "condition": "RetryAttemptsExhausted",
            "approximateInvokeCount": attempts,
        },
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "version": "1.0",
        "timestamp": _iso(time.time()),
        "DDBStreamBatchInfo": {
            "shardId": shard_id,
            "startSequenceNumber": records[0]["dynamodb"]["SequenceNumber"],
            "endSequenceNumber": records[-1]["dynamodb"]["SequenceNumber"],
            "approximateArrivalOfFirstRecord": _iso(created[0]),
            "approximateArrivalOfLastRecord": _iso(created[-1]),
            "batchSize": len(records),
            "streamArn": stream_arn,
        },
    }


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
